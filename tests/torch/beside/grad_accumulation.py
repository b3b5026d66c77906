#!/usr/bin/env python3
"""grad_accumulation.py: C07's measurement with PyTorch: the peak memory and
step time of one training step of batch B taken in one go against k
micro-steps of B/k (gradient accumulation), beside build/c07_grad_accumulation
on the same shapes.

The models are the reference scripts' own Training classes, which the suite's
workloads equal to the byte in memory, each with --accum k (K micro-steps of
fresh inputs, forward, loss / K, backward; then the optimizer and
zero_grad(set_to_none=True)): tests/torch/mlp_reference.py's MLP
(Linear+ReLU, L=4, in = width = out = 1024, Adam, fp32) at B = 64, 1024,
16384 (--quick: 64, 4096) and k = 1, 2, 4, 8, 16 (--quick: 1, 4), and once
at B = 1, k = 1 (the floor); tests/torch/transformer_reference.py's seed 000
model, nn.Transformer(d_model=256) (batch_first False: (seq, batch, 256)),
Adam, fp32, at sequence 64 (and, full run, 256) x batch 100 with k = 1, 2, 4
(--quick: 1, 4) micro-steps of 100/k sequences. Per point one model,
--warmup steps (at least 2: step 1 makes Adam's state, the Transformer's
peak settles from step 3, as the suite's), then --repeats timed steps,
each alone (CUDA events; the peak read at the last), then one more under
torch.profiler for the GPU's idle share. Between points the model is
dropped and the cache emptied. The Transformer at sequence 64 (the
verdict row's) is measured whatever --budget-s is; then, while it lasts,
the MLP's typical batch (1024), the other points, and the longer sequence
(256: 0.12-0.15 s a step, not in the verdict) last.

And, where the suite ran it (a full run), seed 000's program as written
(large_batch() then gradient_accumulation(): tests/torch/seed_programs.py
--only c07, a process of its own), the peak each function returns,
whatever --budget-s is (REPORT.md's table sets it beside the seed's).

Rows (the suite's variants: B=<batch>, transformer seq=<s> B=100; param
accum_steps): step_time (the measured steps), peak_allocated and
peak_reserved (the last measured step), ratio_to_k1 (peak_k / peak_1),
gpu_idle_share, and B=1's floor; "seed 000 program: <function>()" (no
param): seed_program (what the function returns) and allocated_after. Summaries: per batch or sequence the ratios and step times
beside the suite's, and where PyTorch's peak allocated equals the suite's;
the verdict row: peak_4/peak_1 of the Transformer at sequence 64, the
suite's and PyTorch's, and what k micro-steps cost PyTorch in time there. The
interface and the output: beside.py. Standard library and torch only.
"""
import re
import sys

import beside as b

CLAIM, KEY = "C07", "grad_accumulation"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
TYPICAL_B = 1024                # the MLP's typical batch (the verdict's)
LAYERS, WIDTH = 4, 1024
BATCHES, QUICK_BATCHES = [64, 1024, 16384], [64, 4096]
KS, QUICK_KS = [1, 2, 4, 8, 16], [1, 4]
TFM_BATCH = 100
TFM_SEQS, QUICK_TFM_SEQS = [64, 256], [64]
TFM_KS, QUICK_TFM_KS = [1, 2, 4], [1, 4]
NAME = "beside/" + KEY
SEED_FUNCS = ("large_batch", "gradient_accumulation")  # seed 000's C07 program


def shape_of(variant, k):
    """(model, seq or None, batch) of the suite's variant: "mlp" at B=<batch>,
    "transformer" at (seq, batch); None for a variant it does not know."""
    m = re.match(r"^B=(\d+)$", variant)
    if m:
        return "mlp", None, int(m.group(1))
    m = re.match(r"^transformer seq=(\d+) B=(\d+)$", variant)
    if m:
        return "transformer", int(m.group(1)), int(m.group(2))
    return None


def base_of(variant):
    """The variant whose k = 1 peak a point's ratio is over: its own."""
    return variant


