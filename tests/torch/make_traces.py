#!/usr/bin/env python3
"""make_traces.py: record allocator traces from PyTorch's real CUDA caching
allocator, with PyTorch's own figures after every step, as fixtures for
build/replay (tests/replay-fixtures.sh compares every column of every row).

    python3 tests/torch/make_traces.py OUTDIR [NAME ...] [--serial]

NAME picks scenarios (default: all seven: six random ones, and seed_claims,
the seeds' own sequences as C01 and C02 run them); --serial runs them one at
a time.

Needs a CUDA GPU and PyTorch (written against 2.11). Each scenario runs in a
fresh Python process: PYTORCH_CUDA_ALLOC_CONF is read when CUDA initialises,
and the memory-fraction limit is per process. A scenario draws a random
operation sequence from a fixed seed, runs each operation through PyTorch
(torch.empty(n, dtype=torch.uint8, device='cuda'), del, empty_cache,
reset_peak_memory_stats), records memory_stats() after it and each new
tensor's data_ptr(), and writes OUTDIR/NAME.trace (memclaims-trace v1) and
OUTDIR/NAME.expected.csv (exactly build/replay's CSV). An allocation that
raises torch.OutOfMemoryError is recorded as status oom and never freed.
Prints one line per scenario; exits 1 if any scenario failed.
"""
import os
import random
import subprocess
import sys
import time

MiB = 1 << 20
GiB = 1 << 30

# build/replay's header (common/replay.h CA_REPLAY_HEADER) and where each
# figure comes from in torch.cuda.memory_stats().
HEADER = ("step,op,id,bytes,status,allocated,reserved,peak_allocated,peak_reserved,segments,"
          "active,inactive_split_bytes,inactive_split,requested,num_alloc_retries,num_ooms")
STAT_KEYS = [
    "allocated_bytes.all.current", "reserved_bytes.all.current",
    "allocated_bytes.all.peak", "reserved_bytes.all.peak", "segment.all.current",
    "active_bytes.all.current", "inactive_split_bytes.all.current",
    "inactive_split.all.current", "requested_bytes.all.current",
    "num_alloc_retries", "num_ooms",
]

BOUNDARIES = sorted({
    1, 2, 511, 512, 513, 1023, 1024, 1025, 4000000, 25000000,
    MiB - 512, MiB - 1, MiB, MiB + 1, MiB + 512,
    2 * MiB - 1, 2 * MiB, 2 * MiB + 1,
    10 * MiB - 512, 10 * MiB - 1, 10 * MiB, 10 * MiB + 1, 10 * MiB + 512,
    19 * MiB - 512, 19 * MiB, 19 * MiB + 1, 20 * MiB - 1, 20 * MiB, 20 * MiB + 1,
    64 * MiB - 1, 64 * MiB, 64 * MiB + 1, 84 * MiB - 1, 84 * MiB, 84 * MiB + 1,
} | {k * 2 * MiB + d for k in range(6, 41) for d in (-1, 0, 1)})


def log_uniform(rng, lo, hi):
    return min(hi, max(lo, int(lo * (hi / lo) ** rng.random())))


# Each scenario: steps, seed, allocator settings, size generator, and the
# operation mix (p_alloc: chance of allocating rather than freeing while the
# budget allows; budget: live bytes the generator aims to stay under;
# p_empty / p_reset: chance of empty_cache / reset_peak_memory_stats).
def sizes_small(rng):
    return rng.choice(BOUNDARIES[:12]) if rng.random() < 0.1 else log_uniform(rng, 1, MiB)


def sizes_mixed(rng):
    return log_uniform(rng, 1, 512 * MiB)


def sizes_boundary(rng):
    return rng.choice(BOUNDARIES)


def sizes_split(rng):
    u = rng.random()
    if u < 0.3:
        return log_uniform(rng, MiB, 64 * MiB)
    if u < 0.6:
        return 64 * MiB + rng.randrange(-24 * MiB, 24 * MiB)  # around max_split_size
    return log_uniform(rng, 64 * MiB, 300 * MiB)


def sizes_limit(rng):
    return log_uniform(rng, 1, MiB) if rng.random() < 0.2 else log_uniform(rng, MiB, 400 * MiB)


def sizes_churn(rng):
    return log_uniform(rng, 1, 64 * MiB)


