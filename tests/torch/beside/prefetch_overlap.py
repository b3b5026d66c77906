#!/usr/bin/env python3
"""prefetch_overlap.py: C14's measurement with PyTorch: can the copy of the
next batch overlap the compute of this one, beside
build/c14_prefetch_overlap with the same batches.

N batches (16; --quick 4; the suite's count when its CSV says it) of 32 MiB
(--quick 8 MiB; the suite's size when given) of int32 words, in pinned
(torch.empty(pin_memory=True)) and in pageable host memory, are copied H2D
with dst.copy_(src, non_blocking=True) and each consumed by a compute:
torch.sum of its words (int64, into a per-batch result checked against the
host's sum: a batch read corrupted or not at all is seen) followed by a
torch.cuda._sleep whose length is calibrated so that the compute alone
takes the pinned copy's time (the suite's kernel checks, sums and runs a
calibrated amount of arithmetic per word instead: the spin holds one SM,
not all). Variants, as the suite's: serial (copy then compute on one
stream, one device buffer) and double_buffered (copies on a second
torch.cuda.Stream into two device buffers; compute i waits for copy i, copy
i+2 for compute i, by torch.cuda.Event), each from pinned and from pageable
memory; totals are CUDA events from the first copy to the last compute,
pinned runs queued behind a spin (a pageable copy call waits on the stream,
so pageable runs are not). Copies alone and rounds of the variants
(interleaved) take --warmup, then --repeats samples (5: not the suite's
sampler, which adds samples until the spread is under 2%). The pageable
rounds (about 0.25 s each; the verdict is pinned's) are measured where
--budget-s leaves time for them, else a skipped row says so.
Then seed 002's PrefetchLoader as the seed writes it (its own
torch.cuda.Stream, batch.to(device, non_blocking=True) under it, the main
stream's wait_stream; no record_stream) on PyTorch's caching allocator over
the pinned batches, the compute 4x the copy's length, as the suite's pool
variants: pool_serial (one stream: .to() then compute),
pool_seed_no_record_stream (the seed's loader), pool_record_stream (the loop
calls batch.record_stream(main) first) and pool_copy_after_compute (the
side stream waits for the main stream before each copy); --warmup then
--repeats runs each, interleaved, the copy's length the one measured alone.

Rows (the suite's variants, param bytes = the batch's): copy_time_events
(pytorch:pinned, pytorch:pageable), compute_time_events (pytorch:compute),
total_time_events and ideal_total_time (pytorch:serial_<kind>,
pytorch:double_buffered_<kind>), overlap_fraction ((serial -
double_buffered) / ((N-1) * min(copy, compute)), medians; pytorch:<kind>);
for pytorch:pool_<variant> total_time_events, saving_vs_serial,
corrupted_batches (all runs) and peak_reserved (the bytes the run added to
torch.cuda.max_memory_reserved, largest over runs). The suite's
reuse_while_read (its model sees which block a copy is given) has no
PyTorch counterpart. Summaries: overlaps and the loader's corruption beside
the suite's; the verdict row: the pinned overlap, the suite's and
PyTorch's, and the loader's corrupted batches without record_stream. The interface and the output: beside.py. Standard library and
torch only.
"""
import re
import statistics
import sys

import beside as b

CLAIM, KEY = "C14", "prefetch_overlap"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
BATCHES, QUICK_BATCHES = 16, 4
BATCH_BYTES, QUICK_BATCH_BYTES = 32 << 20, 8 << 20
KINDS = ("pinned", "pageable")
POOL_COMPUTE = 4                  # the loader's compute: this many copies long
POOL = ("serial", "seed_no_record_stream", "record_stream", "copy_after_compute")
GATE_S, GATE_PER_BATCH_S = 2e-3, 0.25e-3  # a pinned run's gate, s: outlasts the host's queueing of the run
NAME = "beside/" + KEY


def extra(ap):
    ap.add_argument("--batches", type=int, default=0, help="batches per run, >= 2 (default: the suite's, else 16, "
                                                           "--quick 4)")
    ap.add_argument("--batch-bytes", type=int, default=0, help="bytes per batch, a multiple of 4 (default: the "
                                                                 "suite's, else 32 MiB, --quick 8 MiB)")


