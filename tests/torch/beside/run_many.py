#!/usr/bin/env python3
"""run_many.py: PyTorch's counterparts of a run's claims (tests/torch/beside/
KEY.py), all in this one process, for scripts/run-all (lib/beside.sh): torch's
import, the CUDA context, cuBLAS and cuDNN are set up once instead of once
per claim, and a training configuration two claims share is measured once
(beside.py's record). By hand:

    python3 tests/torch/beside/run_many.py --run RUN --out DIR [--quick]
        [--budget-s S] [--timeout-s N] [KEY ...]

For each KEY (default: every KEY.py here whose RUN/KEY.csv exists), in the
order of SHARE below, its module's main() is called with --suite-csv RUN/KEY.csv
and --csv-header (that CSV's first line), --quick as given, and --budget-s
(its share of S, below); what it prints goes to DIR/KEY.rows (its rows) and
DIR/KEY.log (its progress), DIR/timeline.tsv when it passed each phase
(Timeline), and DIR/progress.tsv gets "KEY<TAB>start" when
it starts and "KEY<TAB>STATE<TAB>CODE<TAB>SECONDS" when it ends: STATE ran
(main returned 0), waived (77), failed (any other code, or an exception:
its last line in the log). A key that runs past --timeout-s (default 300)
ends the process (exit 124) with "KEY<TAB>timeout<TAB>124<TAB>SECONDS": the
caller starts another for the keys after it. A key after which CUDA no
longer answers ends the process (exit 3) after its line: the others would
fail on the same context.

--budget-s S (0: none): the time the counterparts of a one-GPU run
together may take, handed out by SHARE (each one's seconds in the first
full H100 run with PyTorch beside): a counterpart's allowance is S * (its
share and those before it) / (the shares' sum) less the time already spent,
so what one leaves is the next one's, and one that overran takes from
those after it: the counterparts end near S, or where their first points
(those measured whatever the budget, C25's cold torch.compile last) end.
Within it, a counterpart measures first the
points its verdict row names and skips the rest, in rows that say so, once
its allowance is spent. C24's (sharded_training, MULTI_GPU) comes on top:
it runs only where the suite's C24 measured on several GPUs (run-all
leaves a waived claim out; given a one-GPU run it waives at once, and its
share goes to no one), and then its share scales S by (sum + its share) /
sum; on one GPU it costs nothing.

--go-file F: torch is imported first (and, where C25's counterpart is among
the keys, Dynamo and Inductor), with no CUDA call; then the process waits
until F exists. A number on F's first line replaces --budget-s; a second
line, where there is one, names the keys to measure (space-separated, a
subset of those given; empty: none). Then the CUDA context is made and
the keys run. run-all starts this process so as its experiments begin, on
every claim with a counterpart, and writes F when they end, with what is
left of its time target and the claims whose experiment was not waived:
the ~10 s of torch's start overlap experiments whose verdicts read memory
only, and nothing of it touches the GPU while the suite measures. Seed
000's programs (C01's and C07's counterparts run each in a process of its
own) are started then too: they import torch and wait; once F exists,
one whose claim F's keys leave out is stopped unrun, the others run
(F.seeds, written here, lets them) and are waited for before the first
counterpart, so none runs beside a timed step; this process makes its
CUDA context while they run.

A counterpart may run commands (sharded_training.py runs torchrun through
subproc.py, each in a session of its own): past --timeout-s, or on
SIGTERM, their whole process trees are stopped before this process ends.

torch.compile's caches are kept between runs (keep_compile_caches): in
~/.cache/memclaims/torchinductor unless TORCHINDUCTOR_CACHE_DIR names one.

Exit: 0 every key ended (whatever its state); 2 usage; 3 CUDA stopped
answering; 124 a key timed out; 77 no torch or no CUDA device (one line,
nothing run). Standard library and torch only.
"""
import argparse
import contextlib
import gc
import importlib
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The counterparts, in the order they run (the suite's, but C25 last: run
# first, its torch.compile's timed steps read slower: on one H100, 0.86x
# eager first against 1.20x after C05's points, and 0.73x and 0.81x in the
# reference runs made so, against 1.05x last before), with each one's
# seconds in the first full H100 run with PyTorch beside (416be3e, budget
# 65 s, logs/pytorch.tsv), C24's on two H100s (1da3c6a): what --budget-s
# hands out. C25's key point (seed 000's compile, ~35 s cold on an H100)
# is measured whatever is left: the budget's end is not a hard stop.
# C01's (seed 000's program in a process of its own: torch's import and the
# loop, ~6 s) is an estimate, not yet from a run.
SHARE = [("del_empty_cache", 6.0), ("pinned_vs_pageable", 3.8), ("sync_vs_async_timing", 0.8),
         ("mixed_precision", 16.0), ("grad_accumulation", 5.7), ("checkpointing", 1.3), ("optimizer_state", 1.0),
         ("nonblocking_copy", 4.1), ("prefetch_overlap", 2.7), ("activation_offload", 8.4),
         ("sharded_training", 75.3), ("no_grad_eval", 2.4), ("compile_fusion", 37.6)]
ORDER = [k for k, _ in SHARE]
# Those that run only on several GPUs: their shares come on top of S (above).
MULTI_GPU = ("sharded_training",)
TOTAL_SHARE = sum(s for k, s in SHARE if k not in MULTI_GPU)  # the one-GPU shares' sum
NOT_KEYS = ("beside", "beside_idle", "beside_refs", "beside_seeds", "beside_spread", "run_many",
            "subproc")  # modules here that are not counterparts
DEFAULT_TIMEOUT_S = 300


def parse(argv):
    ap = argparse.ArgumentParser(prog="run_many.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="the run folder: RUN/KEY.csv are the suite's CSVs")
    ap.add_argument("--out", required=True, help="folder for KEY.rows, KEY.log and progress.tsv")
    ap.add_argument("--quick", action="store_true", help="pass --quick (the run's)")
    ap.add_argument("--budget-s", type=float, default=0.0, help="seconds all of them may take (0: no limit)")
    ap.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S,
                    help="seconds one may take before this process ends (default %d)" % DEFAULT_TIMEOUT_S)
    ap.add_argument("--go-file", help="wait for this file before the first key; a number in it is --budget-s")
    ap.add_argument("keys", nargs="*", help="the counterparts (default: every one with a CSV in RUN)")
    a = ap.parse_args(argv)
    if not a.budget_s >= 0 or not a.timeout_s > 0:
        ap.error("--budget-s must be >= 0 and --timeout-s > 0")
    if not os.path.isdir(a.run) or not os.path.isdir(a.out):
        ap.error("--run and --out must be folders")
    if not a.keys:
        a.keys = [k for k in ORDER if os.path.isfile(os.path.join(a.run, k + ".csv"))]
    a.keys = sorted(dict.fromkeys(a.keys), key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER))
    bad = [k for k in a.keys if not os.path.isfile(os.path.join(HERE, k + ".py")) or k in NOT_KEYS]
    if bad:
        ap.error("no counterpart %s in %s" % (", ".join(bad), HERE))
    return a