def points(args):
    """(floor wanted, [(variant, k)]): the suite's, in its order (else the lists')."""
    if args.suite:
        floor = any(r["metric"] == "floor" for r in args.suite)
        pts = [(v, int(k)) for v, param, k in b.suite_points(args.suite, "peak_allocated")
               if param == "accum_steps" and shape_of(v, k)]
        return floor, pts
    pts = [("B=%d" % B, k) for B in (QUICK_BATCHES if args.quick else BATCHES)
           for k in (QUICK_KS if args.quick else KS)]
    pts += [("transformer seq=%d B=%d" % (s, TFM_BATCH), k) for s in (QUICK_TFM_SEQS if args.quick else TFM_SEQS)
            for k in (QUICK_TFM_KS if args.quick else TFM_KS)]
    return True, pts


def training(torch, model, seq, batch, k, dev):
    """(the record's key, a maker of the reference script's Training of this point)."""
    if model == "mlp":
        ref = b.reference_module("mlp_reference")
        flags = ("--layers %d --in %d --width %d --out %d --batch %d --optimizer adam --precision fp32 "
                 "--accum %d" % (LAYERS, WIDTH, WIDTH, WIDTH, batch, k))
    else:
        ref = b.reference_module("transformer_reference")
        flags = ("--arch transformer --d-model 256 --seq %d --batch %d --accum %d --optimizer adam "
                 "--precision fp32 --build host" % (seq, batch, k))
    cfg = ref.Cfg(flags, 1)
    return (ref.__name__, tuple(sorted(vars(cfg).items()))), lambda: ref.Training(torch, cfg, dev)


def rank(variant):
    """0: measured whatever the budget (the verdict row's); 1: then (the
    MLP's typical batch, the experiment's rule's other point); 2: then;
    3: last (the slowest)."""
    if variant == "transformer seq=64 B=%d" % TFM_BATCH:
        return 0
    if variant == "B=%d" % TYPICAL_B:
        return 1
    return 3 if variant.startswith("transformer seq=") else 2


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, None, argv)
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    floor, pts = points(args)
    got = {}     # (variant, k) -> (median step time, peak allocated, record)
    peaks = []   # (what, PyTorch's peak, the suite's)
    npoints = len(pts) + floor
    warm = max(args.warmup, 2)
    if floor:
        rec = None
        try:
            key, make = training(torch, "mlp", None, 1, 1, dev)
            rec = b.record(torch, key, make, warm, args.repeats, CLAIM, profile=False)
        except Exception as e:  # one point's failure is its row; the others go on
            out.failed(torch, "B=1", "", 0, "floor", "bytes", "floor B=1", e)
        b.release(torch)
        if rec:
            out.value("B=1", "", 0, "floor", "bytes", rec["peaks"][-1],
                      "peak allocated of a step at batch 1 (torch.cuda.max_memory_allocated)")
            out.flush()
    order = sorted(pts, key=lambda p: rank(p[0]))  # stable: the suite's order within a rank
    # Profiled (the idle share): the verdict row's k-step, and its k=1, the
    # training C08's and C23's regimes read (one record, shared by key).
    regime_var = "transformer seq=64 B=%d" % TFM_BATCH
    regime_ks = {1, max([k for v, k in pts if v == regime_var] or [1])}
    for variant, k in order:
        model, seq, batch = shape_of(variant, k)
        what = "%s k=%d" % (variant, k)
        if not args.budget.allows(first=rank(variant) == 0):
            out.skipped(variant, "accum_steps", k, "peak_allocated", "bytes", what, args.budget.why())
            continue
        rec = None
        try:
            key, make = training(torch, model, seq, batch, k, dev)
            rec = b.record(torch, key, make, warm, args.repeats, CLAIM,
                           profile=variant == regime_var and k in regime_ks)
        except Exception as e:  # one point's failure is its row; the others go on
            out.failed(torch, variant, "accum_steps", k, "peak_allocated", "bytes", what, e)
        if rec is None:
            b.release(torch)
            continue
        times, peak, reserved = b.timed(rec), rec["peaks"][-1], rec["reserved"][-1]
        out.emit(variant, "accum_steps", k, "step_time", "s", times, "ok",
                 b.shared_note(rec, "CUDA events around the step (reference Training.step, --accum %d)" % k))
        out.value(variant, "accum_steps", k, "peak_allocated", "bytes", peak,
                  "torch.cuda.max_memory_allocated of the last measured step")
        out.value(variant, "accum_steps", k, "peak_reserved", "bytes", reserved, "")
        out.idle(variant, "accum_steps", k, rec)
        t = b.stats(times)["median"]
        got[(variant, k)] = (t, peak, rec)
        peaks.append((what, peak, b.suite_median(args.suite, variant, "accum_steps", k, "peak_allocated")))
        b.log(NAME, "%s: step %.3f ms, peak %d bytes", what, t * 1e3, peak)
        base = got.get((base_of(variant), 1))
        if base:
            out.value(variant, "accum_steps", k, "ratio_to_k1", "ratio", peak / base[1],
                      "peak_k / peak_1")
        out.flush()

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    for variant in dict.fromkeys(v for v, _ in pts):
        ks = [k for v, k in pts if v == variant and (v, k) in got]
        base = got.get((base_of(variant), 1))
        if not ks or not base:
            continue
        desc = ("MLP L=4 H=1024 Adam fp32 " if shape_of(variant, 1)[0] == "mlp"
                else "nn.Transformer(d_model=256) Adam fp32 ") + variant
        rat = [got[(variant, k)][1] / base[1] for k in ks]
        s_rat = [b.suite_median(args.suite, variant, "accum_steps", k, "ratio_to_k1") for k in ks]
        tim = [got[(variant, k)][0] for k in ks]
        s_tim = [b.suite_median(args.suite, variant, "accum_steps", k, "step_time") for k in ks]
        out.summary(head + "%s at k = %s: %s; %s" % (
            desc, ", ".join(str(k) for k in ks),
            b.beside("peak_k/peak_1", rat, s_rat, b.ratio, have),
            b.beside("step time", tim, s_tim, b.seconds, have)))
        head = ""
    if b.suite_median(args.suite, b.SEED_VARIANT % SEED_FUNCS[0], "", 0, "seed_program") is not None or \
            (not args.suite and not args.quick):
        b.seed_program_rows(args, out, "c07", SEED_FUNCS)
    out.peaks(peaks)
    out.verdict(verdict_row(args, got, lambda k: training(torch, "transformer", 64, TFM_BATCH, k, dev)[1],
                            lambda a, c, ra, rc: b.compare_steps(torch, NAME, a, c, warm, ra, rc)))
    out.close(npoints)
    return 0


