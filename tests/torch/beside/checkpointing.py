#!/usr/bin/env python3
"""checkpointing.py: C08's measurement with PyTorch: the peak memory and step
time of the same training workloads with and without activation
checkpointing, beside build/c08_checkpointing on the same shapes.

The models are the reference scripts' own Training classes, which the suite's
workloads equal to the byte in memory: tests/torch/mlp_reference.py's MLP
(Linear+ReLU, in = width = out = 1024, batch 8192, Adam, fp32) at depth
L = 2, 4, 6, 8, 12, 16 (--quick: 2, 8): plain, each Linear+ReLU pair under
torch.utils.checkpoint (use_reentrant=False), and checkpoint_sequential over
its 2L-1 modules in S = 2 and 4 segments (where S <= 2L-1); and
tests/torch/transformer_reference.py's seed 000 model,
nn.Transformer(d_model=256), Adam, fp32, batch 100, at sequence 64, 128, 256
(--quick: 64), plain and with every encoder and decoder layer checkpointed.
Per point one model, --warmup steps (at least 2: step 1 makes Adam's
state), then --repeats timed steps, each alone (CUDA events; the peak read
at the last), then one more under torch.profiler for the GPU's idle share.
Between points the model is dropped and the cache emptied. The Transformer
at sequence 64 (seed 000's, the verdict row's) is measured whatever
--budget-s is; then, while it lasts, the MLP at L=8, then the others.

Rows (variant pytorch:plain, pytorch:checkpoint, pytorch:segments=S, param
layers; pytorch:transformer plain and pytorch:transformer checkpoint, param
seq): step_time, peak_allocated, peak_reserved, and for the checkpointed
ones memory_saving (1 - peak_ckpt / peak_plain) and time_overhead
(t_ckpt / t_plain - 1, medians); gpu_idle_share. Summaries: per
checkpointed variant the savings and overheads beside the suite's, and
where PyTorch's peak allocated equals the suite's; the verdict row: the
Transformer's saving and overhead at sequence 64, the suite's and
PyTorch's, and the regime of PyTorch's steps there. The interface and the output: beside.py.
Standard library and torch only.
"""
import sys

import beside as b

CLAIM, KEY = "C08", "checkpointing"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
WIDTH, BATCH = 1024, 8192
DEPTHS, QUICK_DEPTHS = [2, 4, 6, 8, 12, 16], [2, 8]
SEGMENTS = [2, 4]
SEQS, QUICK_SEQS = [64, 128, 256], [64]
TFM_BATCH = 100
NAME = "beside/" + KEY
# The checkpointed variants, as the suite names them, and what the summary calls them.
CHECKPOINTED = [("checkpoint", "MLP per pair", "L"), ("segments=2", "MLP checkpoint_sequential S=2", "L"),
                ("segments=4", "MLP checkpoint_sequential S=4", "L"),
                ("transformer checkpoint", "Transformer per layer (nn.Transformer(d_model=256), batch 100)",
                 "seq")]


def plain_of(variant):
    return "transformer plain" if variant.startswith("transformer") else "plain"


def points(args):
    """[(variant, param, value)]: the suite's, in its order (else the lists')."""
    if args.suite:
        known = {"plain", "transformer plain"} | {v for v, _, _ in CHECKPOINTED}
        return [p for p in b.suite_points(args.suite, "peak_allocated") if p[0] in known]
    out = []
    for L in QUICK_DEPTHS if args.quick else DEPTHS:
        out += [("plain", "layers", L), ("checkpoint", "layers", L)]
        out += [("segments=%d" % S, "layers", L) for S in SEGMENTS if S <= 2 * L - 1]
    for s in QUICK_SEQS if args.quick else SEQS:
        out += [("transformer plain", "seq", s), ("transformer checkpoint", "seq", s)]
    return out


def training(torch, variant, value, dev):
    """(the record's key, a maker of the reference script's Training of this point)."""
    if variant.startswith("transformer"):
        ref = b.reference_module("transformer_reference")
        flags = ("--arch transformer --d-model 256 --seq %d --batch %d --optimizer adam --precision fp32 "
                 "--build host%s"
                 % (value, TFM_BATCH, " --checkpoint" if variant.endswith("checkpoint") else ""))
    else:
        ref = b.reference_module("mlp_reference")
        extra = {"plain": "", "checkpoint": " --checkpoint"}.get(variant)
        if extra is None:
            extra = " --checkpoint-segments %d" % int(variant.split("=")[1])
        flags = ("--layers %d --in %d --width %d --out %d --batch %d --optimizer adam --precision fp32 "
                 "--accum 1%s" % (value, WIDTH, WIDTH, WIDTH, BATCH, extra))
    cfg = ref.Cfg(flags, 1)
    return (ref.__name__, tuple(sorted(vars(cfg).items()))), lambda: ref.Training(torch, cfg, dev)


def is_first(variant, value):
    """Seed 000's sequence (the verdict row's): measured whatever the budget."""
    return variant.startswith("transformer") and int(value) == 64


