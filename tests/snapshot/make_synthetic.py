#!/usr/bin/env python3
"""make_synthetic: synthetic PyTorch memory snapshots for the snapshot2trace
tests, written with the standard library's pickle in the dict shapes that
torch.cuda.memory._dump_snapshot() writes (segments with blocks, one list of
trace entries per device; torch/cuda/_memory_viz.py reads the same keys).

  make_synthetic.py DIR              the scenario files below
  make_synthetic.py --big N FILE     one snapshot of about N events (speed test)

Files in DIR:
  s1.pickle, s1.expected.json  segments and blocks from before the history,
                               two streams, free_requested/free_completed, an
                               OOM, empty_cache; the figures a replay must give
                               (hand-computed from ALLOCATOR.md's rules, below)
  cut.pickle                   s1's history with its oldest events gone (as the
                               max_entries ring buffer leaves it)
  notsnap.pickle               a pickle that is not a snapshot (a list)
  text.pickle                  not a pickle at all
  trunc.pickle                 s1.pickle cut in half
"""
import json
import os
import pickle
import sys

MiB = 1 << 20
A = 0x7F0000000000          # a large segment from before the history (20 MiB)
B = A + 20 * MiB            # a small segment from before (2 MiB)
C = B + 2 * MiB             # the segment stream 7's first request makes (20 MiB)
S7 = 7                      # a side stream (cudaStream_t as an int)


def ev(action, addr, size, stream=0, **kw):
    e = {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": 0, "frames": []}
    e.update(kw)
    return e


def free(addr, requested, stream=0):
    """free() then free_block(): both record the requested size."""
    return [ev("free_requested", addr, requested, stream), ev("free_completed", addr, requested, stream)]


def block(addr, size, requested, state):
    return {"address": addr, "size": size, "requested_size": requested, "state": state, "frames": []}


def segment(addr, total, stream, kind, blocks):
    active = sum(b["size"] for b in blocks if b["state"].startswith("active"))
    return {"device": 0, "address": addr, "total_size": total, "stream": stream, "segment_type": kind,
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
            "allocated_size": active, "active_size": active,
            "requested_size": sum(b["requested_size"] for b in blocks if b["state"].startswith("active")),
            "blocks": blocks}


def s1():
    """Before the history: segment A (large, 20 MiB) holds X (4,000,000 B:
    a 4,000,256 B block, round_size), freed in the history; segment B (small,
    2 MiB) holds Y (1,000 B: 1,024 B), live at the dump.
    Reserved 22 MiB, allocated 4,001,280 B at the start.

    step  event                                  allocated   reserved
     1  alloc id1 4e6 s0 -> A+4000256 (best fit:  8,001,536  22 MiB
        A's back 16,971,264 B, split: > 1 MiB left)
     2  alloc id2 4e6 s7 -> new segment C         12,001,792  42 MiB  <- peaks
        (stream 7's pool is empty: segment_alloc)
     3  free X (A)                                 8,001,536
     4  alloc id3 3e6 s7 -> C+4000256: X's block   11,001,600
        (4,000,256 B, the best fit by size) is stream 0's, not 7's
     5  free id2                                   7,001,344
     6  alloc id4 4e6 s0 -> A (X's block, exact)   11,001,600
     7  oom: 100 GiB s0 refused (retry: nothing whole to release)
     8  free id1, 9 free id4: A whole again         3,001,088
    10  free id3: C whole again                        1,024
    11  empty_cache: A and C go (B keeps Y)                       2 MiB
    12  alloc id5 500 B s0 -> B+1024                   1,536
    At the reserved peak (step 2): free 44,040,192 - 12,001,792 = 32,038,400 B;
    the largest free block C's back, 20 MiB - 4,000,256 = 16,971,264 B."""
    x_req, x_blk = 4000000, 4000256
    hist = [
        ev("alloc", A + x_blk, 4000000),                                   # 1 id1
        ev("segment_alloc", C, 20 * MiB, S7), ev("alloc", C, 4000000, S7),  # 2 id2
        *free(A, x_req),                                                   # 3 X
        ev("alloc", C + x_blk, 3000000, S7),                               # 4 id3
        *free(C, 4000000, S7),                                             # 5 id2
        ev("alloc", A, 4000000),                                           # 6 id4
        {"action": "oom", "device_free": 1 << 30, "size": 100 << 30, "stream": 0, "time_us": 0,
         "frames": []},                                                    # 7
        *free(A + x_blk, 4000000),                                         # 8 id1
        *free(A, 4000000),                                                 # 9 id4
        *free(C + x_blk, 3000000, S7),                                     # 10 id3
        ev("segment_free", A, 20 * MiB), ev("segment_free", C, 20 * MiB, S7),  # 11 empty_cache
        ev("alloc", B + 1024, 500),                                        # 12 id5
    ]
    segs = [segment(B, 2 * MiB, 0, "small", [
        block(B, 1024, 1000, "active_allocated"), block(B + 1024, 512, 500, "active_allocated"),
        block(B + 1536, 2 * MiB - 1536, 0, "inactive")])]
    snap = {"segments": segs, "device_traces": [hist],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""}}
    expected = {"steps": 12, "peak_allocated": 12001792, "peak_reserved": 44040192,
                "alloc_retries": 1, "ooms": 1, "after_first_oom": {"alloc_retries": 0, "ooms": 0},
                "first_oom_step": 7, "first_oom_bytes": 100 << 30,
                "segments_peak": 3, "largest_free_at_peak_reserved": 16971264,
                "free_at_peak_reserved": 32038400, "expected_ooms": 1, "expected_ooms_granted": 0,
                "unexpected_ooms": 0, "addr_mismatches": 0}
    return snap, expected


