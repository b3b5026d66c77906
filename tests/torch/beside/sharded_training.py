#!/usr/bin/env python3
"""sharded_training.py: C24's measurement on the GPUs with PyTorch: each
rank's peak allocated and step time under DDP, ZeRO-2 and FSDP2, on the
GPUs and the width the suite measured, beside build/c24_sharded_training's
measured rows.

C24 measures on N GPUs (its --gpus, default 2) one width (4096; --quick
1024; its --width) of its training workload (Linear+ReLU MLP, L = 8 layers,
input and output the width, 32 rows a rank, fp32, Adam): per rank, the
peak allocated of each step and the whole step's time (forward, backward,
optimizer and every collective, CUDA events around the step;
common/workload/sharded/sharded_gpu.h). Here
tests/torch/fsdp_reference.py trains that network for real under
DistributedDataParallel, fully_shard(reshard_after_forward=False) (ZeRO-2)
and fully_shard (FSDP2), one run per wrapper, in a temporary folder:

    python3 tests/torch/fsdp_reference.py TMP/out --configs TMP/configs --steps K --gpus N

(a fresh torchrun and N fresh rank processes each, NCCL_NVLS_ENABLE=0),
K = --warmup (at least 2: step 1 makes Adam's state, DDP rebuilds its
buckets at step 2) + --repeats steps. Its per-rank CSVs give, for each step
after the warm-up ones, torch.cuda.max_memory_allocated and the whole
step's time (CUDA events around forward, backward, the optimizer and every
collective). The points are the suite's (its rows <wrapper>_rank<R> of
param ranks = N, the width in their note, the layers, rows and optimizer
in its model rows' note), else the experiment's own (--gpus, --width,
--layers, --batch, --optimizer, as C24's options). --device is not used:
the ranks take GPUs 0..N-1.

Cost: one run takes ~18 s on two H100s (three imports of torch:
fsdp_reference.py's, torchrun's, each rank's; NCCL's start; K steps with
fsdp_reference.py's 0.3 s pauses), so a full run, the three wrappers at the
suite's one width, takes ~55 s. Those three are the points its verdict row
names, so --budget-s never skips one (as no counterpart skips its first
points). A run past --run-timeout-s (default 80) is stopped with its whole
process tree (subproc.py) and is a failed row; so is one that runs out of
memory (status oom) or ends with an error (an NCCL error), with the line
of its output that says why; the others go on.

Rows (variant pytorch:<wrapper>_rank<R>, param ranks, value N, as the
suite's): peak_allocated (bytes) and step_time (s), each over the steps
after the warm-up, each rank's; a wrapper that failed: one row
pytorch:<wrapper> of status oom or failed, the reason in its note.
Summaries: rank 0's peak and step time beside the suite's; where
PyTorch's peak allocated equals the suite's. The verdict row: both
per-rank peaks and both step times of each wrapper. No gpu_idle_share rows: the step runs in torchrun's rank
processes, out of this process's torch.profiler's reach.

Exit 77 with one line, nothing run: the suite's CSV has no row measured on
the GPUs (C24 on one GPU, or built without NCCL, is waived: so is this),
no torch, fewer than N GPUs, or no NCCL in torch. Under run_many.py this
process holds a CUDA context on GPU 0 (the other counterparts'): a rank's
figures are its own process's allocator's, so it changes none of them. The
interface and the output: beside.py. Standard library and torch only.
"""
import os
import re
import shutil
import sys
import tempfile

import beside as b
import subproc

CLAIM, KEY = "C24", "sharded_training"
NAME = "beside/" + KEY
REPEATS, WARMUP = b.REPEATS, b.WARMUP
MODES = ("ddp", "zero2", "fsdp")
LABEL = {"ddp": "DDP", "zero2": "ZeRO-2", "fsdp": "FSDP"}
WRAPPER = {"ddp": "DistributedDataParallel", "zero2": "fully_shard(reshard_after_forward=False)",
           "fsdp": "fully_shard"}
