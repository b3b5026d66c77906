#!/usr/bin/env python3
"""mixed_precision.py: C05's measurement with PyTorch: the step time and peak
memory of the same training workloads in fp32, fp16 (autocast + GradScaler)
and bf16 (autocast), beside build/c05_mixed_precision on the same shapes.

The models are the reference scripts' own Training classes, which the suite's
workloads equal to the byte in memory: tests/torch/mlp_reference.py's MLP
(Linear+ReLU, in = width = out = H) at weight_bound L=4, H=4096 (B = 32, 128,
512, 2048, 8192; --quick 32, 2048) and activation_bound L=8, H=1024 (B = 128,
512, 2048, 8192, 32768; --quick 512, 8192), and
tests/torch/transformer_reference.py's seed 000 model,
nn.Transformer(d_model=512, batch_first=True) on (B, 100, 512) (B = 8, 16,
32, 64, 128; --quick 32). Adam (--sgd: SGD), as the experiment. Per point
one model, --warmup steps (at least 2: the Transformer's peak settles from
step 3, as the suite's), then --repeats timed steps, each alone: CUDA
events around it, the peak read at the last; then one more under
torch.profiler for the GPU's idle share. Between points the model is
dropped and the cache emptied. Seed 000's point (the Transformer at B=32,
the verdict row's) is measured whatever --budget-s is; then each shape's
largest batch, then the others, while it lasts.

Rows (variant pytorch:<shape>_<precision>, param batch): step_time (the
measured steps), peak_allocated and peak_reserved (the last measured step),
and for fp16 and bf16 speedup (t_fp32 / t_mixed, medians) and
memory_saving (1 - peak_mixed / peak_fp32), gpu_idle_share. Summaries: per
shape and mixed precision the speed-ups and savings beside the suite's,
and where PyTorch's peak allocated equals the suite's; the verdict row: the
fp16 speed-up at seed 000's point, the suite's and PyTorch's, and the
regime of PyTorch's steps there. The interface and the output: beside.py.
Standard library and torch only.
"""
import sys

import beside as b

CLAIM, KEY = "C05", "mixed_precision"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
SEED_POINT = ("transformer", 32)   # seed 000's own: input (32, 100, 512)
PRECISIONS = ("fp32", "fp16", "bf16")
# name: (description, MLP layers and width or None for the Transformer, batches, quick batches)
SHAPES = {
    "weight_bound": ("MLP L=4, H=4096", (4, 4096), [32, 128, 512, 2048, 8192], [32, 2048]),
    "activation_bound": ("MLP L=8, H=1024", (8, 1024), [128, 512, 2048, 8192, 32768], [512, 8192]),
    "transformer": ("nn.Transformer(d_model=512, batch_first=True), seq 100", None,
                    [8, 16, 32, 64, 128], [32]),
}
NAME = "beside/" + KEY


def points(args):
    """[(shape, batch, [precisions])], in the suite's order (else the lists')."""
    out = []
    if args.suite:
        for variant, param, value in b.suite_points(args.suite, "peak_allocated"):
            shape, _, prec = variant.rpartition("_")
            if param != "batch" or shape not in SHAPES or prec not in PRECISIONS:
                continue
            key = (shape, int(value))
            if not out or out[-1][:2] != key:
                out.append((shape, int(value), []))
            out[-1][2].append(prec)
        return out
    for shape, (_, _, full, quick) in SHAPES.items():
        for B in quick if args.quick else full:
            out.append((shape, B, list(PRECISIONS)))
    return out


def training(torch, shape, B, prec, optimizer, dev):
    """(the record's key, a maker of the reference script's Training of this point)."""
    mlp = SHAPES[shape][1]
    if mlp:
        L, H = mlp
        ref = b.reference_module("mlp_reference")
        flags = ("--layers %d --in %d --width %d --out %d --batch %d --optimizer %s --precision %s "
                 "--accum 1" % (L, H, H, H, B, optimizer, prec))
    else:
        ref = b.reference_module("transformer_reference")
        flags = ("--arch transformer --d-model 512 --batch-first --seq 100 --batch %d --optimizer %s "
                 "--precision %s --build host" % (B, optimizer, prec))
    cfg = ref.Cfg(flags, 1)
    return (ref.__name__, tuple(sorted(vars(cfg).items()))), lambda: ref.Training(torch, cfg, dev)