def seed_claims_script():
    """The seeds' own sequences, as the suite's C01 and C02 run them: the
    100-tensor loop of seed 000 kept, freed each step, and freed with
    empty_cache each step; then C02's request sizes, each on an emptied cache,
    and two 4-byte tensors sharing one segment. Yields (op, bytes or ref)."""
    f32 = 1000 * 1000 * 4
    for i in range(100):
        yield ("alloc", f32)
    for i in range(100):
        yield ("free_oldest", None)
    yield ("empty_cache", None)
    yield ("reset_peak", None)
    for with_empty in (False, True):
        for i in range(100):
            yield ("alloc", f32)
            yield ("free_oldest", None)
            if with_empty:
                yield ("empty_cache", None)
        yield ("empty_cache", None)
        yield ("reset_peak", None)
    for size in (1, 4, 511, 512, 513, MiB - 1, MiB, MiB + 1, 4000000, 10 * MiB - 1,
                 10 * MiB, 10 * MiB + 1, 20 * MiB - 1, 20 * MiB + 1, 25000000,
                 100 * MiB, 300 * MiB, 8000000):
        yield ("alloc", size)
        yield ("free_oldest", None)
        yield ("empty_cache", None)
        yield ("reset_peak", None)
    yield ("alloc", 4)
    yield ("alloc", 4)


SCENARIOS = {
    "small":      dict(steps=2500, seed=11, sizes=sizes_small, p_alloc=0.55, budget=256 * MiB,
                       max_live=2000, p_empty=0.002, p_reset=0.002),
    "mixed":      dict(steps=2500, seed=12, sizes=sizes_mixed, p_alloc=0.55, budget=3 * GiB,
                       max_live=400, p_empty=0.005, p_reset=0.005),
    "boundary":   dict(steps=2000, seed=13, sizes=sizes_boundary, p_alloc=0.55, budget=2 * GiB,
                       max_live=400, p_empty=0.01, p_reset=0.01),
    "max_split":  dict(steps=1500, seed=14, sizes=sizes_split, p_alloc=0.6, budget=3 * GiB,
                       max_live=200, p_empty=0.005, p_reset=0.005,
                       conf="max_split_size_mb:64", limit_bytes=2 * GiB),
    "limit":      dict(steps=1500, seed=15, sizes=sizes_limit, p_alloc=0.6, budget=2 * GiB,
                       max_live=200, p_empty=0.005, p_reset=0.005, limit_bytes=GiB),
    "seed_claims": dict(steps=0, seed=0, script=seed_claims_script, budget=GiB, max_live=200,
                        p_empty=0, p_reset=0, p_alloc=1, sizes=None),
    "churn":      dict(steps=1500, seed=16, sizes=sizes_churn, p_alloc=0.55, budget=GiB,
                       max_live=300, p_empty=0.1, p_reset=0.1),
}


# ---------------------------------------------------------------- child

