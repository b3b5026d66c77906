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
DIR/KEY.log (its progress), and DIR/progress.tsv gets "KEY<TAB>start" when
it starts and "KEY<TAB>STATE<TAB>CODE<TAB>SECONDS" when it ends: STATE ran
(main returned 0), waived (77), failed (any other code, or an exception:
its last line in the log). A key that runs past --timeout-s (default 300)
ends the process (exit 124) with "KEY<TAB>timeout<TAB>124<TAB>SECONDS": the
caller starts another for the keys after it. A key after which CUDA no
longer answers ends the process (exit 3) after its line: the others would
fail on the same context.

--budget-s S (0: none): the time the counterparts of a one-GPU run
together may take, handed out by SHARE (each one's estimated seconds on an
H100 with every point of a full run; those that run on one GPU add up to
S's default, 65): a counterpart's allowance is S * (its share and those
before it) / 65 less the time already spent, so what one leaves is the
next one's. Within it, a counterpart measures first the points its verdict
row names and skips the rest, in rows that say so, once its allowance is
spent. C24's (sharded_training, MULTI_GPU) comes on top: it runs only
where the suite's C24 measured on several GPUs (run-all leaves a waived
claim out; given a one-GPU run it waives at once, and its share goes to
no one), and then its share scales S by (65 + 55) / 65; on one GPU it
costs nothing.

A counterpart may run commands (sharded_training.py runs torchrun through
subproc.py, each in a session of its own): past --timeout-s, or on
SIGTERM, their whole process trees are stopped before this process ends.

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
# The counterparts, in the order they run (the suite's, but C25 last: its
# torch.compile is the one cost that can run far past its estimate, and
# run last it takes time from no other claim), with each one's estimated
# seconds on an H100 for a full run's points (5 timed and 2 warm-up steps
# and one profiled step a point; this process's own start not included):
# what --budget-s hands out. Estimated from the per-point step times of the
# first H100 run (logs/*.pytorch.log), not yet measured as a whole.
# sharded_training: three fsdp_reference.py runs (one per wrapper) of ~18 s
# each on two H100s, an estimate from tests/fixtures/fsdp's runs, not yet
# measured under run-all.
SHARE = [("pinned_vs_pageable", 2.0), ("sync_vs_async_timing", 0.8), ("mixed_precision", 10.5),
         ("grad_accumulation", 5.5), ("checkpointing", 8.0), ("optimizer_state", 1.7),
         ("nonblocking_copy", 3.2), ("prefetch_overlap", 3.0), ("activation_offload", 8.0),
         ("sharded_training", 55.0), ("no_grad_eval", 3.0), ("compile_fusion", 19.3)]
ORDER = [k for k, _ in SHARE]
# Those that run only on several GPUs: their shares come on top of S (above).
MULTI_GPU = ("sharded_training",)
TOTAL_SHARE = sum(s for k, s in SHARE if k not in MULTI_GPU)  # S's default, 65
NOT_KEYS = ("beside", "run_many", "subproc")  # modules here that are not counterparts
DEFAULT_TIMEOUT_S = 300


def parse(argv):
    ap = argparse.ArgumentParser(prog="run_many.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="the run folder: RUN/KEY.csv are the suite's CSVs")
    ap.add_argument("--out", required=True, help="folder for KEY.rows, KEY.log and progress.tsv")
    ap.add_argument("--quick", action="store_true", help="pass --quick (the run's)")
    ap.add_argument("--budget-s", type=float, default=0.0, help="seconds all of them may take (0: no limit)")
    ap.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S,
                    help="seconds one may take before this process ends (default %d)" % DEFAULT_TIMEOUT_S)
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


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    progress = open(os.path.join(a.out, "progress.tsv"), "a")
    try:
        import torch
    except ImportError as e:
        print("run_many: torch is not installed here (%s): waived" % e, file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("run_many: torch %s sees no CUDA device: waived" % torch.__version__, file=sys.stderr)
        return 77
    import subproc
    dog = Watchdog(progress, a.timeout_s, subproc)
    t0 = time.monotonic()
    done = []
    for key in a.keys:
        allow = allowance(key, done, a.budget_s, t0)
        progress.write("%s\tstart\n" % key)
        progress.flush()
        gc.collect()
        gc.freeze()  # what outlived the last key (modules, caches): out of the collector's way
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
        if not (key in MULTI_GPU and state == "waived"):  # one that waived at once takes no share
            done.append(key)
        if not cuda_answers(torch):
            print("run_many: CUDA stopped answering after %s: the rest in a new process" % key, file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
