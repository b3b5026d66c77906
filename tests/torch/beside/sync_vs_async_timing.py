#!/usr/bin/env python3
"""sync_vs_async_timing.py: C04's measurement with PyTorch: one workload timed
three ways, the mistakes of the claim and the cure, beside
build/c04_sync_vs_async_timing on the same sizes.

Workloads: torch.mm(a, b, out=c) on n x n float32 (TF32 off: true fp32, as
the suite's cuBLAS SGEMM with CUBLAS_DEFAULT_MATH) at n = 256, 1024, 4096,
8192 (--quick: 256, 1024), and torch.cuda._sleep spinning for 1 ms and
10 ms (its cycles per second measured first with CUDA events). Each repeat,
on an idle GPU, alternating as the suite does:

  (1) time.perf_counter around the call only        time_host_clock_no_sync
  (2) perf_counter around the call + synchronize()  time_host_clock_sync
  (3) CUDA events around the call, queued behind a
      torch.cuda._sleep spin so the launch itself
      is not timed (the suite's host-released gate)  time_cuda_events

and per repeat the ratios (1)/(3), (2)/(3), and 2 n^3 / (3). Rows: the
suite's metrics with variant pytorch:sgemm and pytorch:busy_kernel;
summaries: each workload's ratios and event time beside the suite's; the
verdict row: the largest SGEMM's host clock without sync over its event
time, the suite's and PyTorch's.
The interface and the output: beside.py. Standard library and torch only.
"""
import sys
import time

import beside as b

CLAIM, KEY = "C04", "sync_vs_async_timing"
FULL_N, QUICK_N = [256, 1024, 4096, 8192], [256, 1024]
SPINS_S = [1e-3, 10e-3]
REPEATS, WARMUP = b.REPEATS, b.WARMUP  # fewer than the experiment's 10 repeats: figures beside, not the verdict
GATE_CYCLES = 2000000           # ~1 ms at 2 GHz: outlasts the host's launch of the timed call
CALIBRATE_CYCLES = 20000000     # ~10 ms: the clock's rate for the spin kernel
NAME = "beside/" + KEY


def points(args):
    """(variant, param, value) to measure: the suite's, else its lists."""
    if args.suite:
        return b.suite_points(args.suite, "time_cuda_events")
    return [("sgemm", "n", float(n)) for n in (QUICK_N if args.quick else FULL_N)] + \
           [("busy_kernel", "set_duration_s", s) for s in SPINS_S]