def allowance(key, done_keys, budget_s, t0):
    """key's --budget-s: its cumulative share of budget_s less what was spent."""
    if budget_s <= 0:
        return 0.0
    share = dict(SHARE)
    cum = sum(share.get(k, 0.0) for k in done_keys + [key])
    return max(1.0, budget_s * cum / TOTAL_SHARE - (time.monotonic() - t0))


def last_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [x.strip() for x in f if x.strip()]
        return lines[-1][:200] if lines else ""
    except OSError:
        return ""


class Watchdog:
    """Ends the process (exit 124) when one key runs past its limit, after
    writing its progress line and stopping the commands it runs
    (subproc.py): a hang in CUDA, Python or torchrun must not hold run-all,
    nor leave a rank holding a GPU."""

    def __init__(self, progress, limit_s, subproc):
        self.progress, self.limit_s, self.subproc = progress, limit_s, subproc
        self.key, self.t0 = None, 0.0
        self.lock = threading.Lock()
        t = threading.Thread(target=self.watch, daemon=True)
        t.start()

    def arm(self, key):
        with self.lock:
            self.key, self.t0 = key, time.monotonic()

    def disarm(self):
        with self.lock:
            self.key = None

    def watch(self):
        while True:
            time.sleep(0.2)
            with self.lock:
                if self.key is not None and time.monotonic() - self.t0 > self.limit_s:
                    self.progress.write("%s\ttimeout\t124\t%.1f\n" % (self.key, time.monotonic() - self.t0))
                    self.progress.flush()
                    self.subproc.stop_all()
                    os._exit(124)


