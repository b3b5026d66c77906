"""subproc.py: a command run by a counterpart (sharded_training.py runs
tests/torch/fsdp_reference.py, which runs torchrun, which runs the ranks)
in a session of its own, with a time limit; past it, or when this process
is stopped, the command's whole process tree is stopped with it, so no rank
is left holding a GPU.

torchrun starts each rank in a session of its own (start_new_session), so
signalling the command's process group is not enough: the tree (from
/proc's parent fields) is read before any signal, and each process in it
gets SIGTERM (torchrun then stops its ranks itself), then, after GRACE_S,
SIGKILL if it is still there. run_many.py's watchdog calls stop_all()
before it ends the process; while a command runs in the main thread,
SIGTERM (run-all's Ctrl-C, `timeout`) stops its tree first, then ends this
process as SIGTERM would have. Standard library only; Linux (/proc).
"""
import os
import signal
import subprocess
import threading
import time

GRACE_S = 5.0  # seconds between SIGTERM and SIGKILL
_live = {}     # pid -> Popen: the commands running now
_lock = threading.Lock()


def _stat(pid):
    """(state, ppid) of pid from /proc/PID/stat, or None where it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    # The command's name is in parentheses and may hold spaces: the fields follow its last ')'.
    rest = s[s.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def tree(pid):
    """pid and every process descended from it, parents first."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = _stat(int(d))
            if st is not None:
                kids.setdefault(st[1], []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        if p not in out:
            out.append(p)
            todo += kids.get(p, [])
    return out


def alive(pid):
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def _signal(pids, sig):
    for p in pids:
        try:
            os.kill(p, sig)
        except OSError:  # gone already, or not ours
            pass


def stop(pid, grace_s=GRACE_S):
    """Stops pid and its descendants: SIGTERM to each (and to pid's
    process group), SIGKILL to those left after grace_s."""
    pids = tree(pid)
    _signal(pids, signal.SIGTERM)
    try:
        os.killpg(pid, signal.SIGTERM)
    except OSError:
        pass
    t_end = time.monotonic() + grace_s
    while time.monotonic() < t_end and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    left += [p for p in (tree(pid) if alive(pid) else []) if p not in left]  # started meanwhile
    _signal(left, signal.SIGKILL)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def stop_all(grace_s=GRACE_S):
    """Stops every command running now (run_many.py's watchdog, SIGTERM)."""
    with _lock:
        pids = list(_live)
    for p in pids:
        stop(p, grace_s)


def _on_term(signum, frame):
    stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def start(cmd, log_path, env=None):
    """Starts cmd (a list) in a session of its own, its stdout and stderr
    into log_path, stdin empty; stop_all() stops it until finish() has
    waited for it. Returns its Popen."""
    with open(log_path, "wb") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, env=env)
    with _lock:
        _live[p.pid] = p
    return p


def finish(p, timeout_s):
    """Waits for p (start()): (exit code, timed out); past timeout_s
    seconds its tree is stopped and the code is None. An exception here
    (Ctrl-C) stops the tree, then goes on."""
    try:
        try:
            return p.wait(timeout=timeout_s), False
        except subprocess.TimeoutExpired:
            stop(p.pid)
            p.wait()
            return None, True
        except BaseException:
            stop(p.pid)
            p.wait()
            raise
    finally:
        with _lock:
            _live.pop(p.pid, None)


def run(cmd, log_path, timeout_s, env=None):
    """start() then finish(): (exit code, timed out). While it runs in the
    main thread, SIGTERM stops its tree first."""
    p = start(cmd, log_path, env)
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, _on_term) if main else None
    try:
        return finish(p, timeout_s)
    finally:
        if main:
            signal.signal(signal.SIGTERM, old if old is not None else signal.SIG_DFL)
