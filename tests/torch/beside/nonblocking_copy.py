#!/usr/bin/env python3
"""nonblocking_copy.py: C13's measurement with PyTorch: how long a
non_blocking copy takes to return, from pageable and from pinned host
memory, beside build/c13_nonblocking_copy on the same sizes.

For H2D and D2H copies of 4 KiB to 256 MiB in x4 steps (--quick: to 4 MiB),
from pageable (torch.empty, every page written first) and pinned
(torch.empty(pin_memory=True)) host memory, on a torch.cuda.Stream(): a
10 ms spin kernel (--busy-ms; --quick 2 ms; the suite's length when its CSV
says it: torch.cuda._sleep, its cycles per second measured first) is queued
on the stream, then time.perf_counter times dst.copy_(src, non_blocking=True)
until it returns (return time), and from the kernel's launch until
stream.synchronize() ends (kernel + copy); stream.query() right after the
call says whether the stream was still busy. The copy alone (no kernel;
call + synchronize) is measured for context. dst.copy_(src) into buffers
made once, not src.to(device, non_blocking=True): the suite copies into
buffers of its own, and .to("cpu", non_blocking=True) would allocate its
destination pinned, leaving no pageable D2H case. Each case takes --warmup
copies without the kernel (they warm the copy path; the kernel's 10 ms
would add nothing), then --repeats samples (5: not the suite's sampler,
which adds samples until the spread is under 2%; figures beside, not the
verdict's); before them one copy into a poisoned destination is checked
against the source.

Rows (variant pytorch:pageable, pytorch:pinned, param bytes; DIR h2d, d2h):
DIR_return_time_host_clock, DIR_kernel_plus_copy_host_clock,
DIR_copy_alone_host_clock (samples, s), DIR_return_fraction (median return /
median kernel + copy; the note: returned early, blocked or undecided, as
the suite judges the 10th-90th percentile of each call's fraction against
10%), DIR_return_over_copy_alone, DIR_busy_at_return (share of calls after
which the stream was busy). Summaries: per direction and memory the return
fractions beside the suite's, and the cases that returned early; the
verdict row: how many pinned and pageable cases returned early or blocked,
the suite's and PyTorch's. The
interface and the output: beside.py. Standard library and torch only.
"""
import re
import sys
import time

import beside as b

CLAIM, KEY = "C13", "nonblocking_copy"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
KINDS = ("pageable", "pinned")
DIRS = ("h2d", "d2h")
MIN_BYTES = 4 << 10
MAX_BYTES, QUICK_MAX_BYTES = 256 << 20, 4 << 20
BUSY_MS, QUICK_BUSY_MS = 10, 2
EARLY_SHARE = 0.1                 # a return under this share of kernel + copy: returned early
NAME = "beside/" + KEY


def extra(ap):
    ap.add_argument("--busy-ms", type=int, default=0,
                    help="length of the kernel queued ahead of each copy, ms (default: the suite's, else 10, "
                         "--quick 2)")


def busy_s(args):
    """The kernel's length, s: --busy-ms, else the suite's (its notes say
    "after a 10 ms kernel"), else the experiment's default."""
    if args.busy_ms:
        return args.busy_ms * 1e-3
    for r in args.suite:
        m = re.match(r"^after a (\d+) ms kernel", r["note"])
        if m:
            return int(m.group(1)) * 1e-3
    return (QUICK_BUSY_MS if args.quick else BUSY_MS) * 1e-3


def sizes_of(args):
    """The sizes (bytes) and the kinds at each, in the suite's order (else the lists')."""
    if args.suite:
        out = {}
        for kind, param, value in b.suite_points(args.suite, "h2d_return_time_host_clock"):
            if param == "bytes" and kind in KINDS:
                out.setdefault(int(value), []).append(kind)
        return list(out.items())
    top, n, out = QUICK_MAX_BYTES if args.quick else MAX_BYTES, MIN_BYTES, []
    while n <= top:
        out.append((n, list(KINDS)))
        n *= 4
    return out


