#!/usr/bin/env python3
"""compile_fusion.py: C25's measurement with PyTorch: the peak memory and
step time of the same Transformer trainings eagerly and under torch.compile,
whose Inductor fuses the elementwise chains the suite's --fused models,
beside build/c25_compile_fusion on the same models.

The models are tests/torch/compile_configs.txt's, built and trained by
tests/torch/transformer_reference.py's Training (the suite's eager workload
equals them to the byte), as tests/torch/compile_reference.py does: seed
000's nn.Transformer(d_model=512, batch_first=True) on (B, 100, 512) under
fp16 autocast with GradScaler and Adam at B = 32 and (not with --quick) 128,
and an fp32 nn.TransformerEncoder (d_model 256, 8 heads, 3 layers, ff 1024)
on (16, 128, 256) with AdamW. Eager: the module itself; fused:
torch.compile(model) with its defaults (mode "default", backend inductor;
only the module: loss, backward, GradScaler and optimizer stay eager), a
fresh Dynamo state (torch._dynamo.reset()) per model. Per point, after
torch.manual_seed(0): steps 1-2, step 3's peak allocated (the suite's
steady step), then --warmup and --repeats timed steps, each alone (CUDA
events); a timed step in which Dynamo compiled (its graph counter moved) is
left out of the times and the note says so. Between points the model is
dropped and the cache emptied.

Rows (variant pytorch:<model>/eager and pytorch:<model>/fused, param
batch): peak_allocated (step 3), step_time; and for pytorch:<model>
peak_saving (1 - peak(compiled) / peak(eager)) and speedup (eager /
compiled, medians). Summaries: per model the saving and speed-up beside the
suite's (its fused chains against its eager), and where PyTorch's eager peak
equals the suite's. The interface and the output: beside.py. Standard
library and torch only.
"""
import importlib
import os
import sys

import beside as b

CLAIM, KEY = "C25", "compile_fusion"
REPEATS, WARMUP = 10, 2           # the experiment's defaults
STEADY_STEP = 3
# (model, batch, in --quick): the experiment's POINTS
POINTS = [("seed_t512_bf_adam_fp16", 32, True), ("enc_adamw_fp32", 16, True), ("seed_t512_bf_adam_fp16", 128, False)]
MODES = ("eager", "fused")
NAME = "beside/" + KEY


def points(args):
    """[(model, batch, [modes])], in the suite's order (else the lists')."""
    out = []
    if args.suite:
        for variant, param, value in b.suite_points(args.suite, "peak_allocated"):
            model, _, mode = variant.rpartition("/")
            if param != "batch" or mode not in MODES:
                continue
            key = (model, int(value))
            if not out or out[-1][:2] != key:
                out.append((model, int(value), []))
            out[-1][2].append(mode)
        return out
    return [(m, B, list(MODES)) for m, B, quick in POINTS if quick or not args.quick]


def with_batch(flags, B):
    """compile_configs.txt's flags with --batch B."""
    toks = flags.split()
    i = toks.index("--batch")
    toks[i + 1] = str(B)
    return " ".join(toks)


def two_lines(e):
    """e with its first two non-empty lines as its message: Dynamo's
    BackendCompilerFailed says which backend on the first and why on the
    second (compile_reference.py's one_line); its type's name kept."""
    lines = [t.strip() for t in str(e).splitlines() if t.strip()]
    if len(lines) < 2:
        return e
    return type(type(e).__name__, (Exception,), {})(" | ".join(lines[:2]))


def measure(torch, cr, flags, mode, args, dev):
    """(step 3's peak, timed step times, timed steps left out for compiling)."""
    ref = b.reference_module("transformer_reference")
    if mode == "fused":  # a fresh Dynamo: no cache or recompile count of an earlier model
        importlib.import_module("torch._dynamo").reset()
    torch.manual_seed(0)
    tr = ref.Training(torch, ref.Cfg(flags, 1), dev, (lambda m: torch.compile(m)) if mode == "fused" else None)
    first = b.steps(torch, tr, STEADY_STEP)
    times, compiled = [], 0
    for _ in range(args.warmup):
        b.steps(torch, tr, 1)
    for _ in range(args.repeats):
        before = cr.dynamo_counts()[0] if mode == "fused" else None
        t = b.steps(torch, tr, 1)[0][0]
        if before is not None and (cr.dynamo_counts()[0] or 0) > (before or 0):
            compiled += 1
        else:
            times.append(t)
    if not times:
        raise RuntimeError("Dynamo compiled in every timed step: no step time")
    return first[-1][1], times, compiled


def main():
    args = b.parse_args(__doc__, REPEATS, WARMUP)
    torch = b.open_torch(NAME, args.device)
    out = b.Rows(CLAIM, KEY)
    if args.csv_header is None:
        print(b.HEADER)
    dev = torch.device("cuda", args.device)
    cr = b.reference_module("compile_reference")
    configs = dict(cr.read_configs(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                "compile_configs.txt"), 1))
    pts = points(args)
    got = {}     # (model, B, mode) -> (median step time, peak allocated)
    peaks = []   # (what, PyTorch's eager peak, the suite's)
    npoints = 0
    for model, B, modes in pts:
        for mode in modes:
            npoints += 1
            var, what = "%s/%s" % (model, mode), "%s B=%d %s" % (model, B, mode)
            try:
                if model not in configs:
                    raise ValueError("no model %r in compile_configs.txt" % model)
                peak, times, compiled = measure(torch, cr, with_batch(configs[model], B), mode, args, dev)
            except Exception as e:  # one point's failure is its row; the others go on
                out.failed(torch, var, "batch", B, "peak_allocated", "bytes", what, two_lines(e))
                b.release(torch)
                continue
            b.release(torch)
            call = "torch.compile(model)" if mode == "fused" else "eager"
            out.value(var, "batch", B, "peak_allocated", "bytes", peak,
                      "%s: torch.cuda.max_memory_allocated of step 3" % call)
            out.emit(var, "batch", B, "step_time", "s", times, "ok",
                     "%s: CUDA events around the step, after the warm-up%s" % (
                         call, "; %d steps that compiled left out" % compiled if compiled else ""))
            t = b.stats(times)["median"]
            got[(model, B, mode)] = (t, peak)
            if mode == "eager":
                peaks.append((what, peak, b.suite_median(args.suite, var, "batch", B, "peak_allocated")))
            b.log(NAME, "%s: step %.3f ms, peak %d bytes", what, t * 1e3, peak)
            e, f = got.get((model, B, "eager")), got.get((model, B, "fused"))
            if mode == "fused" and e:
                out.value(model, "batch", B, "peak_saving", "fraction", 1.0 - f[1] / e[1],
                          "1 - peak(torch.compile) / peak(eager)")
                out.value(model, "batch", B, "speedup", "ratio", e[0] / f[0], "median step time eager / torch.compile")
            out.flush()

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    for model, B, _ in pts:
        e, f = got.get((model, B, "eager")), got.get((model, B, "fused"))
        if not (e and f):
            continue
        out.summary(head + "%s B=%d, torch.compile vs eager (suite: its fused chains vs eager): %s; %s" % (
            model, B,
            b.beside("peak saving", [1.0 - f[1] / e[1]], [b.suite_median(args.suite, model, "batch", B, "peak_saving")],
                     b.pct, have),
            b.beside("speed-up", [e[0] / f[0]], [b.suite_median(args.suite, model, "batch", B, "speedup")], b.ratio,
                     have)))
        head = ""
    line = b.peaks_line(peaks)
    if line:
        out.summary(line.replace("peak allocated:", "eager peak allocated:", 1))
    out.failures_summary(npoints)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
