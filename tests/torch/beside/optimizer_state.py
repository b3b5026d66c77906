#!/usr/bin/env python3
"""optimizer_state.py: C09's measurement with PyTorch: the memory and step
time of SGD, SGD with momentum and Adam on the same training workload,
beside build/c09_optimizer_state on the same widths.

The model is tests/torch/mlp_reference.py's Training (which the suite's
workload equals to the byte in memory): a Linear+ReLU MLP of L = 4 layers
(--layers) of width H = 1024, 2048, 4096, 8192 (--quick: 1024, 2048), batch
512 (--batch), fp32, with torch.optim.SGD(lr 0.01), SGD(lr 0.01,
momentum=0.9) and Adam(lr 1e-3), PyTorch's defaults (foreach on CUDA), as
the experiment's. Per width and optimizer one model: --warmup steps (at
least 2; step 1 creates the optimizer state: its peak read), then
--repeats timed steps, each on its own: reset the peak, CUDA events around
the step, max_memory_allocated and memory_allocated after
zero_grad(set_to_none=True); then one more under torch.profiler for the
GPU's idle share. The widest (the verdict's 8192) is measured first; with
--budget-s the others only while it lasts.
The persistent state is the bytes of the CUDA tensors in optimizer.state
after the last step (Adam's step counters live on the host). Between points
the model is dropped and the cache emptied. AdamW is not measured: C09 has
no AdamW.

Rows (variant pytorch:sgd, pytorch:momentum, pytorch:adam, param width):
params (P, the parameters' element count), peak_allocated and
allocated_end (the measured steps), step1_peak_allocated, peak_bpp and
end_bpp (their medians / P), state_bpp (persistent state / P), step_time;
and for pytorch:adam_vs_sgd and pytorch:momentum_vs_sgd peak_ratio,
step1_peak_ratio and end_ratio (over SGD's, medians). Summaries: per width
the peak ratios, persistent state and step times beside the suite's, and
where PyTorch's peak allocated equals the suite's. The interface and the
output: beside.py. Standard library and torch only.
"""
import sys

import beside as b

CLAIM, KEY = "C09", "optimizer_state"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
WIDTHS, QUICK_WIDTHS = [1024, 2048, 4096, 8192], [1024, 2048]
OPTS = ("sgd", "momentum", "adam")
NAME = "beside/" + KEY


def extra(ap):
    ap.add_argument("--batch", type=int, default=512, help="rows per step (the experiment's --batch, default 512)")
    ap.add_argument("--layers", type=int, default=4, help="Linear layers (the experiment's --layers, default 4)")


def points(args):
    """[(width, [optimizers])], in the suite's order (else the lists')."""
    if args.suite:
        out = []
        for variant, param, value in b.suite_points(args.suite, "peak_allocated"):
            if param != "width" or variant not in OPTS:
                continue
            if not out or out[-1][0] != int(value):
                out.append((int(value), []))
            out[-1][1].append(variant)
        return out
    return [(H, list(OPTS)) for H in (QUICK_WIDTHS if args.quick else WIDTHS)]


def state_bytes(opt):
    """Bytes of the CUDA tensors in optimizer.state: the persistent state."""
    n = 0
    for st in opt.state.values():
        for t in st.values():
            if getattr(t, "is_cuda", False):
                n += t.numel() * t.element_size()
    return n