def run_child(name, outdir):
    import torch

    sc = SCENARIOS[name]
    if not torch.cuda.is_available():
        sys.exit("make_traces: no CUDA device visible to PyTorch")
    torch.cuda.init()
    dev = torch.cuda.current_device()
    total = torch.cuda.mem_get_info(dev)[1]
    settings = []
    if "limit_bytes" in sc:
        fraction = sc["limit_bytes"] / total
        torch.cuda.set_per_process_memory_fraction(fraction, dev)
        # setMemoryFraction: static_cast<size_t>(fraction * double(total)),
        # where total is cudaMemGetInfo's, as mem_get_info returns it.
        settings.append(f"set limit {int(fraction * total)}")
    stats = torch.cuda.memory_stats(dev)
    if "conf" in sc:
        want = int(sc["conf"].split(":")[1]) * MiB
        got = stats.get("max_split_size", -1)
        if got != want:
            sys.exit(f"make_traces: {name}: max_split_size reads {got}, expected {want}: "
                     "PYTORCH_CUDA_ALLOC_CONF was not applied")
        settings.append(f"set max_split_size {want}")
    for key in ("allocated_bytes.all.current", "reserved_bytes.all.current"):
        if stats.get(key, 0) != 0:
            sys.exit(f"make_traces: {name}: {key} is {stats[key]} before the first step")

    oom_error = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    rng = random.Random(sc["seed"])
    live = {}            # id -> tensor
    live_bytes = {}      # id -> bytes requested
    total_live = 0
    next_id = 1
    lines, rows = [], []
    ooms = 0
    t0 = time.monotonic()
    script = list(sc["script"]()) if "script" in sc else None
    nsteps = len(script) if script is not None else sc["steps"]
    for step in range(1, nsteps + 1):
        u = rng.random()
        op, ident, nbytes, status, addr = None, "", "", "ok", None
        if script is not None:
            sop, ssize = script[step - 1]
            if sop == "free_oldest":
                op = "free"
                ident = min(live)
                del live[ident]
                total_live -= live_bytes.pop(ident)
            elif sop in ("empty_cache", "reset_peak"):
                op = sop
                if op == "empty_cache":
                    torch.cuda.empty_cache()
                else:
                    torch.cuda.reset_peak_memory_stats(dev)
            else:
                op, ident, nbytes = "alloc", next_id, ssize
                next_id += 1
                t = torch.empty(ssize, dtype=torch.uint8, device="cuda")
                addr = t.data_ptr()
                live[ident] = t
                live_bytes[ident] = ssize
                total_live += ssize
                del t
        elif u < sc["p_empty"]:
            op = "empty_cache"
            torch.cuda.empty_cache()
        elif u < sc["p_empty"] + sc["p_reset"]:
            op = "reset_peak"
            torch.cuda.reset_peak_memory_stats(dev)
        else:
            size = sc["sizes"](rng)
            room = total_live + size <= sc["budget"] and len(live) < sc["max_live"]
            if live and (not room or rng.random() >= sc["p_alloc"]):
                op = "free"
                ident = rng.choice(list(live))
                del live[ident]
                total_live -= live_bytes.pop(ident)
            else:
                op, ident, nbytes = "alloc", next_id, size
                next_id += 1
                try:
                    t = torch.empty(size, dtype=torch.uint8, device="cuda")
                    addr = t.data_ptr()
                    live[ident] = t
                    live_bytes[ident] = size
                    total_live += size
                    del t
                except oom_error:
                    status = "oom"
                    ooms += 1
        s = torch.cuda.memory_stats(dev)
        if op == "alloc":
            lines.append(f"alloc {ident} {nbytes}" + (f" {addr:#x}" if addr is not None else ""))
        elif op == "free":
            lines.append(f"free {ident}")
        else:
            lines.append(op)
        rows.append(",".join([str(step), op, str(ident), str(nbytes), status] +
                             [str(int(s.get(k, 0))) for k in STAT_KEYS]))
    elapsed = time.monotonic() - t0

    gpu = torch.cuda.get_device_name(dev)
    head = [
        "# memclaims-trace v1",
        f"# recorded by tests/torch/make_traces.py, scenario {name} (seed {sc['seed']}),",
        f"# PyTorch {torch.__version__}, CUDA {torch.version.cuda}, {gpu}, "
        f"total memory {total} bytes" +
        (f", PYTORCH_CUDA_ALLOC_CONF={sc['conf']}" if "conf" in sc else ""),
    ]
    with open(os.path.join(outdir, name + ".trace"), "w") as f:
        f.write("\n".join(head + settings + lines) + "\n")
    with open(os.path.join(outdir, name + ".expected.csv"), "w") as f:
        f.write("\n".join([HEADER] + rows) + "\n")
    print(f"{name}: {nsteps} steps, {ooms} OOMs, {next_id - 1} allocations, "
          f"{elapsed:.1f} s on {gpu}", flush=True)


# ---------------------------------------------------------------- parent

def main(argv):
    if len(argv) >= 4 and argv[1] == "--child":
        run_child(argv[2], argv[3])
        return 0
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) < 1 or "--help" in argv:
        print(__doc__.strip())
        return 2 if len(args) < 1 else 0
    outdir, only = args[0], args[1:]
    names = [n for n in SCENARIOS if not only or n in only]
    if only and len(names) != len(only):
        print(f"make_traces: unknown scenario in {only}; known: {' '.join(SCENARIOS)}")
        return 2
    os.makedirs(outdir, exist_ok=True)
    t0 = time.monotonic()

    def command(name):
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        env.pop("PYTORCH_ALLOC_CONF", None)
        if "conf" in SCENARIOS[name]:
            env["PYTORCH_CUDA_ALLOC_CONF"] = SCENARIOS[name]["conf"]
        return [sys.executable, os.path.abspath(__file__), "--child", name, outdir], env

    # One GPU, one process per scenario (each keeps its own allocator), all at
    # once unless --serial; whatever fails in parallel is retried alone (a GPU
    # in exclusive-process mode takes one process at a time).
    failed = names
    if "--serial" not in argv:
        procs = [(n, subprocess.Popen(command(n)[0], env=command(n)[1])) for n in names]
        failed = [n for n, p in procs if p.wait(timeout=600) != 0]
        if failed:
            print(f"make_traces: retrying one at a time: {' '.join(failed)}", flush=True)
    failed = [n for n in failed if subprocess.run(command(n)[0], env=command(n)[1], timeout=600).returncode != 0]
    print(f"make_traces: {len(names) - len(failed)} of {len(names)} scenarios written to "
          f"{outdir} in {time.monotonic() - t0:.1f} s" + (f"; failed: {' '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