WIDTH, QUICK_WIDTH = 4096, 1024  # C24's measured width, and with --quick
RUN_TIMEOUT_S = 80               # one fsdp_reference.py run: ~18 s on two H100s
HERE = os.path.dirname(os.path.abspath(__file__))
# The script run for each wrapper; BESIDE_FSDP_REFERENCE names a stand-in (tests).
REFERENCE = os.environ.get("BESIDE_FSDP_REFERENCE") or os.path.join(os.path.dirname(HERE), "fsdp_reference.py")
RANK_HEADER = "step,peak_allocated,allocated_end,peak_reserved,status,step_time_s"  # fsdp_reference.py's
GPU_VARIANT = re.compile(r"^(ddp|zero2|fsdp)(?:_rank(\d+))?$")
GPU_NOTE = re.compile(r"\bwidth (\d+), (\d+) GPUs\b")
MODEL_NOTE = re.compile(r"\bL=(\d+), width \d+, (\d+) rows a rank, (sgd|momentum|adam), fp32\b")


def extra(ap):
    ap.add_argument("--gpus", type=int, default=2, help="GPUs, without --suite-csv (C24's --gpus, default 2)")
    ap.add_argument("--width", type=int, default=0,
                    help="width, without --suite-csv (C24's --width; default 4096, --quick 1024)")
    ap.add_argument("--layers", type=int, default=8, help="Linear layers, without --suite-csv (default 8)")
    ap.add_argument("--batch", type=int, default=32, help="rows a rank, without --suite-csv (default 32)")
    ap.add_argument("--optimizer", default="adam", choices=("sgd", "momentum", "adam"),
                    help="without --suite-csv (default adam)")
    ap.add_argument("--run-timeout-s", type=float, default=RUN_TIMEOUT_S,
                    help="seconds one fsdp_reference.py run may take (default %d)" % RUN_TIMEOUT_S)


# ---------------------------------------------------------------- the suite's points

def suite_config(rows, quick):
    """What the suite measured on the GPUs: ({gpus, width[, layers, batch,
    optimizer]}, [its wrappers, in MODES' order]), from its rows of metric
    peak_allocated (<wrapper>_rank<R>, or <wrapper> where it ran out of
    memory; param ranks = N; "width W, N GPUs" in the note; else C24's
    width with quick or without) and its model rows' note ("L=8, width
    1024, 32 rows a rank, adam, fp32"). (None, why) where it measured none."""
    cfg, modes, width, gpus, waived = {}, set(), None, None, None
    for r in rows:
        m = GPU_VARIANT.match(r["variant"])
        if (m and r["metric"] == "peak_allocated" and r["param"] == "ranks" and r["param_value"]
                and r["status"] in ("ok", "oom")):
            modes.add(m.group(1))
            gpus = gpus or int(float(r["param_value"]))
            g = GPU_NOTE.search(r["note"])
            if g and width is None:
                width = int(g.group(1))
        elif r["metric"] == "peak_allocated_model" and "layers" not in cfg:
            g = MODEL_NOTE.search(r["note"])
            if g:
                cfg.update(layers=int(g.group(1)), batch=int(g.group(2)), optimizer=g.group(3))
        elif r["metric"] == "verdict" and r["status"] == "waived":
            waived = r["note"]
    if not modes:
        return None, ("the suite's C24 measured nothing on the GPUs (%s)" % (
            "waived: " + waived if waived else "a run on the model only"))
    cfg["gpus"] = gpus
    cfg["width"] = width or (QUICK_WIDTH if quick else WIDTH)
    return cfg, [m for m in MODES if m in modes]


def own_config(args):
    """The experiment's own point (no --suite-csv): its options' defaults."""
    return {"gpus": args.gpus, "width": args.width or (QUICK_WIDTH if args.quick else WIDTH),
            "layers": args.layers, "batch": args.batch, "optimizer": args.optimizer}, list(MODES)


