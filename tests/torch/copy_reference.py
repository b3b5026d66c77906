#!/usr/bin/env python3
"""copy_reference.py: PyTorch's pinned host <-> device copy bandwidth, the
reference for C03 (pinned_vs_pageable). Run it on the GPU machine:

    python3 tests/torch/copy_reference.py
    python3 tests/torch/copy_reference.py --compare results/latest/pinned_vs_pageable.csv

For each size (64 MiB, 256 MiB, 1 GiB; with --compare, every size >= 64 MiB
in the suite's CSV) a pinned host tensor (torch.empty(n, dtype=torch.uint8)
.pin_memory()) and a device tensor are copied both ways with
dst.copy_(src, non_blocking=True), each copy timed with torch.cuda.Event
after a warm-up, queued behind torch.cuda._sleep so that the events time the
copy and not the host's dispatch of copy_() (as the suite's gate kernel does). Tidy CSV rows in the suite's format go to stdout (claim C03,
experiment torch_copy_reference, variant pinned_torch_events, metric
h2d_bandwidth / d2h_bandwidth in B/s, median and spread of the samples).

--compare PATH prints, on stderr (stdout stays CSV), the suite's pinned
event-timed bandwidth (variant pinned, metric h2d_bandwidth_events /
d2h_bandwidth_events) beside PyTorch's for each size >= 64 MiB, with the
relative difference, and exits 1 if any differs by more than 3%.

Exit: 0 ok, 1 a comparison beyond 3% or a copy that moved the wrong bytes,
2 usage (or no comparable rows in PATH), 77 no CUDA device.
Standard library and torch only.
"""
import argparse
import csv
import math
import statistics
import sys

HEADER = ("claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,"
          "mean,stdev,status,note").split(",")
MIB = 1 << 20
SIZES = [64 * MIB, 256 * MIB, 1024 * MIB]
LARGE = 64 * MIB
TOLERANCE = 0.03  # the target: within 3% of PyTorch
SUITE_METRIC = {"h2d": "h2d_bandwidth_events", "d2h": "d2h_bandwidth_events"}


def number(v):
    """A figure as the suite writes it (common/csv.c mc_csv_write_number)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if float(v).is_integer() and abs(v) < 2 ** 53:
        return str(int(v))
    return "%.10g" % v


def stats(xs):
    return {
        "n": len(xs),
        "median": statistics.median(xs),
        "min": min(xs),
        "max": max(xs),
        "mean": statistics.fmean(xs),
        "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0,
    }


def size_str(n):
    return "%d GiB" % (n >> 30) if n >= 1 << 30 and n % (1 << 30) == 0 else "%d MiB" % (n >> 20)


def measure(torch, n, repeats, warmup):
    """Bandwidth samples (B/s) of both directions for n bytes; raises on a wrong copy."""
    gen = torch.Generator(device="cuda").manual_seed(n)
    src_dev = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda", generator=gen)
    host = torch.empty(n, dtype=torch.uint8).pin_memory()
    dst_dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)

    def timed(dst, src):
        for _ in range(warmup):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        out = []
        for _ in range(repeats):
            # Hold the stream for about 1 ms so that the start event, the copy
            # and the stop event are all queued before the copy can start: the
            # events then time the copy, not the host's dispatch of copy_()
            # (the suite's gate kernel does the same).
            torch.cuda._sleep(2_000_000)
            start.record()
            dst.copy_(src, non_blocking=True)
            stop.record()
            stop.synchronize()
            out.append(n / (start.elapsed_time(stop) * 1e-3))
        return out

    host.fill_(0xA5)  # poison: a copy that never ran fails the check
    d2h = timed(host, src_dev)
    torch.cuda.synchronize()
    dst_dev.fill_(0xA5)
    h2d = timed(dst_dev, host)
    torch.cuda.synchronize()
    # H2D moved host's bytes to dst_dev; they equal src_dev only if D2H was right too.
    if not torch.equal(dst_dev, src_dev):
        raise RuntimeError("copies of %d bytes moved the wrong bytes" % n)
    del src_dev, host, dst_dev
    torch.cuda.empty_cache()
    return {"h2d": h2d, "d2h": d2h}


def suite_figures(path):
    """{(direction, bytes): median B/s} of the suite's pinned event-timed rows >= 64 MiB."""
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("experiment") != "pinned_vs_pageable" or row.get("variant") != "pinned":
                continue
            if row.get("status") != "ok" or not row.get("param_value") or not row.get("median"):
                continue
            for d, metric in SUITE_METRIC.items():
                n = int(float(row["param_value"]))
                if row.get("metric") == metric and n >= LARGE:
                    out[(d, n)] = float(row["median"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=10, help="timed copies per size and direction")
    ap.add_argument("--warmup", type=int, default=3, help="untimed copies first")
    ap.add_argument("--device", type=int, default=0, help="CUDA device number")
    ap.add_argument("--compare", metavar="PATH", help="the suite's pinned_vs_pageable.csv")
    a = ap.parse_args()
    if a.repeats < 1 or a.warmup < 0 or a.device < 0:
        ap.error("--repeats must be >= 1, --warmup and --device >= 0")

    suite = {}
    sizes = SIZES
    if a.compare:
        try:
            suite = suite_figures(a.compare)
        except OSError as e:
            print("copy_reference: cannot read %s: %s" % (a.compare, e), file=sys.stderr)
            return 2
        if not suite:
            print("copy_reference: no pinned event-timed rows >= 64 MiB in %s" % a.compare,
                  file=sys.stderr)
            return 2
        sizes = sorted({n for _, n in suite})

    import torch
    if not torch.cuda.is_available() or a.device >= torch.cuda.device_count():
        print("copy_reference: no CUDA device %d: waived" % a.device, file=sys.stderr)
        return 77
    torch.cuda.set_device(a.device)
    note = "torch %s, %s, dst.copy_(src, non_blocking=True) from pinned memory, torch.cuda.Event" % (
        torch.__version__, torch.cuda.get_device_name(a.device))

    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(HEADER)
    ours = {}
    for n in sizes:
        try:
            samples = measure(torch, n, a.repeats, a.warmup)
        except RuntimeError as e:
            print("copy_reference: %s" % e, file=sys.stderr)
            return 1
        for d in ("h2d", "d2h"):
            s = stats(samples[d])
            ours[(d, n)] = s["median"]
            w.writerow(["C03", "torch_copy_reference", "pinned_torch_events", "bytes", number(n),
                        "%s_bandwidth" % d, "B/s", number(s["n"]), number(s["median"]),
                        number(s["min"]), number(s["max"]), number(s["mean"]),
                        number(s["stdev"]), "ok", note])
            print("copy_reference: %s %s: %.2f GB/s" % (d, size_str(n), s["median"] / 1e9),
                  file=sys.stderr)
    sys.stdout.flush()

    if not a.compare:
        return 0
    worst = 0.0
    for (d, n), theirs in sorted(suite.items()):
        mine = ours[(d, n)]
        rel = (theirs - mine) / mine
        worst = max(worst, abs(rel))
        print("compare: %s %-8s suite %6.2f GB/s  torch %6.2f GB/s  diff %+6.2f%%  %s" % (
            d, size_str(n), theirs / 1e9, mine / 1e9, 100 * rel,
            "ok" if abs(rel) <= TOLERANCE else "BEYOND 3%"), file=sys.stderr)
    print("compare: largest difference %.2f%% (limit %.0f%%)" % (100 * worst, 100 * TOLERANCE),
          file=sys.stderr)
    return 1 if worst > TOLERANCE else 0


if __name__ == "__main__":
    sys.exit(main())