def shape(args):
    """(batches, bytes per batch): the options, else the suite's (its
    total_time_events note says "16 batches, ..."), else the defaults."""
    n, size = args.batches, args.batch_bytes
    for r in args.suite:
        if r["metric"] == "copy_time_events" and r["param"] == "bytes" and not size:
            size = int(float(r["param_value"]))
        m = re.match(r"^(\d+) batches", r["note"])
        if r["metric"] == "total_time_events" and m and not n:
            n = int(m.group(1))
    return (n or (QUICK_BATCHES if args.quick else BATCHES),
            size or (QUICK_BATCH_BYTES if args.quick else BATCH_BYTES))


class Bench:
    def __init__(self, torch, n, size, dev, rate):
        self.torch, self.n, self.words, self.dev, self.rate = torch, n, size // 4, dev, rate
        self.size = size
        i32 = torch.int32
        gen = torch.Generator(device=dev).manual_seed(14)
        self.host = {"pinned": torch.empty(n * self.words, dtype=i32, pin_memory=True),
                     "pageable": torch.empty(n * self.words, dtype=i32)}
        self.batches = {k: [h[i * self.words:(i + 1) * self.words] for i in range(n)] for k, h in self.host.items()}
        for i in range(n):
            chunk = torch.randint(-2 ** 31, 2 ** 31 - 1, (self.words,), dtype=i32, device=dev, generator=gen)
            for k in KINDS:
                self.batches[k][i].copy_(chunk)   # writes every page
        self.sums = torch.tensor([int(x.sum(dtype=torch.int64).item()) for x in self.batches["pinned"]],
                                 dtype=torch.int64, device=dev)  # the host's sum of each batch
        self.buf = [torch.empty(self.words, dtype=i32, device=dev) for _ in range(2)]
        self.out = torch.zeros(n, dtype=torch.int64, device=dev)
        self.sc, self.sk = torch.cuda.Stream(), torch.cuda.Stream()  # copies, compute
        ev = torch.cuda.Event
        self.start, self.stop = ev(enable_timing=True), ev(enable_timing=True)
        self.copied, self.consumed = [ev(), ev()], [ev(), ev()]
        self.cycles = 0
        torch.cuda.synchronize()

    def compute(self, x, i, cycles):
        """Batch i's compute on the current stream: its sum, then the spin."""
        self.torch.sum(x, dim=0, dtype=self.torch.int64, out=self.out[i])
        if cycles > 0:
            self.torch.cuda._sleep(cycles)

    def wrong(self, upto):
        """Batches [0, upto) whose computed sum is not the host's."""
        self.torch.cuda.synchronize()
        return sum(not self.torch.equal(self.out[i], self.sums[i]) for i in range(upto))

    def timed(self, stream, body, gate):
        torch = self.torch
        torch.cuda.synchronize()
        with torch.cuda.stream(stream):
            if gate:
                torch.cuda._sleep(int((GATE_S + GATE_PER_BATCH_S * self.n) * self.rate))
            self.start.record()
        body()
        self.stop.record(self.sk)
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop) * 1e-3

    def copy_alone(self, kind, i):
        torch = self.torch
        with torch.cuda.stream(self.sk):
            return self.timed(self.sk, lambda: self.buf[0].copy_(self.batches[kind][i], non_blocking=True),
                              kind == "pinned")

    def compute_alone(self, cycles):
        torch = self.torch
        self.buf[0].copy_(self.batches["pinned"][0])
        torch.cuda.synchronize()

        def body():
            with torch.cuda.stream(self.sk):
                self.compute(self.buf[0], 0, cycles)
        return self.timed(self.sk, body, False)

    def run(self, dbl, kind):
        """One run over every batch; seconds (events); sums checked after."""
        torch, src = self.torch, self.batches[kind]
        cs = self.sc if dbl else self.sk
        self.out.zero_()

        def body():
            if dbl:
                self.sk.wait_event(self.start)
            for i in range(self.n):
                buf = i & 1 if dbl else 0
                with torch.cuda.stream(cs):
                    if dbl and i >= 2:
                        cs.wait_event(self.consumed[buf])
                    self.buf[buf].copy_(src[i], non_blocking=True)
                    if dbl:
                        self.copied[buf].record(cs)
                with torch.cuda.stream(self.sk):
                    if dbl:
                        self.sk.wait_event(self.copied[buf])
                    self.compute(self.buf[buf], i, self.cycles)
                    if dbl:
                        self.consumed[buf].record(self.sk)
        t = self.timed(cs, body, kind == "pinned")
        return t, self.wrong(self.n)

    def calibrate(self, target_s):
        """The spin's cycles that make the compute alone last target_s."""
        t_sum = b.stats([self.compute_alone(0) for _ in range(3)])["median"]
        cycles = max(0, int((target_s - t_sum) * self.rate))
        for _ in range(2):  # the spin's length is not quite linear in its cycles: two corrections
            t = b.stats([self.compute_alone(cycles) for _ in range(3)])["median"]
            cycles = max(0, int(cycles + (target_s - t) * self.rate))
        return cycles


