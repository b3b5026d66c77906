/* c18_randn_bytes: C18. What torch.randn(1000, 1000).cuda() asks the CUDA
 * caching allocator for: the bytes requested, the rounded size, the block
 * handed out and the segment reserved, in float32 (torch's default dtype) and
 * float64, through the allocator model; on a GPU over the CUDA backend, with
 * the driver's used memory and the host tensor really copied in and back. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "alloc/alloc_probe.h"
#include "check.h"
#include "check_cuda.h"
#include "experiment.h"

static const mc_experiment EXP = {
    .claim = "C18",
    .key = "randn_bytes",
    .title = "Bytes requested and reserved for a 1000x1000 tensor moved to the GPU",
    .seed_claim = "torch.randn(1000, 1000).cuda() asks for about 8 MB.",
    .method = "A 1000x1000 tensor's bytes (float32, torch's default, and float64) through a fresh "
              "allocator model (CUDA backend on a GPU, host backend with --model-only): requested, "
              "rounded, block handed out (allocated), segment reserved; on a GPU the host tensor is "
              "copied into the block and back (checked), and the driver's used memory "
              "(cudaMemGetInfo drop) is read with the tensor live, over --repeats runs.",
    .verdict_rule = "float32 bytes requested / the claim's 8 MB (8,000,000 B): holds if in 0.8-1.2, "
                    "does-not-hold otherwise.",
    .flags = MC_EXP_MODEL_ONLY | MC_EXP_RULE_MEMORY, /* the rule reads memory only */
    .default_repeats = 3,
    .default_warmup = 0,
    .extra = NULL,
};

#define ROWS 1000
#define COLS 1000
/* The claim's number: "about 8 MB", read as decimal megabytes (8 MiB would
 * put float32 even further away). A claim constant, not a measurement. */
#define CLAIM_BYTES 8000000.0
#define CLAIM_LO 0.8
#define CLAIM_HI 1.2

typedef struct {
    const char *name;
    uint64_t elem;  /* bytes per element */
} dtype;

static const dtype DT[] = {{"float32", 4}, {"float64", 8}};
#define NDT ((int)(sizeof DT / sizeof *DT))

typedef struct {
    uint64_t requested, rounded, block, allocated, reserved;
    int64_t segments, driver_used;
    bool copy_ok, oom;
} outcome;

/* A deterministic stand-in for randn's values (the bytes matter, not the
 * distribution): element i of the tensor as raw bytes. */
static void fill_host(unsigned char *h, uint64_t bytes)
{
    uint32_t x = 2463534242u;
    for (uint64_t i = 0; i < bytes; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        h[i] = (unsigned char)x;
    }
}

static outcome run_dtype(mc_run *run, const dtype *d, const unsigned char *host, unsigned char *back)
{
    outcome o = {.requested = (uint64_t)ROWS * COLS * d->elem, .copy_ok = true};
    o.rounded = ca_round_size(o.requested);
    mc_probe p;
    mc_probe_open(&p, run->on_gpu, NULL);
    uint64_t addr = 0;
    if (ca_malloc(p.a, o.requested, &addr) != CA_OK) {
        o.oom = true;
        mc_probe_close(&p);
        return o;
    }
    if (p.on_gpu) {  /* .cuda(): the host tensor's bytes into the block, and back to check */
        void *dev = (void *)(uintptr_t)addr;
        CHECK_CUDA(cudaMemcpy(dev, host, o.requested, cudaMemcpyHostToDevice));
        memset(back, 0, o.requested);
        CHECK_CUDA(cudaMemcpy(back, dev, o.requested, cudaMemcpyDeviceToHost));
        o.copy_ok = memcmp(host, back, o.requested) == 0;
    }
    mc_probe_snap s = mc_probe_snapshot(&p);
    o.block = ca_block_size(p.a, addr);
    o.allocated = s.allocated;
    o.reserved = s.reserved;
    o.segments = s.segments;
    o.driver_used = s.driver_used;
    const char *broken = mc_probe_check(&p);
    if (broken) mc_verify_failed(run, d->name, "%s", broken);
    CHECK(ca_free(p.a, addr) == 0, "free of the %s tensor", d->name);
    mc_probe_close(&p);
    return o;
}