def cut(snap):
    """The ring buffer kept only the newest events: here everything from X's
    free_completed on (its free_requested, and id1's and id2's allocs, are gone)."""
    hist = snap["device_traces"][0]
    k = next(i for i, e in enumerate(hist) if e["action"] == "free_completed")
    return {"segments": snap["segments"], "device_traces": [hist[k:]]}


def big(n, path):
    """About n events: four streams, each a ring of 16 live tensors of a few
    sizes, allocated and freed in turn; a segment_alloc where a stream first
    needs one. Addresses follow a simple scheme (not the allocator's choice:
    the replay counts them as mismatches), which is all a speed test needs."""
    hist = []
    sizes = [4000000, 700000, 25000000, 1200, 3000000, 65536]
    base = {s: A + s * (1 << 36) for s in range(4)}
    rings = {s: [] for s in range(4)}
    i = 0
    while len(hist) < n:
        s = i % 4
        size = sizes[(i // 4) % len(sizes)]
        addr = base[s] + (i % 4096) * 32 * MiB
        if i < 4:
            hist.append(ev("segment_alloc", base[s], 20 * MiB, s))
        if len(rings[s]) == 16:
            a, r = rings[s].pop(0)
            hist.extend(free(a, r, s))
        rings[s].append((addr, size))
        hist.append(ev("alloc", addr, size, s))
        i += 1
    with open(path, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [hist]}, f, protocol=4)


def main(argv):
    if len(argv) == 4 and argv[1] == "--big":
        big(int(argv[2]), argv[3])
        return 0
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    d = argv[1]
    os.makedirs(d, exist_ok=True)
    snap, expected = s1()
    with open(os.path.join(d, "s1.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=4)
    with open(os.path.join(d, "s1.expected.json"), "w") as f:
        json.dump(expected, f)
    with open(os.path.join(d, "cut.pickle"), "wb") as f:
        pickle.dump(cut(snap), f, protocol=4)
    with open(os.path.join(d, "notsnap.pickle"), "wb") as f:
        pickle.dump([1, 2, 3], f)
    with open(os.path.join(d, "text.pickle"), "w") as f:
        f.write("step,op,id\n1,alloc,1\n")
    data = open(os.path.join(d, "s1.pickle"), "rb").read()
    with open(os.path.join(d, "trunc.pickle"), "wb") as f:
        f.write(data[: len(data) // 2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
