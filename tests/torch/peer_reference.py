#!/usr/bin/env python3
"""peer_reference.py: what PyTorch does with tensors on two GPUs, beside C22
(peer_copy). Run it on a machine with two GPUs:

    python3 tests/torch/peer_reference.py > peer_reference.csv

1. tensor.to("cuda:1") of a uint8 tensor on cuda:0 (and back, .to("cuda:0")),
   sizes 4 KiB x 16^k up to 1 GiB, timed with torch.cuda.Event on the source
   device's current stream after a warm-up, median of 7 (3 at 1 GiB); the
   result checked byte for byte against the source. Whether PyTorch's copy
   went peer-to-peer is its own business (it enables peer access where
   cudaDeviceCanAccessPeer allows); torch.cuda.can_device_access_peer is
   recorded beside it.
2. a + b with a on cuda:0 and b on cuda:1: the exact text of the error
   PyTorch raises (a `finding` row), or a row saying it did not raise.

Tidy CSV rows in the suite's format go to stdout (claim C22, experiment
torch_peer_reference; variant to_cuda, metric gpu0_to_gpu1_bandwidth /
gpu1_to_gpu0_bandwidth in B/s). NCCL is not involved.

Exit: 0 ok, 1 a copy moved the wrong bytes, 77 fewer than two GPUs or no
torch. Standard library and torch only.
"""
import math
import statistics
import sys

HEADER = ("claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,"
          "mean,stdev,status,note")
KIB = 1 << 10
SIZES = [4 * KIB * 16 ** k for k in range(5)] + [1 << 30]  # 4 KiB .. 256 MiB, then 1 GiB
REPEATS, REPEATS_GIB, WARMUP = 7, 3, 2


def number(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if float(v).is_integer() and abs(v) < 2 ** 53:
        return str(int(v))
    return "%.10g" % v


def csv_field(s):
    s = str(s).replace("\n", " ")
    return '"%s"' % s.replace('"', '""') if any(c in s for c in ',"') else s


def row(variant, param, value, metric, unit, xs, status, note):
    if xs:
        st = [len(xs), statistics.median(xs), min(xs), max(xs), statistics.fmean(xs),
              statistics.stdev(xs) if len(xs) > 1 else 0.0]
    else:
        st = [0, None, None, None, None, None]
    print(",".join(["C22", "torch_peer_reference", variant, param, number(value), metric, unit]
                   + [number(v) for v in st] + [status, csv_field(note)]))


def main():
    try:
        import torch
    except ImportError:
        print("peer_reference: torch is not installed here: waived", file=sys.stderr)
        return 77
    if torch.cuda.device_count() < 2:
        print("peer_reference: needs two GPUs, found %d: waived" % torch.cuda.device_count(),
              file=sys.stderr)
        return 77
    print(HEADER)
    d0, d1 = torch.device("cuda", 0), torch.device("cuda", 1)
    row("link", "", 0, "can_device_access_peer", "flag",
        [float(torch.cuda.can_device_access_peer(0, 1))], "ok", "torch.cuda.can_device_access_peer(0, 1)")
    bad = 0
    for src_dev, dst_dev, metric in ((d0, d1, "gpu0_to_gpu1_bandwidth"),
                                     (d1, d0, "gpu1_to_gpu0_bandwidth")):
        for n in SIZES:
            gen = torch.Generator(device=src_dev).manual_seed(22)
            src = torch.randint(0, 256, (n,), dtype=torch.uint8, device=src_dev, generator=gen)
            reps = REPEATS_GIB if n >= 1 << 30 else REPEATS
            xs = []
            with torch.cuda.device(src_dev):
                start = torch.cuda.Event(enable_timing=True)
                stop = torch.cuda.Event(enable_timing=True)
                for i in range(WARMUP + reps):
                    torch.cuda.synchronize(src_dev)
                    torch.cuda.synchronize(dst_dev)
                    start.record()
                    dst = src.to(dst_dev)
                    stop.record()
                    stop.synchronize()
                    torch.cuda.synchronize(dst_dev)
                    if i >= WARMUP:
                        xs.append(n / (start.elapsed_time(stop) / 1e3))
                    if i == WARMUP + reps - 1 and not torch.equal(dst.to(src_dev), src):
                        bad += 1
                    del dst
            row("to_cuda", "bytes", n, metric, "B/s", xs, "ok",
                "tensor.to(other GPU), events on the source device's current stream")
            del src
            torch.cuda.empty_cache()
    a = torch.ones(4, device=d0)
    b = torch.ones(4, device=d1)
    try:
        _ = a + b
        row("", "", 0, "finding", "", [], "ok", "a (cuda:0) + b (cuda:1) did not raise")
    except RuntimeError as e:
        row("", "", 0, "finding", "", [], "ok",
            "a (cuda:0) + b (cuda:1) raises RuntimeError: %s" % str(e).strip())
    if bad:
        print("peer_reference: %d copies moved the wrong bytes" % bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