class Bench:
    """Buffers of cap bytes (device source and destination, pageable and
    pinned host), a stream, the spin kernel's rate."""

    def __init__(self, torch, cap, dev, rate):
        self.torch, self.rate = torch, rate
        u8 = torch.uint8
        self.d_src = torch.randint(0, 256, (cap,), dtype=u8, device=dev,
                                   generator=torch.Generator(device=dev).manual_seed(13))
        self.d_dst = torch.empty(cap, dtype=u8, device=dev)
        self.host = {"pageable": torch.empty(cap, dtype=u8), "pinned": torch.empty(cap, dtype=u8, pin_memory=True)}
        for h in self.host.values():
            h.copy_(self.d_src)   # the H2D source's pattern; writes every page
        self.stream = torch.cuda.Stream()
        torch.cuda.synchronize()

    def ends(self, d, kind, n):
        h = self.host[kind][:n]
        return (self.d_dst[:n], h) if d == "h2d" else (h, self.d_src[:n])

    def one(self, d, kind, n, busy):
        """One copy behind a spin of busy s (none when 0): (return time,
        kernel launch to the end of the sync, stream busy at return)."""
        torch, s = self.torch, self.stream
        dst, src = self.ends(d, kind, n)
        s.synchronize()
        with torch.cuda.stream(s):
            tl = time.perf_counter()
            if busy > 0:
                torch.cuda._sleep(int(round(busy * self.rate)))
            t0 = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            t1 = time.perf_counter()
            still = not s.query()
            s.synchronize()
            t2 = time.perf_counter()
        return t1 - t0, t2 - tl, still

    def check(self, d, kind, n):
        dst, _ = self.ends(d, kind, n)
        dst.fill_(0xA5)  # poison: a copy that never ran fails the check
        self.one(d, kind, n, 0.0)
        ok = self.torch.equal(self.d_dst[:n], self.d_src[:n]) if d == "h2d" else \
            self.torch.equal(dst, self.d_src[:n].cpu())
        if not ok:
            raise RuntimeError("the %s %s copy of %d bytes moved the wrong bytes" % (kind, d, n))


def measure(bench, d, kind, n, busy, args):
    """The case's samples: (return times, kernel + copy, copy alone, busy flags)."""
    bench.check(d, kind, n)
    busy_flags = []

    def one_sample(i):
        ret, total, still = bench.one(d, kind, n, busy)
        busy_flags.append(still)
        return [total, bench.one(d, kind, n, 0.0)[1], ret]

    for _ in range(args.warmup):
        bench.one(d, kind, n, 0.0)
    total, alone, ret = b.sample(one_sample, args.repeats, args.repeats, 0.0)
    return ret, total, alone, busy_flags