def verdict_row(args, got, make, compare):
    """peak_k/peak_1 of the Transformer at sequence 64 (the largest k), the
    suite's and PyTorch's, and the time k micro-steps cost PyTorch there
    (compare: beside.compare_steps of make(k) and make(1))."""
    var = "transformer seq=64 B=%d" % TFM_BATCH
    ks = sorted(k for v, k in got if v == var)
    if len(ks) < 2 or ks[0] != 1:
        return None
    k = ks[-1]
    one, many = got[(var, 1)], got[(var, k)]
    suite = b.suite_median(args.suite, var, "accum_steps", k, "ratio_to_k1")
    s_t1 = b.suite_median(args.suite, var, "accum_steps", 1, "step_time")
    s_tk = b.suite_median(args.suite, var, "accum_steps", k, "step_time")
    text = "Seed 000's Transformer (seq 64 x batch 100), k=%d: peak_k/peak_1 %s%.3f in PyTorch" % (
        k, "%.3f in the suite, " % suite if suite is not None else "", many[1] / one[1])
    r, lo, hi, _, _, how = compare(make(k), make(1), many[2], one[2])
    text += "; a step takes %s as long in PyTorch (%s)" % (b.with_spread(r, lo, hi, lambda x: "%.2fx" % x), how)
    if s_t1 and s_tk:
        text += " (suite %.2fx)" % (s_tk / s_t1)
    clause = b.regime_clause(many[2].get("idle"), "PyTorch's k-step")
    if clause:
        text += ": " + clause
    return text + "."


if __name__ == "__main__":
    sys.exit(main())
