"""beside_seeds.py: seed 000's programs as written (C01's and C07's), each run by
tests/torch/seed_programs.py in a process of its own, as the seed's
notebook runs them: started early by run_many.py (seed_program_start),
released and waited for before any counterpart is timed
(seed_programs_settle), their results read by the counterparts
(seed_program). Standard library only (subproc.py, here)."""
import os
import sys
import tempfile


SEED_TIMEOUT_S = 120


# Programs started early (seed_program_start): which -> {"proc": its Popen,
# "dir": its folder, "got": (exit code, timed out) once waited for, else None}.
_SEED_STARTED = {}


def _seed_script():
    return os.environ.get("MEMCLAIMS_SEED_PROGRAMS") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "seed_programs.py")


def _seed_env(device):
    env = dict(os.environ)
    if device and "CUDA_VISIBLE_DEVICES" not in env:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    return env


def _seed_result(which, funcs, rc, timed_out, d):
    """{function: (returned, allocated after)} from the folder d a program
    wrote; raises with its log's last line where it failed."""
    if timed_out or rc != 0:
        with open(os.path.join(d, "log"), errors="replace") as f:
            last = ([ln.strip() for ln in f if ln.strip()] or [""])[-1]
        raise RuntimeError("seed_programs.py --only %s %s: %s" % (
            which, "ran past %d s" % SEED_TIMEOUT_S if timed_out else "exited %s" % rc, last))
    with open(os.path.join(d, which + ".txt")) as f:
        kv = dict(line.strip().split("=", 1) for line in f if "=" in line)
    return {fn: (int(kv[fn + ".returned"]), int(kv[fn + ".allocated_after"])) for fn in funcs}


def seed_program_start(which, go_file, device=0):
    """Starts seed 000's program `which` now (run_many.py, as run-all's
    experiments begin): the process imports torch, ~5 s, then waits until
    go_file exists before its first CUDA call; seed_program() then reads
    what it wrote instead of starting one (C01's and C07's counterparts
    each paid the import, ~12 s of a run). seed_programs_settle() waits for
    it before any counterpart is timed."""
    import subproc  # noqa: E402 (beside's own module; only here)
    d = tempfile.TemporaryDirectory()
    env = _seed_env(device)
    env["MEMCLAIMS_SEED_PARENT"] = str(os.getpid())  # it ends, unrun, where this process ends first
    p = subproc.start([sys.executable, _seed_script(), d.name, "--only", which, "--go-file", go_file],
                      os.path.join(d.name, "log"), env)
    _SEED_STARTED[which] = {"proc": p, "dir": d, "got": None}


def seed_programs_settle(keep, go_file, meanwhile=None):
    """After run-all's go file: those started early whose program is not in
    keep are stopped unrun; then go_file (theirs) is written, and the
    others run and are waited for (SEED_TIMEOUT_S each), so that none runs
    beside a counterpart's timed steps; meanwhile(), where given, is called
    while they run (what times nothing: this process's CUDA context).
    Their results stay for seed_program()."""
    import subproc  # noqa: E402
    for which in [w for w in _SEED_STARTED if w not in keep]:
        s = _SEED_STARTED.pop(which)
        subproc.stop(s["proc"].pid)
        subproc.finish(s["proc"], SEED_TIMEOUT_S)
        s["dir"].cleanup()
    if not _SEED_STARTED:
        if meanwhile:
            meanwhile()
        return
    with open(go_file, "w"):
        pass
    if meanwhile:
        meanwhile()
    for s in _SEED_STARTED.values():
        s["got"] = subproc.finish(s["proc"], SEED_TIMEOUT_S)


def seed_program(args, which, funcs):
    """Seed 000's program `which` (c01, c07) as written, run by
    tests/torch/seed_programs.py --only WHICH in a process of its own (a
    fresh process's max_memory_allocated, as the seed's notebook; the
    environment's MEMCLAIMS_SEED_PROGRAMS names another script, for the
    tests), or the one seed_program_start() started: {function:
    (returned, allocated after)}; raises where it failed."""
    import subproc  # noqa: E402 (beside's own module; only here)
    if which in _SEED_STARTED:
        s = _SEED_STARTED.pop(which)
        rc, timed_out = s["got"] or subproc.finish(s["proc"], SEED_TIMEOUT_S)
        try:
            return _seed_result(which, funcs, rc, timed_out, s["dir"].name)
        finally:
            s["dir"].cleanup()
    with tempfile.TemporaryDirectory() as d:
        rc, timed_out = subproc.run([sys.executable, _seed_script(), d, "--only", which],
                                    os.path.join(d, "log"), SEED_TIMEOUT_S, _seed_env(args.device))
        return _seed_result(which, funcs, rc, timed_out, d)