def largest(pts):
    """Each shape's largest batch: measured after seed 000's point, before
    the others (the GPU-bound end of each sweep)."""
    top = {}
    for shape, B, _ in pts:
        top[shape] = max(top.get(shape, 0), B)
    return set(top.items())


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP,
                        lambda ap: ap.add_argument("--sgd", action="store_true", help="SGD instead of Adam"),
                        argv)
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    optimizer = "sgd" if args.sgd else "adam"
    pts = points(args)
    top = largest(pts)
    order = sorted(pts, key=lambda p: 0 if p[:2] == SEED_POINT else 1 if p[:2] in top else 2)
    got = {}     # (shape, B, prec) -> (median step time, peak allocated, record)
    peaks = []   # (what, PyTorch's peak, the suite's)
    npoints = 0
    warm = max(args.warmup, 2)
    for shape, B, precs in order:
        go = args.budget.allows(first=(shape, B) == SEED_POINT)
        for prec in precs:
            npoints += 1
            var, what = "%s_%s" % (shape, prec), "%s B=%d %s" % (shape, B, prec)
            if not go:
                out.skipped(var, "batch", B, "peak_allocated", "bytes", what, args.budget.why())
                continue
            rec = None
            try:
                key, make = training(torch, shape, B, prec, optimizer, dev)
                rec = b.record(torch, key, make, warm, args.repeats, CLAIM,
                               profile=(shape, B) == SEED_POINT and prec == "fp16")
            except Exception as e:  # one point's failure is its row; the others go on
                out.failed(torch, var, "batch", B, "peak_allocated", "bytes", what, e)
            if rec is None:
                b.release(torch)
                continue
            times, peak, reserved = b.timed(rec), rec["peaks"][-1], rec["reserved"][-1]
            out.emit(var, "batch", B, "step_time", "s", times, "ok",
                     b.shared_note(rec, "CUDA events around the step (reference Training.step)"))
            out.value(var, "batch", B, "peak_allocated", "bytes", peak,
                      "torch.cuda.max_memory_allocated of the last measured step")
            out.value(var, "batch", B, "peak_reserved", "bytes", reserved, "")
            out.idle(var, "batch", B, rec)
            t = b.stats(times)["median"]
            got[(shape, B, prec)] = (t, peak, rec)
            peaks.append((what, peak, b.suite_median(args.suite, var, "batch", B, "peak_allocated")))
            b.log(NAME, "%s: step %.3f ms, peak %d bytes", what, t * 1e3, peak)
            base = got.get((shape, B, "fp32"))
            if prec != "fp32" and base:
                out.value(var, "batch", B, "speedup", "ratio", base[0] / t, "t_fp32 / t_mixed (median step times)")
                out.value(var, "batch", B, "memory_saving", "ratio", 1.0 - peak / base[1],
                          "1 - peak_mixed / peak_fp32 (allocated)")
            out.flush()

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    for shape, (desc, _, _, _) in SHAPES.items():
        for prec in PRECISIONS[1:]:
            Bs = [B for s, B, precs in pts if s == shape and (shape, B, prec) in got and (shape, B, "fp32") in got]
            if not Bs:
                continue
            var = "%s_%s" % (shape, prec)
            spd = [got[(shape, B, "fp32")][0] / got[(shape, B, prec)][0] for B in Bs]
            sav = [1.0 - got[(shape, B, prec)][1] / got[(shape, B, "fp32")][1] for B in Bs]
            s_spd = [b.suite_median(args.suite, var, "batch", B, "speedup") for B in Bs]
            s_sav = [b.suite_median(args.suite, var, "batch", B, "memory_saving") for B in Bs]
            out.summary(head + "%s (%s) %s at B = %s: %s; %s" % (
                desc, shape, prec, ", ".join(str(B) for B in Bs),
                b.beside("speed-up t_fp32/t_mixed", spd, s_spd, b.ratio, have),
                b.beside("memory saving", sav, s_sav, b.pct, have)))
            head = ""
    out.peaks(peaks)
    shape, B = SEED_POINT
    f32, f16 = got.get((shape, B, "fp32")), got.get((shape, B, "fp16"))
    cmp = None
    if f32 and f16:  # the verdict's ratio, fp32 and fp16 steps in turn (beside.paired)
        cmp = b.compare_steps(torch, NAME, training(torch, shape, B, "fp32", optimizer, dev)[1],
                              training(torch, shape, B, "fp16", optimizer, dev)[1], warm, f32[2], f16[2])
    out.verdict(verdict_row(args, got, cmp))
    out.close(npoints)
    return 0


def verdict_row(args, got, cmp):
    """The fp16 speed-up at seed 000's point, the suite's and PyTorch's
    (cmp: beside.compare_steps of its fp32 and fp16 trainings), and the
    regime of PyTorch's fp16 step there."""
    shape, B = SEED_POINT
    f16 = got.get((shape, B, "fp16"))
    if not (cmp and f16):
        return None
    mine, lo, hi, t32, t16, how = cmp
    suite = b.suite_median(args.suite, "transformer_fp16", "batch", B, "speedup")
    text = "Seed 000's point (Transformer, B=32): fp16 speeds the step %s%s in PyTorch (%s -> %s, %s)" % (
        "%.2fx in the suite, " % suite if suite is not None else "", b.with_spread(mine, lo, hi, lambda x: "%.2fx" % x),
        b.seconds(t32), b.seconds(t16), how)
    idle = f16[2].get("idle")
    clause = b.regime_clause(idle, "PyTorch's fp16 step")
    if clause and (suite is None or b.differ(suite, mine)):
        text += "; %s, so less arithmetic saves little" % clause if b.launch_bound(idle) else "; " + clause
    elif clause:
        text += "; " + clause
    return text + "."


if __name__ == "__main__":
    sys.exit(main())