# ---------------------------------------------------------------- fsdp_reference.py's output

def read_rank(path):
    """fsdp_reference.py's per-step CSV of one rank: [(step, peak
    allocated in bytes, step time in s)]; ValueError where it is not one."""
    with open(path) as f:
        lines = [x.strip() for x in f if x.strip()]
    if not lines or lines[0] != RANK_HEADER:
        raise ValueError("%s is not fsdp_reference.py's per-step CSV" % os.path.basename(path))
    out = []
    for x in lines[1:]:
        c = x.split(",")
        if len(c) != 6 or c[4] != "ok":
            raise ValueError("%s: bad step row %r" % (os.path.basename(path), x[:80]))
        out.append((int(c[0]), int(c[1]), float(c[5])))
    return out


def collect(outdir, name, nranks, warm):
    """Each rank's steps after the warm-up ones (rank 0 first), from
    OUTDIR/NAME.rankR.csv, and rank 0's count of steps; ValueError where a
    rank's file is missing or has no step after them."""
    ranks, total = [], 0
    for r in range(nranks):
        path = os.path.join(outdir, "%s.rank%d.csv" % (name, r))
        if not os.path.isfile(path):
            raise ValueError("fsdp_reference.py wrote no CSV for rank %d" % r)
        every = read_rank(path)
        steps = [s for s in every if s[0] > warm]
        if not steps:
            raise ValueError("rank %d: no step after the %d warm-up ones" % (r, warm))
        ranks.append(steps)
        total = total or len(every)
    return ranks, total


def steps_said(steps, total, warm):
    """"steps 3-7 of 7 (after 2 warm-up)": which steps a figure is over."""
    return "steps %d-%d of %d (after %d warm-up)" % (steps[0][0], steps[-1][0], total, warm)


def read_meta(path):
    """fsdp_reference.py's meta.txt (key=value lines) as a dict; {} without it."""
    try:
        with open(path) as f:
            return dict(x.rstrip("\n").split("=", 1) for x in f if "=" in x)
    except OSError:
        return {}


RANK_PREFIX = re.compile(r"^\s*\[(?:rank\d+|default\d*)\]:\s*")
OOM = re.compile(r"OutOfMemoryError|out of memory", re.I)
NCCL = re.compile(r"NCCL.*(error|Error|failed|timeout)|(DistBackendError|DistNetworkError)")
ERROR = re.compile(r"^[\w.]*(Error|Exception)\b:?")


def failure(log, rc, timed_out, limit_s):
    """Why a run failed, from its exit code and output: (status, one line).
    An out-of-memory line first (status oom), then an NCCL error, then the
    first exception line that is not torchrun's ChildFailedError, else the
    output's last line."""
    if timed_out:
        return "failed", "fsdp_reference.py ran past %.0f s (--run-timeout-s): stopped with its ranks" % limit_s
    lines = [RANK_PREFIX.sub("", x).strip() for x in log.splitlines()]
    lines = [x for x in lines if x]
    for pat, status in ((OOM, "oom"), (NCCL, "failed")):
        hit = [x for x in lines if pat.search(x) and "ChildFailedError" not in x]
        if hit:
            return status, "exit %d: %s" % (rc, hit[0][:200])
    hit = [x for x in lines if ERROR.search(x) and "ChildFailedError" not in x]
    last = hit[0] if hit else (lines[-1] if lines else "no output")
    return "failed", "exit %d: %s" % (rc, last[:200])