def cuda_init(torch):
    """The CUDA context, where torch sees a device (once: a second call
    does nothing); no error here (main() says why it waives)."""
    with contextlib.suppress(Exception):
        if torch.cuda.is_available():
            torch.cuda.init()


def cuda_answers(torch):
    try:
        torch.cuda.synchronize()
        return True
    except Exception:
        return False


def run_key(key, a, allow):
    """One counterpart: (state, code)."""
    csv_path = os.path.join(a.run, key + ".csv")
    with open(csv_path, errors="replace") as f:
        header = f.readline().strip()
    argv = ["--suite-csv", csv_path, "--csv-header", header] + (["--quick"] if a.quick else [])
    if allow > 0:
        argv += ["--budget-s", "%.1f" % allow]
    # Line-buffered: what a key wrote survives the process's sudden end.
    rows = open(os.path.join(a.out, key + ".rows"), "w", buffering=1)
    log = open(os.path.join(a.out, key + ".log"), "w", buffering=1)
    code = 0
    try:
        with contextlib.redirect_stdout(rows), contextlib.redirect_stderr(log):
            try:
                mod = importlib.import_module(key)
                code = mod.main(argv)
                code = 0 if code is None else int(code)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
                if not isinstance(e.code, int) and e.code is not None:
                    print(e.code, file=sys.stderr)
            except BaseException as e:  # noqa: B902 (one key's crash is its failed row, not run-all's)
                if isinstance(e, KeyboardInterrupt):
                    raise
                code = 1
                msg = str(e).strip().split("\n")[0][:200]
                print("%s: %s" % (type(e).__name__, msg) if msg else type(e).__name__, file=sys.stderr)
    finally:
        rows.close()
        log.close()
    return ("ran" if code == 0 else "waived" if code == 77 else "failed"), code


# The counterparts that run one of seed 000's programs in a process of its
# own (beside_seeds.seed_program), started with this process where it has a go
# file; C07's only in a full run (the suite's C07 --quick runs none).
SEED_PROGRAM_OF = {"del_empty_cache": "c01", "grad_accumulation": "c07"}
SEED_PROGRAM_FULL_ONLY = {"grad_accumulation"}


def prepare(keys):
    """What every key would pay first, paid while run-all's experiments
    run: torch's import, and Dynamo's and Inductor's where C25's
    counterpart will compile. No CUDA call (the suite is measuring).
    Returns torch, or raises ImportError."""
    import torch
    if "compile_fusion" in keys:
        try:
            importlib.import_module("torch._dynamo")
            importlib.import_module("torch._inductor")
        except Exception:  # noqa: BLE001 (C25's counterpart says why, as a failed row)
            pass
    return torch


def wait_for_go(path, budget_s, keys):
    """Waits until path exists (run-all writes it when its experiments have
    ended); returns (budget, keys): the number on its first line, else
    budget_s; the keys its second line names, in keys' order, else keys."""
    while not os.path.exists(path):
        time.sleep(0.05)
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError:
        return budget_s, keys
    try:
        got = float(lines[0].strip()) if lines[0].strip() else budget_s
        budget_s = got if got >= 0 else budget_s
    except ValueError:
        pass
    if len(lines) > 1 and lines[1:] != [""]:
        named = set(lines[1].split())
        keys = [k for k in keys if k in named]
    return budget_s, keys


def keep_compile_caches(environ):
    """Where torch.compile keeps what it compiled, so that the next run
    reuses it (C25's counterpart: ~25 s cold on an H200's host): Inductor's
    FX graph and AOTAutograd caches under ~/.cache/memclaims/torchinductor
    ($XDG_CACHE_HOME), not /tmp/torchinductor_$USER, which a reboot or a
    tmp cleaner empties; Triton's already lives in ~/.triton. A directory
    the user set (TORCHINDUCTOR_CACHE_DIR) stands. Returns the folder."""
    if environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return environ["TORCHINDUCTOR_CACHE_DIR"]
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(base, "memclaims", "torchinductor")
    return environ["TORCHINDUCTOR_CACHE_DIR"]