class Timer:
    def __init__(self, torch):
        self.torch = torch
        self.sleep = getattr(torch.cuda, "_sleep", None)
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def events(self, launch):
        """Device time of launch() in s, queued behind a spin where torch has one."""
        if self.sleep is not None:
            self.sleep(GATE_CYCLES)
        self.start.record()
        launch()
        self.stop.record()
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop) * 1e-3

    def measure(self, launch, reps):
        """reps samples of each method, alternating; each starts on an idle GPU."""
        sync = self.torch.cuda.synchronize
        ns, sy, ev = [], [], []
        for _ in range(reps):
            sync()
            t0 = time.perf_counter()
            launch()
            ns.append(time.perf_counter() - t0)
            sync()
            t0 = time.perf_counter()
            launch()
            sync()
            sy.append(time.perf_counter() - t0)
            ev.append(self.events(launch))
        return ns, sy, ev

    def cycles_per_s(self):
        """The spin kernel's clock: the median of three timed spins."""
        self.sleep(CALIBRATE_CYCLES)  # untimed: the first launch loads the kernel
        rates = [CALIBRATE_CYCLES / self.events(lambda: self.sleep(CALIBRATE_CYCLES)) for _ in range(3)]
        return sorted(rates)[1]


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, None, argv)
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    # True fp32, as the suite's SGEMM (CUBLAS_DEFAULT_MATH): no TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda", args.device)
    timer = Timer(torch)
    rate = None
    big = None  # the largest SGEMM: (n, no-sync/events, the suite's, event time)
    pts_all = points(args)
    lines = {}  # variant -> [(label, no-sync/events, suite's, sync/events, suite's, events, suite's)]
    for variant, param, value in pts_all:
        what = "%s %s=%g" % (variant, param, value)
        try:
            if variant == "sgemm":
                n = int(value)
                a = torch.randn(n, n, device=dev, dtype=torch.float32)
                bm = torch.randn(n, n, device=dev, dtype=torch.float32)
                c = torch.empty(n, n, device=dev, dtype=torch.float32)
                launch = lambda: torch.mm(a, bm, out=c)  # noqa: E731
                call = "torch.mm(a, b, out=c), float32, TF32 off"
            elif variant == "busy_kernel":
                if timer.sleep is None:
                    raise AttributeError("this torch has no torch.cuda._sleep: no spin kernel")
                if rate is None:
                    rate = timer.cycles_per_s()
                cycles = int(round(value * rate))
                launch = lambda: timer.sleep(cycles)  # noqa: E731
                call = "torch.cuda._sleep(%d) (%.4g cycles/s, measured)" % (cycles, rate)
            else:
                raise ValueError("no PyTorch counterpart for the suite's variant %r" % variant)
            for _ in range(1 + args.warmup):  # the first call of a shape sets up cuBLAS: untimed
                launch()
            torch.cuda.synchronize()
            ns, sy, ev = timer.measure(launch, args.repeats)
        except Exception as e:  # one point's failure is its row; the others go on
            out.failed(torch, variant, param, value, "time_cuda_events", "s", what, e)
            b.release(torch)
            continue
        gate = "" if timer.sleep is None else ", queued behind torch.cuda._sleep(%d)" % GATE_CYCLES
        out.emit(variant, param, value, "time_host_clock_no_sync", "s", ns, "ok",
                 "time.perf_counter around the call only: " + call)
        out.emit(variant, param, value, "time_host_clock_sync", "s", sy, "ok",
                 "time.perf_counter around the call + torch.cuda.synchronize()")
        out.emit(variant, param, value, "time_cuda_events", "s", ev, "ok",
                 "torch.cuda.Event around the call" + gate)
        rn = [x / e for x, e in zip(ns, ev)]
        rs = [x / e for x, e in zip(sy, ev)]
        out.emit(variant, param, value, "ratio_no_sync_to_events", "ratio", rn, "ok",
                 "per repeat, methods alternating")
        out.emit(variant, param, value, "ratio_sync_to_events", "ratio", rs, "ok",
                 "per repeat, methods alternating")
        if variant == "sgemm":
            out.emit(variant, param, value, "flop_rate_events", "FLOP/s",
                     [2.0 * value ** 3 / e for e in ev], "ok", "2 n^3 / event time")
        out.flush()
        med = b.stats(ev)["median"]
        b.log(NAME, "%s: events %.3g s, sync %.3g s, no sync %.3g s", what, med, b.stats(sy)["median"],
              b.stats(ns)["median"])
        s = lambda m: b.suite_median(args.suite, variant, param, value, m)  # noqa: E731
        lines.setdefault(variant, []).append(
            ("%g" % value if variant == "sgemm" else b.seconds(value),
             b.stats(rn)["median"], s("ratio_no_sync_to_events"), b.stats(rs)["median"],
             s("ratio_sync_to_events"), med, s("time_cuda_events")))
        del launch
        b.release(torch)
        if variant == "sgemm":
            big = (value, b.stats(rn)["median"], s("ratio_no_sync_to_events"), med) + b.median_spread(rn)

    head = b.describe_torch(torch, args.device) + ": "
    for variant, pts in lines.items():
        have = bool(args.suite)
        at = ("SGEMM n = " if variant == "sgemm" else "spin of ") + ", ".join(p[0] for p in pts)
        out.summary(head + "%s: %s; %s; %s" % (
            at,
            b.beside("host clock without sync / events", [p[1] for p in pts], [p[2] for p in pts], b.ratio, have),
            b.beside("with sync / events", [p[3] for p in pts], [p[4] for p in pts], b.ratio, have),
            b.beside("events", [p[5] for p in pts], [p[6] for p in pts], b.seconds, have)))
        head = ""
    if big:
        early = big[1] < 0.1  # the suite's band for "shows it": no-sync/events inside 0-10%
        out.verdict("SGEMM n=%d: the host clock without a sync reads %s of the event time in PyTorch%s (events "
                    "%s): %s." % (big[0], b.with_spread(big[1], big[4], big[5], b.ratio),
                                  "" if big[2] is None else " (suite %s)" % b.ratio(big[2]),
                                  b.seconds(big[3]),
                                  "torch.mm returns before the GPU is done, the claim's mistake, in PyTorch too"
                                  if early else "torch.mm did not return early here"))
    out.close(len(pts_all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
