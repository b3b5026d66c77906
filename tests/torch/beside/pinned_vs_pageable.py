#!/usr/bin/env python3
"""pinned_vs_pageable.py: C03's measurement with PyTorch: host-device copy
bandwidth from pageable, pinned and registered host memory, beside
build/c03_pinned_vs_pageable on the same sizes.

H2D and D2H copies of 4 KiB to 256 MiB in x4 steps (--quick: to 4 MiB; the
suite's sizes when its CSV is given) between a device tensor and host
memory of three kinds: pageable (torch.empty, every page written first),
pinned (torch.empty(pin_memory=True)) and registered (a pageable tensor
passed to torch.cuda.cudart().cudaHostRegister), each timed two ways, as the
suite: CUDA events around dst.copy_(src, non_blocking=True) on a
torch.cuda.Stream(), pinned and registered copies queued behind a 1 ms
torch.cuda._sleep so that the events time the copy and not the host's
dispatch of copy_() (tests/torch/copy_reference.py's method; pageable
copies are not gated, since their call waits on the stream), and
time.perf_counter around dst.copy_(src) + torch.cuda.synchronize() (what the
program waits for: the verdict's clock). Each series takes --warmup copies
of each clock first, then --repeats copies (5: not the suite's sampler,
which adds copies until the spread is under 2%; figures beside, not the
verdict's); copies of 1 GiB and more at most 3 repeats and 1 warm-up. The
destination of each case is poisoned before its copies and checked after
them against the source. The verdict's sizes (64 MiB and up) are measured
whatever --budget-s is; the smaller ones only while it lasts.

Rows (variant pytorch:pageable, pytorch:pinned, pytorch:registered, param
bytes): h2d_bandwidth_events, h2d_bandwidth_host_clock,
d2h_bandwidth_events, d2h_bandwidth_host_clock (B/s, samples); and for
pytorch:pinned_over_pageable and pytorch:registered_over_pageable
h2d_ratio_host_clock and d2h_ratio_host_clock (ratios of medians).
Summaries: per direction the pinned/pageable ratio at the verdict's sizes
(>= 64 MiB, else the largest) and the bandwidths at the largest, beside the
suite's; the verdict row: the pinned/pageable ratio at the largest size,
the suite's and PyTorch's, per direction. The interface and the output: beside.py. Standard library and
torch only.
"""
import sys
import time

import beside as b

CLAIM, KEY = "C03", "pinned_vs_pageable"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
KINDS = ("pageable", "pinned", "registered")
DIRS = ("h2d", "d2h")
CLOCKS = ("events", "host_clock")
MIN_BYTES = 4 << 10
MAX_BYTES, QUICK_MAX_BYTES = 256 << 20, 4 << 20
LARGE_BYTES = 64 << 20            # the verdict's sizes
GIB, GIB_REPEATS = 1 << 30, 3
NAME = "beside/" + KEY


def sizes_of(args):
    """The sizes (bytes), the suite's (else the lists')."""
    if args.suite:
        return sorted({int(v) for k, p, v in b.suite_points(args.suite, "h2d_bandwidth_host_clock")
                       if p == "bytes" and k in KINDS})
    top, n, out = QUICK_MAX_BYTES if args.quick else MAX_BYTES, MIN_BYTES, []
    while n <= top:
        out.append(n)
        n *= 4
    return out


class Bench:
    """Device source and destination and the three host buffers, cap bytes
    each; the host buffers hold the device source's bytes."""

    def __init__(self, torch, cap, dev):
        self.torch, self.reg = torch, None
        u8 = torch.uint8
        self.d_src = torch.randint(0, 256, (cap,), dtype=u8, device=dev,
                                   generator=torch.Generator(device=dev).manual_seed(3))
        self.d_dst = torch.empty(cap, dtype=u8, device=dev)
        self.host = {"pageable": torch.empty(cap, dtype=u8), "pinned": torch.empty(cap, dtype=u8, pin_memory=True)}
        self.stream = torch.cuda.Stream()
        self.start, self.stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        reg = torch.empty(cap, dtype=u8)
        try:  # a kind this torch cannot make is a failed row per case, not the end
            err = torch.cuda.cudart().cudaHostRegister(reg.data_ptr(), cap, 0)
            if int(err) != 0:
                raise RuntimeError("cudaHostRegister of %d bytes returned %s" % (cap, err))
            self.reg = reg
            self.host["registered"] = reg
        except Exception as e:
            self.reg_error = e
        for h in self.host.values():
            h.copy_(self.d_src)   # the H2D source's bytes; writes every page
        torch.cuda.synchronize()

    def close(self):
        if self.reg is not None:
            self.torch.cuda.cudart().cudaHostUnregister(self.reg.data_ptr())
            self.reg = None

    def ends(self, d, kind, n):
        if kind not in self.host:
            raise self.reg_error
        h = self.host[kind][:n]
        return (self.d_dst[:n], h) if d == "h2d" else (h, self.d_src[:n])

    def copy(self, d, kind, n, clock):
        """One copy's bandwidth, B/s."""
        torch = self.torch
        dst, src = self.ends(d, kind, n)
        with torch.cuda.stream(self.stream):
            if clock == "events":
                if kind != "pageable":
                    torch.cuda._sleep(b.GATE_CYCLES)
                self.start.record()
                dst.copy_(src, non_blocking=True)
                self.stop.record()
                self.stop.synchronize()
                return n / (self.start.elapsed_time(self.stop) * 1e-3)
            t0 = time.perf_counter()
            dst.copy_(src)
            torch.cuda.synchronize()
            return n / (time.perf_counter() - t0)

    def poison(self, d, kind, n):
        self.ends(d, kind, n)[0].fill_(0xA5)

    def check(self, d, kind, n):
        dst, _ = self.ends(d, kind, n)
        ok = self.torch.equal(dst, self.d_src[:n]) if d == "h2d" else self.torch.equal(dst, self.d_src[:n].cpu())
        if not ok:
            raise RuntimeError("the %s %s copies of %d bytes moved the wrong bytes" % (kind, d, n))