def run_wrapper(args, cfg, mode, warm, steps, tmp):
    """One fsdp_reference.py run of one wrapper: ((ranks' steps, rank 0's
    count of steps), meta, None) or (None, None, (status, why))."""
    d = os.path.join(tmp, mode)
    os.makedirs(d)
    name = "c24_w%d_%s" % (cfg["width"], mode)
    conf, out, log = os.path.join(d, "configs"), os.path.join(d, "out"), os.path.join(d, "log")
    with open(conf, "w") as f:
        f.write("%s\t--mode %s --layers %d --in %d --width %d --out %d --batch %d --optimizer %s\n" % (
            name, mode, cfg["layers"], cfg["width"], cfg["width"], cfg["width"], cfg["batch"], cfg["optimizer"]))
    cmd = [sys.executable, REFERENCE, out, "--configs", conf, "--steps", str(steps), "--gpus", str(cfg["gpus"])]
    rc, timed_out = subproc.run(cmd, log, args.run_timeout_s)
    with open(log, errors="replace") as f:
        text = f.read()
    if timed_out or rc != 0:
        tail = "\n".join(text.splitlines()[-20:])
        if tail:
            print(tail, file=sys.stderr)  # the run's last lines, into run-all's log of this counterpart
        return None, None, failure(text, rc if rc is not None else -1, timed_out, args.run_timeout_s)
    try:
        return collect(out, name, cfg["gpus"], warm), read_meta(os.path.join(out, "meta.txt")), None
    except (OSError, ValueError) as e:
        return None, None, ("failed", "exit 0: %s" % b.reason(e))


# ---------------------------------------------------------------- torch

def check_torch(gpus):
    """Exits 77 with one line without torch, N GPUs or NCCL; never starts
    CUDA in this process (the ranks are other processes)."""
    try:
        import torch
    except ImportError as e:
        print("%s: torch is not installed here (%s): waived" % (NAME, e), file=sys.stderr)
        sys.exit(77)
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n < gpus:
        print("%s: C24's run needs %d GPUs, torch sees %d: waived" % (NAME, gpus, n), file=sys.stderr)
        sys.exit(77)
    try:
        import torch.distributed as dist
        ok = dist.is_available() and dist.is_nccl_available()
    except ImportError:
        ok = False
    if not ok:
        print("%s: torch %s has no NCCL (torch.distributed): waived" % (NAME, torch.__version__), file=sys.stderr)
        sys.exit(77)
    return torch


# ---------------------------------------------------------------- text

def gib(x):
    return "%.2f" % (x / float(1 << 30))


def ms(x):
    return "%.2f" % (x * 1e3)


def slashed(xs, fmt):
    return "/".join("-" if x is None else fmt(x) for x in xs)


def verdict_text(cfg, got, suite_peak, suite_time):
    """The verdict-beside sentence: at the suite's width, rank 0's peak and
    whole step of each wrapper in the suite and in PyTorch; got: mode ->
    (peak, time) of rank 0; suite_*: mode -> the suite's figure or None.
    None where PyTorch measured no wrapper."""
    if not any(got.get(m) for m in MODES):
        return None
    mine_p = [got[m][0] if got.get(m) else None for m in MODES]
    mine_t = [got[m][1] if got.get(m) else None for m in MODES]
    theirs_p = [suite_peak.get(m) for m in MODES]
    theirs_t = [suite_time.get(m) for m in MODES]
    text = "%d GPUs, width %d, rank 0's peak DDP/ZeRO-2/FSDP " % (cfg["gpus"], cfg["width"])
    if any(x is not None for x in theirs_p):
        text += "%s GiB suite, %s GiB PyTorch; " % (slashed(theirs_p, gib), slashed(mine_p, gib))
    else:
        text += "%s GiB PyTorch; " % slashed(mine_p, gib)
    text += "whole step "
    if any(x is not None for x in theirs_t):
        text += "%s ms suite, " % slashed(theirs_t, ms)
    text += "%s ms PyTorch." % slashed(mine_t, ms)
    return text


# ---------------------------------------------------------------- main