class Timeline:
    """DIR/timeline.tsv: "EPOCH_SECONDS<TAB>WHAT" when this process passes
    each phase (the go file read, seed 000's programs settled, the CUDA
    context, each key's start and end, the end of main), appended, one
    line each, flushed: run-all writes them as seconds since its go file in
    logs/pytorch-timeline.tsv, so that where the PyTorch part's time goes
    outside the counterparts shows."""

    def __init__(self, folder):
        self.f = open(os.path.join(folder, "timeline.tsv"), "a", buffering=1)

    def mark(self, what):
        self.f.write("%.3f\t%s\n" % (time.time(), what))


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    keep_compile_caches(os.environ)  # before torch's import reads it
    import beside  # noqa: F401 (sets TEARDOWN_CUPTI before torch's import: beside.py says why)
    import beside_seeds
    progress = open(os.path.join(a.out, "progress.tsv"), "a")
    timeline = Timeline(a.out)
    if a.go_file:  # seed 000's programs import torch now too, beside this process
        for key in a.keys:
            if key in SEED_PROGRAM_OF and not (a.quick and key in SEED_PROGRAM_FULL_ONLY):
                beside_seeds.seed_program_start(SEED_PROGRAM_OF[key], a.go_file + ".seeds")
    try:
        torch = prepare(a.keys)
    except ImportError as e:
        print("run_many: python3 cannot import torch: %s: waived" % e, file=sys.stderr)
        return 77
    import subproc
    if a.go_file:
        a.budget_s, a.keys = wait_for_go(a.go_file, a.budget_s, a.keys)
        timeline.mark("go file read")
        # before any counterpart: none of them runs beside a timed step;
        # this process's CUDA context is made while they run (~1 s)
        beside_seeds.seed_programs_settle({SEED_PROGRAM_OF[k] for k in a.keys if k in SEED_PROGRAM_OF},
                                          a.go_file + ".seeds", lambda: cuda_init(torch) if a.keys else None)
        timeline.mark("seed 000's programs settled, CUDA context made meanwhile")
        with contextlib.suppress(OSError):
            os.remove(a.go_file + ".seeds")
        if not a.keys:
            return 0
    if not torch.cuda.is_available():
        print("run_many: torch %s sees no CUDA device: waived" % torch.__version__, file=sys.stderr)
        return 77
    cuda_init(torch)
    timeline.mark("CUDA context")
    dog = Watchdog(progress, a.timeout_s, subproc)
    t0 = time.monotonic()
    done = []
    for key in a.keys:
        allow = allowance(key, done, a.budget_s, t0)
        progress.write("%s\tstart\n" % key)
        progress.flush()
        gc.collect()
        gc.freeze()  # what outlived the last key (modules, caches): out of the collector's way
        timeline.mark("%s start" % key)
        k0 = time.monotonic()
        dog.arm(key)
        state, code = run_key(key, a, allow)
        dog.disarm()
        secs = time.monotonic() - k0
        if state == "failed" and not last_line(os.path.join(a.out, key + ".log")):
            with open(os.path.join(a.out, key + ".log"), "a") as f:
                f.write("exit %d\n" % code)
        progress.write("%s\t%s\t%d\t%.1f\n" % (key, state, code, secs))
        progress.flush()
        timeline.mark("%s %s" % (key, state))
        if not (key in MULTI_GPU and state == "waived"):  # one that waived at once takes no share
            done.append(key)
        if not cuda_answers(torch):
            print("run_many: CUDA stopped answering after %s: the rest in a new process" % key, file=sys.stderr)
            return 3
    timeline.mark("main returns")
    return 0


def exit_now(code):
    """Ends this process with code at once, without the interpreter's
    teardown. Inductor's pool of compile processes, idle since C25's
    torch.compile (last in ORDER: nothing is timed after it), is shut down
    at exit by joining its 16 workers: 4.3 s of the H200's run at 5b44de1
    (sampled), with the CUDA context's teardown after it, while run-all
    waited with nothing left to measure. The pool's process, started with
    this one's pid, sees its pipe close and ends by itself. What this
    process wrote is on disk by then: each key's rows and log are closed
    after it (run_key), progress.tsv and timeline.tsv flushed line by
    line."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