class PrefetchLoader:
    """Seed 002's PrefetchLoader, as the seed writes it; copy_after_compute:
    the side stream waits for the main stream before each copy."""

    def __init__(self, torch, loader, device, copy_after_compute=False):
        self.torch, self.loader, self.device, self.after = torch, loader, device, copy_after_compute

    def __iter__(self):
        torch = self.torch
        main = torch.cuda.current_stream()
        stream = torch.cuda.Stream()
        first = True
        for batch in self.loader:
            with torch.cuda.stream(stream):
                if self.after:
                    stream.wait_stream(main)
                next_batch = self._to_device(batch)
            if not first:
                yield current_batch  # noqa: F821 (bound below before its first use)
            else:
                first = False
            torch.cuda.current_stream().wait_stream(stream)
            current_batch = next_batch
        yield current_batch

    def _to_device(self, batch):
        if isinstance(batch, tuple):
            return tuple(x.to(self.device, non_blocking=True) for x in batch)
        return batch.to(self.device, non_blocking=True)


def pool_run(bench, v, cycles):
    """One run of seed 002's loader variant v: (seconds, corrupted batches,
    reserved bytes added at the peak)."""
    torch = bench.torch
    main = bench.sk
    hosts = bench.batches["pinned"]
    b.release(torch)  # a fresh cache, as the suite's fresh allocator per run
    with torch.cuda.stream(main):
        bench.out.zero_()
        torch.cuda.synchronize()
        base = torch.cuda.memory_reserved()
        torch.cuda.reset_peak_memory_stats()
        bench.start.record()
        if v == "serial":
            for i, h in enumerate(hosts):
                batch = h.to(bench.dev, non_blocking=True)
                bench.compute(batch, i, cycles)
        else:
            loader = PrefetchLoader(torch, hosts, bench.dev, copy_after_compute=v == "copy_after_compute")
            for i, batch in enumerate(loader):
                if v == "record_stream":
                    batch.record_stream(torch.cuda.current_stream())
                bench.compute(batch, i, cycles)
        del batch
        bench.stop.record()
        bench.stop.synchronize()
    torch.cuda.synchronize()
    return (bench.start.elapsed_time(bench.stop) * 1e-3, bench.wrong(bench.n),
            torch.cuda.max_memory_reserved() - base)