int main(int argc, char **argv)
{
    mc_run run;
    mc_run_begin(&run, &EXP, argc, argv);
    int R = run.on_gpu && !run.opt.quick ? run.opt.repeats : 1;
    uint64_t max_bytes = (uint64_t)ROWS * COLS * 8;
    unsigned char *host = mc_xmalloc(max_bytes), *back = mc_xmalloc(max_bytes);
    fill_host(host, max_bytes);
    for (int w = 0; w < run.opt.warmup && run.on_gpu; w++)
        for (int i = 0; i < NDT; i++) run_dtype(&run, &DT[i], host, back);

    outcome first[NDT];
    double *drv = mc_xmalloc((size_t)R * sizeof *drv);
    bool oom = false;
    for (int i = 0; i < NDT; i++) {
        const char *v = DT[i].name;
        for (int r = 0; r < R; r++) {
            outcome o = run_dtype(&run, &DT[i], host, back);
            if (r == 0) first[i] = o;
            drv[r] = (double)o.driver_used;
            if (!o.copy_ok)
                mc_verify_failed(&run, v, "the %llu B copied into the block did not read back",
                                 (unsigned long long)o.requested);
            if (o.reserved != first[i].reserved || o.allocated != first[i].allocated)
                mc_verify_failed(&run, v, "run %d gave other model figures than run 1", r + 1);
        }
        const outcome *o = &first[i];
        if (o->oom) {
            oom = true;
            mc_emit(&run, v, "", 0, "requested_bytes", "bytes", mc_stats_one(NAN), "oom",
                    "the allocator could not get a segment");
            continue;
        }
        mc_emit_value(&run, v, "", 0, "requested_bytes", "bytes", (double)o->requested,
                      "1000 x 1000 elements");
        mc_emit_value(&run, v, "", 0, "rounded_bytes", "bytes", (double)o->rounded, "round_size");
        mc_emit_value(&run, v, "", 0, "block_bytes", "bytes", (double)o->block,
                      "the block handed out");
        mc_emit_value(&run, v, "", 0, "allocated_bytes", "bytes", (double)o->allocated,
                      "memory_allocated()");
        mc_emit_value(&run, v, "", 0, "reserved_bytes", "bytes", (double)o->reserved,
                      "memory_reserved()");
        mc_emit_value(&run, v, "", 0, "segments", "count", (double)o->segments, "");
        if (run.on_gpu)
            mc_emit(&run, v, "", 0, "driver_used_bytes", "bytes", mc_stats_of(drv, (size_t)R), "ok",
                    "cudaMemGetInfo free drop with the tensor live");
        mc_emit_finding(&run,
            "%s: 1000 x 1000 x %llu B requests %llu B = %.2f MiB (%.2f MB), rounded to %llu B; it is "
            "handed a %llu B block from a %llu B (%.0f MiB) segment: memory_allocated %llu B, "
            "memory_reserved %llu B.",
            v, (unsigned long long)DT[i].elem, (unsigned long long)o->requested,
            MC_MIB(o->requested), (double)o->requested / 1e6, (unsigned long long)o->rounded,
            (unsigned long long)o->block, (unsigned long long)o->reserved, MC_MIB(o->reserved),
            (unsigned long long)o->allocated, (unsigned long long)o->reserved);
        if (run.on_gpu)
            mc_emit_finding(&run, "%s, driver: used memory rose %.0f B with the tensor live against "
                            "the model's reserved %llu B (difference %.0f B; median of %d).", v,
                            mc_stats_of(drv, (size_t)R).median, (unsigned long long)o->reserved,
                            mc_stats_of(drv, (size_t)R).median - (double)o->reserved, R);
    }
    mc_emit_value(&run, "claim", "", 0, "requested_bytes", "bytes", CLAIM_BYTES,
                  "the seed's 'about 8 MB' as 8,000,000 B");

    if (oom) {
        mc_emit_verdict(&run, MC_INCONCLUSIVE, "the allocator ran out of memory");
    } else {
        double r32 = (double)first[0].requested / CLAIM_BYTES;
        double r64 = (double)first[1].requested / CLAIM_BYTES;
        bool f64_fits = r64 >= CLAIM_LO && r64 <= CLAIM_HI;
        mc_emit_finding(&run, "The claim's 8 MB %s the float64 figure: float64 requests %llu B "
                        "(%.2f x the claim), float32 %llu B (%.2f x). What the GPU holds is the "
                        "segment: %llu B (%.0f MiB) for float32, %.2f x its bytes; %llu B (%.0f MiB) "
                        "for float64.", f64_fits ? "matches" : "does not match",
                        (unsigned long long)first[1].requested, r64,
                        (unsigned long long)first[0].requested, r32,
                        (unsigned long long)first[0].reserved, MC_MIB(first[0].reserved),
                        (double)first[0].reserved / (double)first[0].requested,
                        (unsigned long long)first[1].reserved, MC_MIB(first[1].reserved));
        mc_verdict v = r32 >= CLAIM_LO && r32 <= CLAIM_HI ? MC_HOLDS : MC_DOES_NOT_HOLD;
        mc_emit_verdict(&run, v,
            "float32 (torch's default) requests %llu B = %.2f x the claimed 8,000,000 B (rule: "
            "%.1f-%.1f); float64 would request %llu B (%.2f x); reserved: %llu B (float32), %llu B "
            "(float64).",
            (unsigned long long)first[0].requested, r32, CLAIM_LO, CLAIM_HI,
            (unsigned long long)first[1].requested, r64, (unsigned long long)first[0].reserved,
            (unsigned long long)first[1].reserved);
    }
    free(drv);
    free(host);
    free(back);
    return mc_run_end(&run);
}
