#!/usr/bin/env python3
"""make_snapshot.py: a synthetic PyTorch memory snapshot whose answer is known,
for testing `make whatif` and the snapshot fixture check without a GPU.

    python3 tests/whatif/make_snapshot.py [--events N] [--block-mib M]
        [--max-live K] [--seed S] [--gzip] [--fixture] OUT.pickle[.gz]

--fixture also writes OUT.expected.tsv beside it, in the format of
tests/fixtures/snapshots/ (what tests/torch/make_snapshots.py records from
PyTorch), with the figures this construction implies: under each setting and
under two limits (one it fits at, one it runs out of memory at).

Writes what torch.cuda.memory._dump_snapshot() writes (a pickled dict with
"segments" and "device_traces"; standard library only), as PyTorch 2.11's
caching allocator would have recorded it for a training-like loop on one
stream: each iteration allocates a varying number of blocks of M MiB (like a
step whose sequence length changes), then frees them all. M MiB is a multiple
of 2 MiB and at least 10 MiB, so each request is one segment of exactly that
size (no rounding, no split) and a freed block serves the next request of the
same size exactly. Hence the run's peak allocated = peak reserved = (the most
blocks live at once) x M MiB, and the run fits a device of capacity C bytes
iff C >= that peak (with fewer bytes the retry frees only unused segments,
and the live ones alone exceed C). Prints that figure on stdout:

    peak_allocated=BYTES peak_reserved=BYTES events=N max_live=K

The trace entries follow CUDACachingAllocator.cpp's record_trace calls:
segment_alloc (addr, segment size) before the alloc that needed it; alloc
(addr, requested size); free_requested then free_completed (addr, requested
size) on free. No stack frames (as with context=None).
"""
import argparse
import gzip
import pickle
import random
import sys

MiB = 1 << 20


def build(events, block_bytes, max_live, seed):
    """Returns (trace entries, peak live blocks). Each iteration: allocate n
    blocks (n drawn from 1..max_live, and max_live in the first iteration so
    the peak is known), then free them in allocation order."""
    rng = random.Random(seed)
    trace = []
    free_addrs = []        # cached free segments (each one block of block_bytes)
    next_addr = 0x7f0000000000
    peak_live = 0
    first = True
    while len(trace) < events:
        n = max_live if first else rng.randint(1, max_live)
        first = False
        live = []
        for _ in range(n):
            if free_addrs:
                # PyTorch picks the lowest address among equal sizes.
                free_addrs.sort()
                addr = free_addrs.pop(0)
            else:
                addr = next_addr
                next_addr += block_bytes
                trace.append(dict(action="segment_alloc", addr=addr, size=block_bytes,
                                  stream=0, frames=[]))
            trace.append(dict(action="alloc", addr=addr, size=block_bytes, stream=0, frames=[]))
            live.append(addr)
        peak_live = max(peak_live, len(live))
        for addr in live:
            trace.append(dict(action="free_requested", addr=addr, size=block_bytes,
                              stream=0, frames=[]))
            trace.append(dict(action="free_completed", addr=addr, size=block_bytes,
                              stream=0, frames=[]))
            free_addrs.append(addr)
    return trace, peak_live


def segments_at_end(trace, block_bytes):
    """The "segments" list a snapshot taken at the end would hold: every
    segment cached and inactive (all blocks were freed)."""
    addrs = sorted(e["addr"] for e in trace if e["action"] == "segment_alloc")
    return [dict(device=0, address=a, total_size=block_bytes, allocated_size=0,
                 active_size=0, requested_size=0, stream=0, segment_type="large",
                 segment_pool_id=(0, 0), is_expandable=False, frames=[],
                 blocks=[dict(address=a, size=block_bytes, requested_size=0,
                              state="inactive", frames=[])])
            for a in addrs]


EXPECTED_HEADER = ("setting\tconf\tlimit_bytes\toutcome\tpeak_allocated\tpeak_reserved"
                   "\tnum_alloc_retries\tnum_ooms")


def expected_rows(peak, block):
    """The known figures: every setting leaves the peak as it is (one request
    = one whole segment; roundup_power2_divisions:4 keeps 20 MiB, expandable
    segments map 20 MiB pages); a limit of exactly the peak fits; a limit of
    half a block less runs out at the first request past floor(limit / block)
    blocks, with that many blocks allocated and reserved."""
    tight = peak - block // 2
    at_oom = tight // block * block
    return [("default", "", "", "fits", peak, peak, 0, 0),
            ("expandable_segments", "expandable_segments:True", "", "fits", peak, peak, 0, 0),
            ("max_split_64MiB", "max_split_size_mb:64", "", "fits", peak, peak, 0, 0),
            ("roundup_power2_4", "roundup_power2_divisions:4", "", "fits", peak, peak, 0, 0),
            ("limit_fits", "", peak, "fits", peak, peak, 0, 0),
            ("limit_oom", "", tight, "oom", at_oom, at_oom, 1, 1)]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--events", type=int, default=20000)
    p.add_argument("--block-mib", type=int, default=20)
    p.add_argument("--max-live", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gzip", action="store_true", help="gzip the pickle")
    p.add_argument("--fixture", action="store_true", help="also write OUT.expected.tsv")
    a = p.parse_args(argv)
    if a.block_mib < 10 or a.block_mib % 2:
        p.error("--block-mib must be even and at least 10 (one exact segment per request)")
    if a.events < 1 or a.max_live < 1:
        p.error("--events and --max-live must be at least 1")
    block = a.block_mib * MiB
    trace, peak_live = build(a.events, block, a.max_live, a.seed)
    snapshot = dict(segments=segments_at_end(trace, block), device_traces=[trace])
    opener = gzip.open if a.gzip else open
    with opener(a.out, "wb") as f:
        pickle.dump(snapshot, f, protocol=pickle.HIGHEST_PROTOCOL)
    peak = peak_live * block
    if a.fixture:
        stem = a.out[:-3] if a.out.endswith(".gz") else a.out
        stem = stem[:-7] if stem.endswith(".pickle") else stem
        with open(stem + ".expected.tsv", "w") as f:
            f.write(EXPECTED_HEADER + "\n")
            for row in expected_rows(peak, block):
                f.write("\t".join(str(v) for v in row) + "\n")
    print(f"peak_allocated={peak} peak_reserved={peak} events={len(trace)} max_live={peak_live}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