def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, extra, argv)
    if not 2 <= args.gpus <= 16 or args.width < 0 or not 2 <= args.layers <= 64 or args.batch < 1 \
            or not args.run_timeout_s > 0:
        print("%s: --gpus must be from 2 to 16, --layers from 2 to 64, --width >= 0, --batch >= 1 and "
              "--run-timeout-s > 0" % NAME, file=sys.stderr)
        return 2
    if args.suite:
        cfg, modes = suite_config(args.suite, args.quick)
        if cfg is None:
            print("%s: %s: waived" % (NAME, modes), file=sys.stderr)  # modes: why
            return 77
        for k in ("layers", "batch", "optimizer"):
            cfg.setdefault(k, getattr(args, k))
    else:
        cfg, modes = own_config(args)
    check_torch(cfg["gpus"])
    out = b.Rows(CLAIM, KEY)
    if args.csv_header is None:
        print(b.HEADER)
    warm = max(args.warmup, 2)
    steps = warm + args.repeats
    N, W = cfg["gpus"], cfg["width"]
    shape = "width %d, L=%d, %d rows a rank, %s, fp32, %d GPUs" % (W, cfg["layers"], cfg["batch"], cfg["optimizer"], N)
    got, peaks, meta, which0 = {}, [], {}, None  # which0: rank 0's steps, of the first wrapper measured
    tmp = tempfile.mkdtemp(prefix="beside-c24.")
    try:
        for mode in modes:
            what = "%s width %d" % (LABEL[mode], W)
            res, m, bad = run_wrapper(args, cfg, mode, warm, steps, tmp)
            if bad:
                out.failed_why(mode, "ranks", N, "peak_allocated", "bytes", what, bad[1], bad[0])
                continue
            ranks, total = res
            meta = meta or m
            which0 = which0 or steps_said(ranks[0], total, warm)
            for r, st in enumerate(ranks):
                v = "%s_rank%d" % (mode, r)
                which = steps_said(st, total, warm)
                pk, ts = [s[1] for s in st], [s[2] for s in st]
                out.emit(v, "ranks", N, "peak_allocated", "bytes", pk, "ok",
                         "rank %d, %s: torch.cuda.max_memory_allocated per step; %s, %s "
                         "(tests/torch/fsdp_reference.py under torchrun)" % (r, which, shape, WRAPPER[mode]))
                out.emit(v, "ranks", N, "step_time", "s", ts, "ok",
                         "rank %d, %s: CUDA events around the whole step (forward, backward, optimizer, every "
                         "collective), as the suite's step_time" % (r, which))
                peaks.append(("%s rank %d" % (LABEL[mode], r), b.stats(pk)["median"],
                              b.suite_median(args.suite, v, "ranks", N, "peak_allocated")))
            got[mode] = (b.stats([s[1] for s in ranks[0]])["median"], b.stats([s[2] for s in ranks[0]])["median"])
            b.log(NAME, "%s: rank 0 step %.3f ms, peak %d bytes", what, got[mode][1] * 1e3, got[mode][0])
            out.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    suite_peak = {m: b.suite_median(args.suite, "%s_rank0" % m, "ranks", N, "peak_allocated") for m in MODES}
    suite_time = {m: b.suite_median(args.suite, "%s_rank0" % m, "ranks", N, "step_time") for m in MODES}
    if got:
        head = "PyTorch %s (NCCL %s) on %s x %s" % (meta.get("torch_version", "?"), meta.get("nccl_version", "?"),
                                                   meta.get("world_size", N), meta.get("device_name", "GPU"))
        have = bool(args.suite)
        mine = [got.get(m) for m in MODES]
        text = "%s: %s, rank 0, %s: %s; PyTorch's whole step DDP, ZeRO-2, FSDP %s" % (
            head, shape, which0,
            b.beside("per-rank peak DDP, ZeRO-2, FSDP (GiB)", [x and x[0] for x in mine],
                     [suite_peak[m] for m in MODES], gib, have),
            b.fig_list([x and x[1] for x in mine], b.seconds))
        if have and any(suite_time[m] is not None for m in MODES):
            text += "; the suite's whole step %s" % b.fig_list([suite_time[m] for m in MODES], b.seconds)
        out.summary(text)
    out.peaks(peaks)
    out.verdict(verdict_text(cfg, got, suite_peak, suite_time))
    out.close(len(modes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