def measure(torch, H, o, args, dev, profile=False):
    """One optimizer at one width: P, step 1's peak, the timed steps'
    (time, peak, reserved, allocated after), the persistent state's bytes,
    the record (with the idle share where profile: the verdict row's)."""
    ref = b.reference_module("mlp_reference")
    flags = ("--layers %d --in %d --width %d --out %d --batch %d --optimizer %s --precision fp32 --accum 1"
             % (args.layers, H, H, H, args.batch, o))
    cfg = ref.Cfg(flags, 1)
    rec = b.record(torch, (ref.__name__, tuple(sorted(vars(cfg).items()))), lambda: ref.Training(torch, cfg, dev),
                   max(args.warmup, 2), args.repeats, CLAIM, profile=profile,
                   extra=lambda tr: (sum(p.numel() for p in tr.model.parameters()), state_bytes(tr.opt)))
    P, state = rec["extra"]
    w = rec["warm"]
    got = list(zip(rec["times"], rec["peaks"], rec["reserved"], rec["after"]))[w:]
    return P, rec["peaks"][0], got, state, rec


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, extra, argv)
    if args.batch < 1 or not 2 <= args.layers <= 64:
        print("%s: --batch must be >= 1 and --layers from 2 to 64" % NAME, file=sys.stderr)
        return 2
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    pts = points(args)
    widest = max([H for H, _ in pts] or [0])
    got = {}     # (H, optimizer) -> (median peak, step 1 peak, median allocated after, P, state, median time, record)
    peaks = []   # (what, PyTorch's peak, the suite's)
    npoints = 0
    for H, opts in sorted(pts, key=lambda p: p[0] != widest):
        go = args.budget.allows(first=H == widest)
        for o in opts:
            npoints += 1
            what = "H=%d %s" % (H, o)
            if not go:
                out.skipped(o, "width", H, "peak_allocated", "bytes", what, args.budget.why())
                continue
            res = None
            try:
                res = measure(torch, H, o, args, dev, profile=(H, o) == (widest, "adam"))
            except Exception as e:  # one point's failure is its row; the others go on
                out.failed(torch, o, "width", H, "peak_allocated", "bytes", what, e)
            if res is None:
                b.release(torch)
                continue
            P, step1, st, state, rec = res
            times, pk, ends = [s[0] for s in st], [s[1] for s in st], [s[3] for s in st]
            peak, end = b.stats(pk)["median"], b.stats(ends)["median"]
            out.value(o, "width", H, "params", "count", P, "parameters P (numel of model.parameters())")
            out.emit(o, "width", H, "peak_allocated", "bytes", pk, "ok",
                     "torch.cuda.max_memory_allocated of each measured step")
            out.value(o, "width", H, "step1_peak_allocated", "bytes", step1, "step 1: the optimizer state is created")
            out.emit(o, "width", H, "allocated_end", "bytes", ends, "ok",
                     "torch.cuda.memory_allocated after zero_grad(set_to_none=True)")
            out.value(o, "width", H, "peak_bpp", "bytes/param", peak / P, "steady peak allocated per parameter")
            out.value(o, "width", H, "end_bpp", "bytes/param", end / P, "allocated between steps per parameter")
            out.value(o, "width", H, "state_bpp", "bytes/param", state / P,
                      "CUDA tensors in optimizer.state after the last step, per parameter")
            out.emit(o, "width", H, "step_time", "s", times, "ok",
                     b.shared_note(rec, "CUDA events around the step (reference Training.step)"))
            out.idle(o, "width", H, rec)
            got[(H, o)] = (peak, step1, end, P, state, b.stats(times)["median"], rec)
            peaks.append((what, peak, b.suite_median(args.suite, o, "width", H, "peak_allocated")))
            b.log(NAME, "%s: step %.3f ms, peak %d bytes, state %d bytes", what, got[(H, o)][5] * 1e3, peak, state)
            sgd = got.get((H, "sgd"))
            if o != "sgd" and sgd:
                v = "%s_vs_sgd" % ("adam" if o == "adam" else "momentum")
                mine = got[(H, o)]
                out.value(v, "width", H, "peak_ratio", "ratio", mine[0] / sgd[0], "steady peak allocated over SGD's")
                out.value(v, "width", H, "step1_peak_ratio", "ratio", mine[1] / sgd[1],
                          "step 1 (state creation) peak allocated over SGD's")
                out.value(v, "width", H, "end_ratio", "ratio", mine[2] / sgd[2],
                          "memory_allocated between steps over SGD's")
            out.flush()

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    for H, _ in pts:
        mine = [got.get((H, o)) for o in OPTS]
        s_time = [b.suite_median(args.suite, o, "width", H, "step_time") for o in OPTS]
        parts = []
        if mine[0] and mine[2]:
            parts.append(b.beside("Adam/SGD peak", [mine[2][0] / mine[0][0]],
                                  [b.suite_median(args.suite, "adam_vs_sgd", "width", H, "peak_ratio")], b.ratio, have))
        if mine[0] and mine[1]:
            parts.append(b.beside("momentum/SGD peak", [mine[1][0] / mine[0][0]],
                                  [b.suite_median(args.suite, "momentum_vs_sgd", "width", H, "peak_ratio")], b.ratio,
                                  have))
        if any(mine):
            parts.append(b.beside("persistent state B/param SGD, momentum, Adam",
                                  [m and m[4] / m[3] for m in mine],
                                  [b.suite_median(args.suite, o, "width", H, "state_bpp") for o in OPTS],
                                  lambda x: "%.2f" % x, have))
            parts.append(b.beside("step time SGD, momentum, Adam", [m and m[5] for m in mine], s_time, b.seconds,
                                  have))
            out.summary(head + "MLP L=%d, H=%d, batch %d, fp32: %s" % (args.layers, H, args.batch, "; ".join(parts)))
            head = ""
    out.peaks(peaks)
    sgd, adam = got.get((widest, "sgd")), got.get((widest, "adam"))
    if sgd and adam:
        suite = b.suite_median(args.suite, "adam_vs_sgd", "width", widest, "peak_ratio")
        ts = [(m[5],) + b.median_spread(b.timed(m[6])) for m in (sgd, adam)]
        text = "MLP H=%d: Adam/SGD steady peak %s%.2fx in PyTorch; step %s SGD, %s Adam in PyTorch" % (
            widest, "%.2fx in the suite, " % suite if suite is not None else "", adam[0] / sgd[0],
            b.with_spread(*ts[0], b.seconds), b.with_spread(*ts[1], b.seconds))
        clause = b.regime_clause(adam[6].get("idle"), "PyTorch's Adam step")
        out.verdict(text + ("; " + clause if clause else "") + ".")
    out.close(npoints)
    return 0


if __name__ == "__main__":
    sys.exit(main())