def overlap(serial, double, n, copy, compute):
    """The share of the ideal saving double buffering took: (serial's median
    round - double_buffered's) / ((n-1) * min(copy, compute)), times in s."""
    return (statistics.median(serial) - statistics.median(double)) / ((n - 1) * min(copy, compute))


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, extra, argv)
    n, size = shape(args)
    if n < 2 or size < 4 or size % 4:
        print("%s: --batches must be >= 2 and --batch-bytes a positive multiple of 4" % NAME, file=sys.stderr)
        return 2
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    reps, warm = args.repeats, args.warmup
    try:
        bench = Bench(torch, n, size, dev, b.spin_rate(torch))
    except Exception as e:  # nothing to measure without the batches or the spin kernel
        out.failed(torch, "pinned", "bytes", size, "copy_time_events", "s",
                   "set-up of %d batches of %s" % (n, b.size(size)), e)
        out.failures_summary(1)
        out.flush()
        return 0
    pv, have = size, bool(args.suite)
    head = b.describe_torch(torch, args.device) + ": "
    try:  # each part alone, the spin calibrated, then the rounds of the four variants
        copy = {}
        for k in KINDS:
            for w in range(warm):
                bench.copy_alone(k, w % n)
            copy[k] = [bench.copy_alone(k, i % n) for i in range(reps)]
        cp = {k: b.stats(copy[k])["median"] for k in KINDS}
        bench.cycles = bench.calibrate(cp["pinned"])
        comp = [bench.compute_alone(bench.cycles) for _ in range(reps)]
        if bench.wrong(1):
            raise RuntimeError("the compute alone on batch 0 summed it wrong")
        wrong = [0]
        cm0 = b.stats(comp)["median"]
        # The pageable rounds: where the budget leaves time for them (rounds of serial + double-buffered)
        kinds = [k for k in KINDS if k == "pinned" or args.budget.allows(
            cost_s=(warm + reps) * 2 * n * (cp[k] + cm0))]

        def one_round(i):  # the suite's order; series dbl * len(KINDS) + kind
            row = [None] * (2 * len(KINDS))
            for j, k in enumerate(KINDS):
                for dbl in (0, 1):
                    if k in kinds:
                        t, w = bench.run(dbl, k)
                        wrong[0] += w
                        row[dbl * len(KINDS) + j] = t
            return row
        for w in range(warm):
            one_round(w)
        wrong[0] = 0
        rounds = [one_round(i) for i in range(reps)]
        tot = [[r[j] for r in rounds] for j in range(2 * len(KINDS))]
    except Exception as e:
        out.failed(torch, "pinned", "bytes", pv, "overlap_fraction", "ratio", "copy, compute and rounds", e)
        tot = None
    if tot is not None:
        cm = b.stats(comp)["median"]
        for k in KINDS:
            out.emit(k, "bytes", pv, "copy_time_events", "s", copy[k], "ok",
                     "one batch H2D alone (dst.copy_(src, non_blocking=True)), %s" % (
                         "gated" if k == "pinned" else "not gated"))
        out.emit("compute", "bytes", pv, "compute_time_events", "s", comp, "ok",
                 "torch.sum of the batch + torch.cuda._sleep(%d), calibrated to the pinned copy" % bench.cycles)
        series = {(dbl, k): tot[dbl * len(KINDS) + j] for dbl in (0, 1) for j, k in enumerate(KINDS)}
        ov = {}
        for k in KINDS:  # the suite's order of rows
            for dbl in (0, 1):
                var = "%s_%s" % ("double_buffered" if dbl else "serial", k)
                if k not in kinds:
                    out.skipped(var, "bytes", pv, "total_time_events", "s", "%s rounds" % var,
                                "not measured: run-all's time budget (--budget-s) leaves no time for %d rounds of "
                                "%d pageable copies (the verdict is pinned's); by hand they are measured"
                                % (warm + reps, n))
                    continue
                out.emit(var, "bytes", pv, "total_time_events", "s", series[(dbl, k)], "ok",
                         "%d batches, first copy to last compute%s" % (
                             n, "; %d batch sums wrong over all rounds" % wrong[0] if wrong[0] else ""))
                ideal = n * max(cp[k], cm) + min(cp[k], cm) if dbl else n * (cp[k] + cm)
                out.value(var, "bytes", pv, "ideal_total_time", "s", ideal,
                          "N*max(copy, compute) + min(copy, compute)" if dbl else "N*(copy + compute)")
        for k in kinds:
            ov[k] = overlap(series[(0, k)], series[(1, k)], n, cp[k], cm)
            out.value(k, "bytes", pv, "overlap_fraction", "ratio", ov[k],
                      "(serial - double_buffered) / ((N-1) * min(copy, compute)), medians")
        out.flush()
        b.log(NAME, "%d x %s: copy %.3f ms pinned, %.3f ms pageable; compute %.3f ms; overlap %s", n, b.size(size),
              1e3 * cp["pinned"], 1e3 * cp["pageable"], 1e3 * cm,
              ", ".join("%.2f %s" % (ov[k], k) for k in kinds))
        out.summary(head + "%d batches of %s, compute (torch.sum + spin) calibrated to the pinned copy: %s" % (
            n, b.size(size), b.beside("overlap pinned, pageable", [ov.get(k) for k in KINDS],
                                      [b.suite_median(args.suite, k, "bytes", pv, "overlap_fraction") for k in KINDS],
                                      b.ratio, have)))
        head = ""

    # ---- seed 002's PrefetchLoader on PyTorch's caching allocator
    try:
        cycles = bench.calibrate(POOL_COMPUTE * cp["pinned"])  # the copy measured alone above
        t = {v: [] for v in POOL}
        bad = {v: 0 for v in POOL}
        peak = {v: 0 for v in POOL}
        del bench.buf[:]  # the variants' own buffers: not the loader's
        b.release(torch)
        for rep in range(-warm, reps):
            for v in POOL:
                s, w, pk = pool_run(bench, v, cycles)
                if rep >= 0:
                    t[v].append(s)
                    bad[v] += w
                    peak[v] = max(peak[v], pk)
    except Exception as e:
        out.failed(torch, "pool_seed_no_record_stream", "bytes", pv, "total_time_events", "s", "seed 002's loader", e)
        t = None
    if t is not None:
        serial = b.stats(t["serial"])["median"]
        for v in POOL:
            var = "pool_" + v
            out.emit(var, "bytes", pv, "total_time_events", "s", t[v], "ok",
                     "%d batches, PyTorch's caching allocator, compute %dx the copy, %d runs" % (n, POOL_COMPUTE, reps))
            out.value(var, "bytes", pv, "saving_vs_serial", "ratio", 1.0 - b.stats(t[v])["median"] / serial,
                      "1 - median / serial median")
            out.value(var, "bytes", pv, "corrupted_batches", "count", bad[v],
                      "batches whose sum was not the host's; all runs")
            out.value(var, "bytes", pv, "peak_reserved", "bytes", peak[v],
                      "max_memory_reserved - memory_reserved before the run, largest over runs")
        out.flush()
        out.summary(head + "seed 002's PrefetchLoader (%d batches x %d runs): %s; %s" % (
            n, reps,
            b.beside("corrupted batches without record_stream, with it, copy after compute",
                     [bad[v] for v in POOL[1:]],
                     [b.suite_median(args.suite, "pool_" + v, "bytes", pv, "corrupted_batches") for v in POOL[1:]],
                     lambda x: "%d" % x, have),
            b.beside("saving vs serial", [1.0 - b.stats(t[v])["median"] / serial for v in POOL[1:]],
                     [b.suite_median(args.suite, "pool_" + v, "bytes", pv, "saving_vs_serial") for v in POOL[1:]],
                     b.pct, have)))
    if tot is not None:
        suite = b.suite_median(args.suite, "pinned", "bytes", pv, "overlap_fraction")
        ser, dbl = series[(0, "pinned")], series[(1, "pinned")]
        lo, hi = b.rounds_spread(lambda idx: overlap([ser[i] for i in idx], [dbl[i] for i in idx], n,
                                                     cp["pinned"], cm), len(ser))
        text = "Double buffering, %d batches of %s from pinned memory: overlap %s%s of the ideal saving in PyTorch" % (
            n, b.size(size), "" if suite is None else "%.2f in the suite, " % suite,
            b.with_spread(ov["pinned"], lo, hi, lambda x: "%.2f" % x))
        if t is not None:
            text += "; seed 002's loader without record_stream corrupted %d of %d batches in PyTorch" % (
                bad["seed_no_record_stream"], n * reps)
        out.verdict(text + ".")
    out.close(2 + len(out.skips))
    return 0


if __name__ == "__main__":
    sys.exit(main())