def judged(ret, total):
    """"early", "blocked" or "undecided" and the note, as the suite judges a
    case: the 10th-90th percentile of return / (kernel + copy) per call
    against [0, 10%]."""
    frac = [r / t for r, t in zip(ret, total)]
    lo, hi = b.percentile(frac, 10), b.percentile(frac, 90)
    under = sum(f <= EARLY_SHARE for f in frac) / float(len(frac))
    if hi <= EARLY_SHARE:
        return "early", "returned early (< 10% of kernel + copy)"
    if lo > EARLY_SHARE:
        return "blocked", "blocked"
    return "undecided", ("undecided: per call, return / (kernel + copy) %.3f-%.3f (10th-90th percentile) "
                         "straddles 10%%; %.0f%% of calls under" % (lo, hi, 100 * under))


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, extra, argv)
    if args.busy_ms < 0:
        print("%s: --busy-ms must be >= 0" % NAME, file=sys.stderr)
        return 2
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    busy = busy_s(args)
    cases = sizes_of(args)
    npoints = sum(len(k) for _, k in cases) * len(DIRS)
    bench = None
    try:
        rate = b.spin_rate(torch)
    except Exception as e:  # no spin kernel: no case can be measured
        for n, kinds in cases:
            for kind in kinds:
                out.failed(torch, kind, "bytes", n, "h2d_return_time_host_clock", "s", "%s %s" % (kind, b.size(n)), e)
        cases = []
    # Buffers at the largest size that fits; the sizes above it are failed rows.
    while cases and bench is None:
        try:
            bench = Bench(torch, cases[-1][0], dev, rate)
        except Exception as e:
            n, kinds = cases.pop()
            for kind in kinds:
                out.failed(torch, kind, "bytes", n, "h2d_return_time_host_clock", "s",
                           "%s %s (buffers)" % (kind, b.size(n)), e)
            b.release(torch)
    got = {}  # (d, n, kind) -> (return fraction, class)
    note_k = "after a %.0f ms kernel on the stream" % (busy * 1e3)
    for d in DIRS:  # direction outermost, as the suite: D2H overwrites the host buffers H2D reads
        for n, kinds in cases:
            for kind in kinds:
                what = "%s %s %s" % (d, kind, b.size(n))
                m = lambda x: "%s_%s" % (d, x)  # noqa: E731
                try:
                    ret, total, alone, flags = measure(bench, d, kind, n, busy, args)
                except Exception as e:  # one case's failure is its row; the others go on
                    out.failed(torch, kind, "bytes", n, m("return_time_host_clock"), "s", what, e)
                    continue
                cls, why = judged(ret, total)
                med = lambda xs: b.stats(xs)["median"]  # noqa: E731
                out.emit(kind, "bytes", n, m("return_time_host_clock"), "s", ret, "ok",
                         note_k + ": time.perf_counter around dst.copy_(src, non_blocking=True)")
                out.emit(kind, "bytes", n, m("kernel_plus_copy_host_clock"), "s", total, "ok",
                         note_k + " (torch.cuda._sleep) to the end of stream.synchronize()")
                out.emit(kind, "bytes", n, m("copy_alone_host_clock"), "s", alone, "ok",
                         "no kernel ahead: copy_(non_blocking=True) + stream.synchronize()")
                out.value(kind, "bytes", n, m("return_fraction"), "ratio", med(ret) / med(total), why)
                out.value(kind, "bytes", n, m("return_over_copy_alone"), "ratio", med(ret) / med(alone),
                          "return time / copy alone, medians")
                out.value(kind, "bytes", n, m("busy_at_return"), "fraction", sum(flags) / float(len(flags)),
                          "share of calls after which stream.query() said busy")
                out.flush()
                got[(d, n, kind)] = (med(ret) / med(total), cls)
                b.log(NAME, "%s: returned after %.1f us of %.2f ms (%s)", what, 1e6 * med(ret), 1e3 * med(total), cls)

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    for d in DIRS:
        for kind in KINDS:
            ns = [n for n, kinds in cases if (d, n, kind) in got]
            if not ns:
                continue
            s_frac = [b.suite_median(args.suite, kind, "bytes", n, "%s_return_fraction" % d) for n in ns]
            early = [b.size(n) for n in ns if got[(d, n, kind)][1] == "early"]
            out.summary(head + "%s %s at %s..%s (%.0f ms kernel ahead): %s; returned early at %s" % (
                d.upper(), kind, b.size(ns[0]), b.size(ns[-1]), busy * 1e3,
                b.beside("return / (kernel + copy)", [got[(d, n, kind)][0] for n in ns], s_frac,
                         lambda x: "%.3g" % x, have),
                ", ".join(early) if early else "none"))
            head = ""
    counts = []
    for kind in KINDS:
        mine = [got[k][1] for k in got if k[2] == kind]
        suite = [r["note"] for r in args.suite if r["variant"] == kind and r["metric"].endswith("_return_fraction")]
        if mine:
            s_txt = ""
            if suite:
                s_txt = " (suite %d early, %d blocked of %d)" % (sum(x.startswith("returned early") for x in suite),
                                                                 sum(x.startswith("blocked") for x in suite), len(suite))
            counts.append("%s: %d early, %d blocked of %d in PyTorch%s" % (
                kind, mine.count("early"), mine.count("blocked"), len(mine), s_txt))
    if counts:
        out.verdict("copy_(non_blocking=True) behind a %.0f ms kernel: %s." % (busy * 1e3, "; ".join(counts)))
    out.close(npoints)
    return 0


if __name__ == "__main__":
    sys.exit(main())