def is_next(variant, value):
    """The MLP at L=8: measured next, while the budget lasts."""
    return not variant.startswith("transformer") and int(value) == 8


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, None, argv)
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    warm = max(args.warmup, 2)
    pts = points(args)
    got = {}     # (variant, value) -> (median step time, peak allocated, record)
    peaks = []   # (what, PyTorch's peak, the suite's)
    order = sorted(pts, key=lambda p: 0 if is_first(p[0], p[2]) else 1 if is_next(p[0], p[2]) else 2)
    for variant, param, value in order:
        value = int(value)
        what = "%s %s=%d" % (variant, param, value)
        if not args.budget.allows(first=is_first(variant, value)):
            out.skipped(variant, param, value, "peak_allocated", "bytes", what, args.budget.why())
            continue
        rec = None
        try:
            key, make = training(torch, variant, value, dev)
            rec = b.record(torch, key, make, warm, args.repeats, CLAIM,
                           profile=(variant, value) == ("transformer plain", 64))
        except Exception as e:  # one point's failure is its row; the others go on
            out.failed(torch, variant, param, value, "peak_allocated", "bytes", what, e)
        if rec is None:
            b.release(torch)
            continue
        times, peak, reserved = b.timed(rec), rec["peaks"][-1], rec["reserved"][-1]
        out.emit(variant, param, value, "step_time", "s", times, "ok",
                 b.shared_note(rec, "CUDA events around the step (reference Training.step)"))
        out.value(variant, param, value, "peak_allocated", "bytes", peak,
                  "torch.cuda.max_memory_allocated of the last measured step")
        out.value(variant, param, value, "peak_reserved", "bytes", reserved, "")
        out.idle(variant, param, value, rec)
        t = b.stats(times)["median"]
        got[(variant, value)] = (t, peak, rec)
        peaks.append((what, peak, b.suite_median(args.suite, variant, param, value, "peak_allocated")))
        b.log(NAME, "%s: step %.3f ms, peak %d bytes", what, t * 1e3, peak)
        base = got.get((plain_of(variant), value))
        if variant != plain_of(variant) and base:
            out.value(variant, param, value, "memory_saving", "ratio", 1.0 - peak / base[1],
                      "1 - peak_ckpt / peak_plain")
            out.value(variant, param, value, "time_overhead", "ratio", t / base[0] - 1.0,
                      "t_ckpt / t_plain - 1 (medians)")
        out.flush()

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    for variant, desc, short in CHECKPOINTED:
        xs = [int(v) for var, _, v in pts if var == variant and (variant, int(v)) in got
              and (plain_of(variant), int(v)) in got]
        if not xs:
            continue
        param = "seq" if short == "seq" else "layers"
        c = [got[(variant, x)] for x in xs]
        p = [got[(plain_of(variant), x)] for x in xs]
        sav = [1.0 - ci[1] / pi[1] for ci, pi in zip(c, p)]
        ovr = [ci[0] / pi[0] - 1.0 for ci, pi in zip(c, p)]
        s_sav = [b.suite_median(args.suite, variant, param, x, "memory_saving") for x in xs]
        s_ovr = [b.suite_median(args.suite, variant, param, x, "time_overhead") for x in xs]
        out.summary(head + "%s at %s = %s: %s; %s" % (
            desc, short, ", ".join(str(x) for x in xs),
            b.beside("memory saving", sav, s_sav, b.pct, have),
            b.beside("time overhead", ovr, s_ovr, b.signed_pct, have)))
        head = ""
    out.peaks(peaks)
    out.verdict(verdict_row(args, got, lambda c, p, rc, rp: b.compare_steps(
        torch, NAME, training(torch, c, 64, dev)[1], training(torch, p, 64, dev)[1], warm, rc, rp)))
    out.close(len(pts))
    return 0


def pct(x):
    return "%+.0f%%" % (100 * x)


def verdict_row(args, got, compare):
    """The Transformer's checkpointing at sequence 64: saving and overhead,
    the suite's and PyTorch's (compare(checkpointed, plain, their records):
    beside.compare_steps of the two), and the regime of PyTorch's steps."""
    c, p = got.get(("transformer checkpoint", 64)), got.get(("transformer plain", 64))
    if not (c and p):
        return None
    sav = 1.0 - c[1] / p[1]
    r, lo, hi, _, _, how = compare("transformer checkpoint", "transformer plain", c[2], p[2])
    ovr, lo, hi = (None if x is None else x - 1.0 for x in (r, lo, hi))
    s_sav = b.suite_median(args.suite, "transformer checkpoint", "seq", 64, "memory_saving")
    s_ovr = b.suite_median(args.suite, "transformer checkpoint", "seq", 64, "time_overhead")
    text = "Transformer per layer, seq 64: saving %s, time overhead %s" % (
        ("%.0f%% suite, %.0f%% PyTorch" % (100 * s_sav, 100 * sav)) if s_sav is not None else "%.0f%% PyTorch" % (100 * sav),
        ("%+.0f%% suite, %s PyTorch (%s)" % (100 * s_ovr, b.with_spread(ovr, lo, hi, pct), how))
        if s_ovr is not None else "%s PyTorch (%s)" % (b.with_spread(ovr, lo, hi, pct), how))
    clause = b.regime_clause(p[2].get("idle"), "PyTorch's plain step")
    if clause:
        text += "; " + clause
        if s_ovr is not None and b.differ(1 + s_ovr, 1 + ovr, 0.1) and b.launch_bound(p[2].get("idle")):
            text += ", so recomputing adds launches more than arithmetic"
    return text + "."


if __name__ == "__main__":
    sys.exit(main())
