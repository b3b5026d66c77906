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
on (16, 128, 256) with AdamW. Eager: the module itself (the same training
as C05's Transformer in fp16 at the same batch: measured once in a run);
fused: torch.compile of each encoder and decoder layer, PyTorch's regional
compilation (its recipe for a stack of the same block: the layer is
compiled once and its code reused by every layer of that kind; whole-model
compilation, compile_reference.py's, takes minutes cold), with
torch.compile's defaults (mode "default", backend inductor; the final
norms, loss, backward, GradScaler and optimizer stay eager), a fresh Dynamo
state (torch._dynamo.reset()) per model. Per point, after
torch.manual_seed(0): --warmup steps (at least 2; Dynamo compiles in step
1, outside the timed steps), then --repeats timed steps, each alone (CUDA
events), the first of them step 3, whose peak allocated is the suite's
steady step's; a timed step in which Dynamo compiled (its graph counter
moved) is left out of the times and the note says so; then one more step
under torch.profiler for the GPU's idle share. Between points the model is
dropped and the cache emptied. Seed 000's point (B=32) is measured first;
each other point, eager and compiled, only where --budget-s leaves the time
the last compile took (compiling is most of this script's time). Inductor's
compile processes are ended at the end (nothing is timed beside them where
another counterpart runs after this one).

Rows (variant pytorch:<model>/eager and pytorch:<model>/fused, param
batch): peak_allocated (step 3), step_time; and for pytorch:<model>
peak_saving (1 - peak(compiled) / peak(eager)) and speedup (eager /
compiled, medians), gpu_idle_share. Summaries: per model the saving and
speed-up beside the suite's (its fused chains against its eager), and where
PyTorch's eager peak equals the suite's; the verdict row: at seed 000's
point, the speed-up of the suite's fused chains and of torch.compile, and
the regime of PyTorch's eager step. The interface and the output: beside.py. Standard
library and torch only.
"""
import importlib
import os
import sys

import beside as b

CLAIM, KEY = "C25", "compile_fusion"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
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


def regional(torch):
    """compile_model for Training: torch.compile of each encoder and decoder
    layer, in place (nn.ModuleList keeps the parameters' order); the model
    itself is called as it is."""
    def compile_layers(model):
        for stack in (getattr(model, "encoder", None), getattr(model, "decoder", None), model):
            layers = getattr(stack, "layers", None)
            if layers is None or stack is model and getattr(model, "encoder", None) is not None:
                continue
            for i in range(len(layers)):
                layers[i] = torch.compile(layers[i])
        return model
    return compile_layers


def measure(torch, cr, flags, mode, args, dev, profile=False):
    """(step 3's peak, timed step times, timed steps left out for compiling,
    record); the eager record with the idle share where profile (the
    verdict row's eager step)."""
    ref = b.reference_module("transformer_reference")
    cfg = ref.Cfg(flags, 1)
    warm = max(args.warmup, STEADY_STEP - 1)
    if mode == "eager":
        rec = b.record(torch, (ref.__name__, tuple(sorted(vars(cfg).items()))),
                       lambda: ref.Training(torch, cfg, dev), warm, args.repeats, CLAIM, profile=profile)
        return rec["peaks"][STEADY_STEP - 1], b.timed(rec), 0, rec
    importlib.import_module("torch._dynamo").reset()  # a fresh Dynamo: no cache or recompile count of an earlier model
    torch.manual_seed(0)
    counts = []  # per step: whether Dynamo compiled in it
    rec = b.record(torch, None, lambda: Counting(ref.Training(torch, cfg, dev, regional(torch)), cr, counts), warm,
                   args.repeats, CLAIM, profile=False)
    timed_steps = list(enumerate(rec["times"]))[warm:]
    compiled = sum(1 for i, _ in timed_steps if i < len(counts) and counts[i])
    times = [t for i, t in timed_steps if not (i < len(counts) and counts[i])]
    if not times:
        raise RuntimeError("Dynamo compiled in every timed step: no step time")
    return rec["peaks"][STEADY_STEP - 1], times, compiled, rec


class Counting:
    """A Training whose step() records whether Dynamo compiled in it."""

    def __init__(self, tr, cr, counts):
        self.tr, self.cr, self.counts, self.cfg = tr, cr, counts, tr.cfg

    def step(self, loss_host):
        before = self.cr.dynamo_counts()[0] or 0
        self.tr.step(loss_host)
        self.counts.append((self.cr.dynamo_counts()[0] or 0) > before)


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, None, argv)
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    cr = b.reference_module("compile_reference")
    configs = dict(cr.read_configs(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                "compile_configs.txt"), 1))
    pts = points(args)
    seed = (POINTS[0][0], POINTS[0][1])
    pts = [p for p in pts if p[:2] == seed] + [p for p in pts if p[:2] != seed]
    got = {}     # (model, B, mode) -> (median step time, peak allocated, record)
    peaks = []   # (what, PyTorch's eager peak, the suite's)
    npoints = 0
    compile_s = 0.0  # the last compiled point's wall time: what another would take
    for model, B, modes in pts:
        # A point whose compile would pass the budget is skipped whole: its
        # eager half alone is not the comparison.
        go = "fused" not in modes or args.budget.allows(first=(model, B) == seed, cost_s=compile_s)
        for mode in modes:
            npoints += 1
            var, what = "%s/%s" % (model, mode), "%s B=%d %s" % (model, B, mode)
            if not go:
                out.skipped(var, "batch", B, "peak_allocated", "bytes", what,
                            "not measured: one more torch.compile (the last took %.0f s) would pass run-all's time "
                            "budget for this counterpart (%.0f s, --budget-s); by hand it is measured"
                            % (compile_s, args.budget.seconds))
                continue
            res = None
            t0 = b.time.monotonic()
            try:
                if model not in configs:
                    raise ValueError("no model %r in compile_configs.txt" % model)
                res = measure(torch, cr, with_batch(configs[model], B), mode, args, dev,
                              profile=(model, B) == seed)
            except Exception as e:  # one point's failure is its row; the others go on
                out.failed(torch, var, "batch", B, "peak_allocated", "bytes", what, two_lines(e))
            if mode == "fused":
                compile_s = b.time.monotonic() - t0
            if res is None:
                b.release(torch)
                continue
            peak, times, compiled, rec = res
            call = "torch.compile of each layer" if mode == "fused" else "eager"
            out.value(var, "batch", B, "peak_allocated", "bytes", peak,
                      "%s: torch.cuda.max_memory_allocated of step 3" % call)
            out.emit(var, "batch", B, "step_time", "s", times, "ok",
                     b.shared_note(rec, "%s: CUDA events around the step, after the warm-up%s" % (
                         call, "; %d steps that compiled left out" % compiled if compiled else "")))
            out.idle(var, "batch", B, rec)
            t = b.stats(times)["median"]
            got[(model, B, mode)] = (t, peak, rec)
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
        out.summary(head + "%s B=%d, torch.compile of each layer vs eager (suite: its fused chains vs eager): %s; "
                    "%s" % (model, B,
                            b.beside("peak saving", [1.0 - f[1] / e[1]],
                                     [b.suite_median(args.suite, model, "batch", B, "peak_saving")], b.pct, have),
                            b.beside("speed-up", [e[0] / f[0]],
                                     [b.suite_median(args.suite, model, "batch", B, "speedup")], b.ratio, have)))
        head = ""
    out.peaks(peaks, "eager peak allocated")
    e, f = got.get(seed + ("eager",)), got.get(seed + ("fused",))
    if e and f:
        suite = b.suite_median(args.suite, seed[0], "batch", seed[1], "speedup")
        # the verdict's ratio, eager and compiled steps in turn (beside.paired;
        # the compiled model's second build reuses what Dynamo compiled)
        ref = b.reference_module("transformer_reference")
        cfg = ref.Cfg(with_batch(configs[seed[0]], seed[1]), 1)
        mine, lo, hi, _, _, how = b.compare_steps(
            torch, NAME, lambda: ref.Training(torch, cfg, dev), lambda: ref.Training(torch, cfg, dev, regional(torch)),
            max(args.warmup, STEADY_STEP - 1), e[2], f[2])
        text = "Seed 000's Transformer (fp16, B=%d): fusing speeds the step %s%s with torch.compile in PyTorch (%s)" % (
            seed[1], "%.2fx with the suite's fused chains, " % suite if suite is not None else "",
            b.with_spread(mine, lo, hi, lambda x: "%.2fx" % x), how)
        clause = b.regime_clause(e[2].get("idle"), "PyTorch's eager step")
        if clause:  # fewer kernels to launch help a launch-bound step more than the suite's fewer bytes
            more = suite is not None and lo is not None and lo > suite and b.differ(suite, mine, 0.1)
            text += "; " + clause + (", so fewer launches gain more than fewer bytes"
                                     if more and b.launch_bound(e[2].get("idle")) else "")
        out.verdict(text + ".")
    out.close(npoints)
    # Inductor's pool of compile processes stays, idle: run_many.py runs this
    # counterpart last, so nothing is timed beside it, and ends without the
    # pool's 4 s shutdown (run_many.exit_now).
    return 0


if __name__ == "__main__":
    sys.exit(main())