def measure(bench, d, kind, n, args):
    """{clock: bandwidth samples} of one case."""
    reps = min(args.repeats, GIB_REPEATS) if n >= GIB else args.repeats
    warm = min(args.warmup, 1) if n >= GIB else args.warmup
    bench.poison(d, kind, n)
    for _ in range(warm):
        for c in CLOCKS:
            bench.copy(d, kind, n, c)
    got = {c: [bench.copy(d, kind, n, c) for _ in range(reps)] for c in CLOCKS}
    bench.check(d, kind, n)
    return got


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, None, argv)
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    sizes = sizes_of(args)
    npoints = len(sizes) * len(KINDS) * len(DIRS)
    bench = None
    while sizes and bench is None:  # buffers at the largest size that fits; above it, failed rows
        try:
            bench = Bench(torch, sizes[-1], dev)
        except Exception as e:
            n = sizes.pop()
            for kind in KINDS:
                out.failed(torch, kind, "bytes", n, "h2d_bandwidth_host_clock", "B/s",
                           "%s %s (buffers)" % (kind, b.size(n)), e)
            b.release(torch)
    got = {}  # (d, n, kind) -> {clock: median B/s}
    host = {}  # (d, n, kind) -> the host clock's samples, B/s (the verdict row's spread)
    for d in DIRS:  # direction outermost, as the suite: D2H overwrites the host buffers H2D reads
        for n in sizes:
            for kind in KINDS:
                what = "%s %s %s" % (d, kind, b.size(n))
                if not args.budget.allows(first=n >= LARGE_BYTES or n == sizes[-1]):
                    out.skipped(kind, "bytes", n, "%s_bandwidth_host_clock" % d, "B/s", what, args.budget.why())
                    continue
                try:
                    bw = measure(bench, d, kind, n, args)
                except Exception as e:  # one case's failure is its row; the others go on
                    out.failed(torch, kind, "bytes", n, "%s_bandwidth_host_clock" % d, "B/s", what, e)
                    continue
                for c in CLOCKS:
                    note = ("events, %s: dst.copy_(src, non_blocking=True)" % ("not gated" if kind == "pageable" else
                                                                                "gated by torch.cuda._sleep")
                            if c == "events" else "host clock: dst.copy_(src) + torch.cuda.synchronize()")
                    out.emit(kind, "bytes", n, "%s_bandwidth_%s" % (d, c), "B/s", bw[c], "ok",
                             note + ("; fewer repeats at 1 GiB" if n >= GIB else ""))
                got[(d, n, kind)] = {c: b.stats(bw[c])["median"] for c in CLOCKS}
                host[(d, n, kind)] = bw["host_clock"]
                b.log(NAME, "%s: %.2f GB/s events, %.2f GB/s host clock", what, got[(d, n, kind)]["events"] / 1e9,
                      got[(d, n, kind)]["host_clock"] / 1e9)
                pg = got.get((d, n, "pageable"))
                if kind != "pageable" and pg:
                    out.value("%s_over_pageable" % kind, "bytes", n, "%s_ratio_host_clock" % d, "ratio",
                              got[(d, n, kind)]["host_clock"] / pg["host_clock"],
                              "ratio of medians, %s over pageable (host clock)" % kind)
                out.flush()
    if bench is not None:
        bench.close()

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    large = [n for n in sizes if n >= LARGE_BYTES] or sizes[-1:]
    for d in DIRS:
        ns = [n for n in large if (d, n, "pinned") in got and (d, n, "pageable") in got]
        if not ns:
            continue
        r = [got[(d, n, "pinned")]["host_clock"] / got[(d, n, "pageable")]["host_clock"] for n in ns]
        s_r = [b.suite_median(args.suite, "pinned_over_pageable", "bytes", n, "%s_ratio_host_clock" % d) for n in ns]
        top = ns[-1]
        bws = [got[(d, top, k)]["host_clock"] if (d, top, k) in got else None for k in KINDS]
        s_bws = [b.suite_median(args.suite, k, "bytes", top, "%s_bandwidth_host_clock" % d) for k in KINDS]
        out.summary(head + "%s at %s: %s; at %s, %s" % (
            d.upper(), ", ".join(b.size(n) for n in ns),
            b.beside("pinned/pageable (host clock)", r, s_r, b.ratio, have), b.size(top),
            b.beside("pageable, pinned, registered (host clock)", bws, s_bws, b.gbps, have)))
        head = ""
    parts = []
    for d in DIRS:
        top = large[-1] if large else 0
        if (d, top, "pageable") in host and (d, top, "pinned") in host:
            suite = b.suite_median(args.suite, "pinned_over_pageable", "bytes", top, "%s_ratio_host_clock" % d)
            r, lo, hi = b.ratio_spread(host[(d, top, "pinned")], host[(d, top, "pageable")])
            parts.append("%s %s%s in PyTorch" % (d.upper(), "" if suite is None else "%.2fx in the suite, " % suite,
                                                  b.with_spread(r, lo, hi, lambda x: "%.2fx" % x)))
    if parts:
        out.verdict("Pinned over pageable copy bandwidth at %s (host clock, the verdict's clock): %s; the claim "
                    "says 2-3x." % (b.size(large[-1]), "; ".join(parts)))
    out.close(npoints)
    return 0


if __name__ == "__main__":
    sys.exit(main())
