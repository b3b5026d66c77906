#!/usr/bin/env python3
"""max_batch_reference.py: PyTorch's own largest batch under a memory limit,
for three real training programs, with the small-batch memory snapshots a
max-batch predictor reads (issue 34; tests/fixtures/max_batch/README.md).

    python3 tests/torch/max_batch_reference.py OUTDIR [PROGRAM ...] [--jobs N]
    python3 tests/torch/max_batch_reference.py --child PROGRAM BATCH 0 1 OUTDIR
                                   (one more snapshot, at BATCH, no limit:
                                    OUTDIR/PROGRAM_bBATCH.pickle.gz)

PROGRAM picks programs (default: all three):
  resnet   torchvision's resnet18 (random weights, no download), or where
           torchvision is missing make_snapshots.py's hand-written CNN of
           torch.nn layers; SGD(lr=0.01, momentum=0.9); inputs (B, 3, 224,
           224), cross-entropy over 1000 classes. Snapshots at B = 4, 8, 16.
  gpt2     transformers' GPT2LMHeadModel from GPT2Config(vocab_size=8192,
           n_positions=1024, n_embd=512, n_layer=6, n_head=8, dropouts 0)
           (random weights, no download), or where transformers is missing
           make_snapshots.py's hand_gpt (the same sizes, torch.nn layers);
           bf16 autocast, AdamW(lr=1e-4); B sequences of 512 tokens,
           next-token cross-entropy. Snapshots at B = 2, 4, 8.
  seed000  seed 000's program as the seed writes it:
           torch.nn.Transformer(d_model=256).cuda() (8 heads, 6+6 layers,
           ff 2048, dropout 0.1, batch_first False), Adam(defaults), src and
           tgt of shape (64, B, 256) (sequence 64), MSELoss()(model(src, tgt),
           tgt). Snapshots at B = 2, 4, 8.

Each step: inputs from a generator seeded on the device, forward, loss,
backward, optimizer.step(), zero_grad(set_to_none=True); 3 steps;
torch.backends.cudnn.benchmark = False; PYTORCH_CUDA_ALLOC_CONF (and
PYTORCH_ALLOC_CONF) unset in every process. Every run below is a fresh
Python process (the allocator's state and the memory fraction are per
process):
  1. snapshots: at each of the program's three small batches, with
     torch.cuda.memory._record_memory_history(enabled="all", context=None,
     stacks="python", max_entries=10_000_000) started before the model is
     built (nothing is allocated before it: the snapshot holds the whole
     program), then _snapshot(), gzipped to OUTDIR/NAME_bB.pickle.gz (via a
     temporary file and os.replace); the process's memory_stats() peaks go
     to NAME.meta.
  2. limits: a straight line through the snapshots' peak allocated against
     B gives the bytes a batch needs; two limits, aimed at the batches 28 and
     100 (so that the largest batch that fits is moderate, roughly 16-40 and
     48-160: fragmentation under a limit lowers it a little), each rounded
     to a whole MiB. A limit is set with
     torch.cuda.set_per_process_memory_fraction(limit / total_memory) and
     recorded as the bytes that leaves the allocator,
     int(fraction * total_memory).
  3. PyTorch's search: for each limit, the largest batch B >= 1 at which 3
     steps raise no torch.OutOfMemoryError, by exponential search up from 1
     (1, 2, 4, ... until one runs out) then binary search between the last
     batch that fitted and the first that did not; one process a trial.
     The searches (program x limit) run at the same time, --jobs processes
     (default 4) on the one GPU at a time, and only as many as the GPU's
     memory holds (the limits plus 1.5 GiB a process for its CUDA context).
     A trial past 240 s is killed and fails its program; so does an
     out-of-memory error while the GPU itself had little memory free
     (another process on the GPU, not the limit).

Writes into OUTDIR (flat), per program NAME:
  NAME_bB.pickle.gz   the snapshots (no stack frames, hence no paths)
  NAME.expected.tsv   limit_bytes, max_batch, peak_allocated_at_max,
                      peak_reserved_at_max, trials (one row a limit)
  NAME.trials.tsv     every trial: limit_bytes, batch, outcome (fits|oom),
                      peak_allocated, peak_reserved, num_alloc_retries,
                      num_ooms (memory_stats(), read after catching the
                      OutOfMemoryError where it ran out)
  NAME.meta           the model used and why, versions, GPU, total_memory,
                      the batches recorded and their peaks, the limits,
                      steps, seed, the recording time
Prints one line a finished process (program, batch, limit, outcome,
seconds) and the time taken. Exit 0; 1 if a program failed (each named,
with why, on stderr; its .tsv and .meta are not written); 2 on bad
arguments. Needs a CUDA GPU and PyTorch (written against 2.11); standard
library and torch only (torchvision and transformers where present).
"""
import gzip
import json
import os
import subprocess
import sys
import threading
import time

STEPS = 3
SEED = 1234
MiB = 1 << 20
GiB = 1 << 30
MAX_ENTRIES = 10_000_000
# The small batches each program is recorded at, and what the step does (NAME.meta).
PROGRAMS = {
    "resnet": dict(batches=(4, 8, 16),
                   step="x = randn(B, 3, 224, 224), y = randint(0, 1000, (B,)) (float32, int64); "
                        "loss = cross_entropy(model(x), y); SGD(lr=0.01, momentum=0.9)"),
    "gpt2": dict(batches=(2, 4, 8),
                 step="ids = randint(0, 8192, (B, 512)); under autocast(bf16): logits = model(ids).logits, "
                      "loss = cross_entropy(logits[:, :-1].reshape(-1, 8192).float(), ids[:, 1:].reshape(-1)); "
                      "AdamW(lr=1e-4)"),
    "seed000": dict(batches=(2, 4, 8),
                    step="src = randn(64, B, 256), tgt = randn(64, B, 256) (sequence 64, batch B); "
                         "loss = MSELoss()(model(src, tgt), tgt); Adam(model.parameters()) (lr 1e-3)"),
}
# The batches the two limits aim at, and the ranges the answers should fall in.
TARGETS = (28, 100)
RANGES = ((16, 40), (48, 160))
MAX_BATCH = 4096          # a search that fits even this is refused (the limit is wrong)
TRIAL_TIMEOUT_S = 240
CONTEXT_BYTES = 3 * GiB // 2   # a process's CUDA context and libraries, outside the allocator
SNAPSHOT_COST = 4 * GiB        # what a snapshot process (no limit, small batch) may hold
GPU_SHARE = 0.85               # of total_memory, for all processes at once
LOW_FREE = 1 * GiB             # an OOM with less than this free on the GPU is not the limit's
ENV_KEYS = ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT",
            "CUDA_MODULE_LOADING")
EXPECTED_HEADER = "limit_bytes\tmax_batch\tpeak_allocated_at_max\tpeak_reserved_at_max\ttrials"
TRIALS_HEADER = "limit_bytes\tbatch\toutcome\tpeak_allocated\tpeak_reserved\tnum_alloc_retries\tnum_ooms"
PROG = "max_batch_reference"


class Failed(Exception):
    """A program cannot be finished: its message says why."""


# ================================================================== pure helpers

def parse_args(argv):
    """(outdir, programs, jobs), or raises ValueError with one line."""
    outdir, names, jobs = None, [], 4
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--jobs" or a.startswith("--jobs="):
            if a == "--jobs":
                if i + 1 >= len(argv):
                    raise ValueError("--jobs needs a whole number >= 1")
                v = argv[i + 1]
                i += 1
            else:
                v = a[len("--jobs="):]
            if not (v.isascii() and v.isdigit()) or int(v) < 1:
                raise ValueError("--jobs needs a whole number >= 1, not %r" % v)
            jobs = int(v)
        elif a.startswith("-") and a != "-":
            raise ValueError("unknown option %s (usage: %s.py OUTDIR [PROGRAM ...] [--jobs N])" % (a, PROG))
        elif outdir is None:
            outdir = a
        else:
            if a not in PROGRAMS:
                raise ValueError("unknown program %s (programs: %s)" % (a, ", ".join(PROGRAMS)))
            if a not in names:
                names.append(a)
        i += 1
    if outdir is None:
        raise ValueError("no OUTDIR (usage: %s.py OUTDIR [PROGRAM ...] [--jobs N])" % PROG)
    return outdir, names or list(PROGRAMS), jobs


def fit_line(points):
    """Least squares y = a + s * x through [(x, y)]: (a, s)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        raise Failed("the snapshots' batches are all the same")
    s = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - s * mx, s


def exact_limit(limit, total):
    """The bytes set_per_process_memory_fraction(limit / total) leaves the
    allocator: static_cast<size_t>(fraction * double(total))."""
    return int((limit / total) * float(total))


def choose_limits(peaks, total, targets=TARGETS):
    """peaks: [(batch, peak_allocated)] of the snapshots; total: the GPU's
    total_memory. Returns [(target, limit, limit_bytes)]: limit the bytes
    the line through the peaks gives the target batch, rounded to a whole
    MiB (limit / total is the fraction set); limit_bytes what that leaves."""
    a, s = fit_line(peaks)
    if s <= 0:
        raise Failed("peak allocated does not grow with the batch (%s)" %
                     ", ".join("B=%d: %d" % p for p in peaks))
    out = []
    for t in targets:
        limit = max(1, round((a + s * t) / MiB)) * MiB
        if out and limit <= out[-1][1]:
            limit = out[-1][1] + MiB
        if limit >= total:
            raise Failed("the limit for batch %d, %d MiB, is over the GPU's memory" % (t, limit // MiB))
        out.append((t, limit, exact_limit(limit, total)))
    return out


def search(fits, max_batch=MAX_BATCH, stop=None):
    """The largest batch b >= 1 with fits(b) true, given that fits is
    monotone: exponential search up from 1, then binary search. fits(b)
    runs one trial. Returns (largest fitting batch or 0, trials: [(b, ok)]).
    stop(): true when the search is to give up (raises Failed)."""
    trials = []

    def trial(b):
        if stop is not None and stop():
            raise Failed("stopped: another search of the program failed")
        ok = bool(fits(b))
        trials.append((b, ok))
        return ok

    lo, hi, b = 0, None, 1
    while hi is None:
        if trial(b):
            lo = b
            if b >= max_batch:
                raise Failed("batch %d fits: the limit is too high for a search" % b)
            b = min(2 * b, max_batch)
        else:
            hi = b
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if trial(mid):
            lo = mid
        else:
            hi = mid
    return lo, trials


def mib(n):
    return "%.1f MiB" % (n / MiB)


def atomic_write(path, text):
    d, name = os.path.split(path)
    tmp = os.path.join(d, "." + name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def expected_tsv(rows):
    """rows: dicts with limit_bytes, max_batch, peak_allocated_at_max,
    peak_reserved_at_max, trials."""
    lines = [EXPECTED_HEADER]
    for r in rows:
        lines.append("\t".join(str(r[k]) for k in ("limit_bytes", "max_batch", "peak_allocated_at_max",
                                                   "peak_reserved_at_max", "trials")))
    return "\n".join(lines) + "\n"


def trials_tsv(trials):
    """trials: the child results of every trial, in order."""
    lines = [TRIALS_HEADER]
    for r in trials:
        lines.append("\t".join(str(r[k]) for k in ("limit_bytes", "batch", "outcome", "peak_allocated",
                                                   "peak_reserved", "num_alloc_retries", "num_ooms")))
    return "\n".join(lines) + "\n"


def import_note(package, e):
    """Why a package could not be imported, without the paths an ImportError's text may hold."""
    return "%s not importable (%s for module %r)" % (package, type(e).__name__, getattr(e, "name", None))


# ================================================================== one process (the child)

def build(torch, program):
    """(model on the CPU, kind, why, extra meta lines): kind names the model used."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    if program == "resnet":
        try:
            import torchvision
        except ImportError as e:
            from make_snapshots import hand_cnn
            return hand_cnn(torch), "hand-written CNN (torch.nn; make_snapshots.py's hand_cnn)", \
                import_note("torchvision", e), {}
        return torchvision.models.resnet18(weights=None), "torchvision resnet18 (weights=None, 1000 classes)", \
            "torchvision %s importable" % torchvision.__version__, {}
    if program == "gpt2":
        try:
            import transformers
        except ImportError as e:
            from make_snapshots import hand_gpt
            return hand_gpt(torch)[0], "GPT-like model (torch.nn; make_snapshots.py's hand_gpt: vocab 8192, " \
                "dim 512, 6 layers, 8 heads, 1024 positions)", import_note("transformers", e), {}
        cfg = transformers.GPT2Config(vocab_size=8192, n_positions=1024, n_embd=512, n_layer=6, n_head=8,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        model = transformers.GPT2LMHeadModel(cfg)
        attn = getattr(model.config, "_attn_implementation", None)
        return model, "transformers GPT2LMHeadModel (GPT2Config vocab_size=8192, n_positions=1024, n_embd=512, " \
            "n_layer=6, n_head=8, dropouts 0)", "transformers %s importable" % transformers.__version__, \
            {"attn_implementation": str(attn)}
    if program == "seed000":
        model = torch.nn.Transformer(d_model=256)
        return model, "torch.nn.Transformer(d_model=256) (seed 000)", \
            "seed 000's own program: torch.nn only", {}
    raise ValueError(program)


def train(torch, program, model, batch, dev):
    """The model to the GPU, an optimizer, STEPS steps. Each step is its own
    function call, so that its tensors are freed when it returns (as the
    seed's function's are), before the next step's inputs."""
    F = torch.nn.functional
    g = torch.Generator(device=dev).manual_seed(SEED)
    if program == "seed000":
        model = model.cuda()     # the seed's own call (device 0, the current one)
        opt = torch.optim.Adam(model.parameters())

        def step():
            src = torch.randn(64, batch, 256, device=dev, generator=g)
            tgt = torch.randn(64, batch, 256, device=dev, generator=g)
            out = model(src, tgt)
            loss = torch.nn.MSELoss()(out, tgt)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    elif program == "resnet":
        model = model.to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            x = torch.randn(batch, 3, 224, 224, device=dev, generator=g)
            y = torch.randint(0, 1000, (batch,), device=dev, generator=g)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    else:
        model = model.to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            ids = torch.randint(0, 8192, (batch, 512), device=dev, generator=g)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(ids)
                logits = out.logits if hasattr(out, "logits") else out
                loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                       ids[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    model.train()
    for _ in range(STEPS):
        step()
    torch.cuda.synchronize(dev)


def write_snapshot(snap, path):
    """The snapshot pickled and gzipped to path, via a temporary file (no
    file name or time in the gzip header)."""
    import pickle
    d, name = os.path.split(path)
    tmp = os.path.join(d, "." + name + ".tmp")
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as f:
            pickle.dump(snap, f)
    os.replace(tmp, path)


def child(program, batch, limit, record, outdir):
    """One process: PROGRAM at BATCH for STEPS steps, under LIMIT bytes
    (0: none; the fraction set is limit / total_memory), recorded to
    OUTDIR/PROGRAM_bBATCH.pickle.gz where record; prints one JSON line."""
    try:
        import torch
    except ImportError:
        print("%s: torch is not installed here" % PROG, file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("%s: no CUDA device" % PROG, file=sys.stderr)
        return 77
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.backends.cudnn.benchmark = False   # benchmark mode sizes workspaces by timing: not repeatable
    torch.manual_seed(SEED)
    props = torch.cuda.get_device_properties(dev)
    total = props.total_memory
    info_total = torch.cuda.mem_get_info(dev)[1]   # what setMemoryFraction multiplies by
    limit_bytes = ""
    if limit:
        fraction = limit / total
        torch.cuda.set_per_process_memory_fraction(fraction, dev)
        limit_bytes = int(fraction * float(info_total))
    s0 = torch.cuda.memory_stats(dev)
    if s0.get("allocated_bytes.all.peak", 0) or s0.get("reserved_bytes.all.peak", 0):
        print("%s: memory was allocated before the program began" % PROG, file=sys.stderr)
        return 1
    if record:
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                                 max_entries=MAX_ENTRIES)
    model, kind, why, extra = build(torch, program)
    outcome, free_at_oom = "fits", ""
    try:
        train(torch, program, model, batch, dev)
    except torch.OutOfMemoryError:
        outcome = "oom"
        free_at_oom = torch.cuda.mem_get_info(dev)[0]
    s = torch.cuda.memory_stats(dev)
    entries = ""
    if record:
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        entries = len(snap["device_traces"][0]) if snap.get("device_traces") else 0
        if entries >= MAX_ENTRIES:
            print("%s: the history's %d entries overflowed" % (PROG, entries), file=sys.stderr)
            return 1
        write_snapshot(snap, os.path.join(outdir, "%s_b%d.pickle.gz" % (program, batch)))
    try:
        cudnn = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001 (cuDNN missing: say so, do not stop)
        cudnn = None
    print(json.dumps(dict(
        program=program, batch=batch, limit=limit, limit_bytes=limit_bytes, outcome=outcome,
        peak_allocated=s.get("allocated_bytes.all.peak", 0), peak_reserved=s.get("reserved_bytes.all.peak", 0),
        num_alloc_retries=s.get("num_alloc_retries", 0), num_ooms=s.get("num_ooms", 0),
        free_at_oom=free_at_oom, entries=entries, model=kind, why=why, extra=extra,
        torch=torch.__version__, cuda=torch.version.cuda, cudnn=cudnn, gpu=props.name,
        capability="%d.%d" % (props.major, props.minor), total_memory=total, mem_get_info_total=info_total,
        python=sys.version.split()[0])), flush=True)
    return 0


# ================================================================== the parent

class Gpu:
    """At most jobs processes at once, and (once the GPU's size is known)
    no more memory promised than GPU_SHARE of it: a process costs its limit
    (SNAPSHOT_COST where none) plus CONTEXT_BYTES; one runs alone whatever
    it costs."""

    def __init__(self, jobs):
        self.jobs, self.budget = jobs, None
        self.running, self.used = 0, 0
        self.cv = threading.Condition()

    def set_total(self, total):
        with self.cv:
            if self.budget is None:
                self.budget = int(GPU_SHARE * total)
                self.cv.notify_all()

    def acquire(self, cost):
        with self.cv:
            while self.running >= self.jobs or (self.running and self.budget is not None
                                                and self.used + cost > self.budget):
                self.cv.wait()
            self.running += 1
            self.used += cost

    def release(self, cost):
        with self.cv:
            self.running -= 1
            self.used -= cost
            self.cv.notify_all()


class Runner:
    def __init__(self, outdir, jobs):
        self.outdir, self.gpu = outdir, Gpu(jobs)
        self.lock = threading.Lock()
        self.processes = 0

    def say(self, line, err=False):
        with self.lock:
            print(line, file=sys.stderr if err else sys.stdout, flush=True)

    def spawn(self, program, batch, limit, record):
        """One child process; its JSON result. Raises Failed."""
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        env.pop("PYTORCH_ALLOC_CONF", None)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", program, str(batch), str(limit),
               "1" if record else "0", self.outdir]
        cost = (limit or SNAPSHOT_COST) + CONTEXT_BYTES
        where = "limit=%d MiB" % (limit // MiB) if limit else "no limit, snapshot"
        what = "%s b=%d %s" % (program, batch, where)
        self.gpu.acquire(cost)
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TRIAL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.say("%-8s b=%-5d %-18s %-7s (%.1f s)" % (program, batch, where, "timeout", time.monotonic() - t0))
            raise Failed("%s: killed after %d s" % (what, TRIAL_TIMEOUT_S)) from None
        finally:
            self.gpu.release(cost)
            with self.lock:
                self.processes += 1
        dt = time.monotonic() - t0
        lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
        if p.returncode != 0 or not lines:
            err = [x for x in p.stderr.strip().splitlines() if x.strip()]
            self.say("%-8s b=%-5d %-18s %-7s (%.1f s)" % (program, batch, where, "error", dt))
            raise Failed("%s: exit %d: %s" % (what, p.returncode, " | ".join(err[-3:])[-600:] or "no output"))
        r = json.loads(lines[-1])
        r["seconds"] = round(dt, 1)
        self.gpu.set_total(r["total_memory"])
        self.say("%-8s b=%-5d %-18s %-7s peak allocated %s, reserved %s (%.1f s)" % (
            program, batch, where, r["outcome"], mib(r["peak_allocated"]), mib(r["peak_reserved"]), dt))
        if r["outcome"] == "oom" and limit and isinstance(r["free_at_oom"], int) and \
                r["free_at_oom"] < LOW_FREE + max(0, r["limit_bytes"] - r["peak_reserved"]):
            raise Failed("%s: out of memory with %s free on the GPU: the GPU ran out, not the limit "
                         "(another process on it? try --jobs 1)" % (what, mib(r["free_at_oom"])))
        return r

    def program(self, name):
        """Snapshots, limits, searches and files of one program; raises Failed."""
        spec = PROGRAMS[name]
        threads_out, errors = {}, []
        stop = threading.Event()

        def in_thread(key, fn, *args):
            try:
                threads_out[key] = fn(*args)
            except Failed as e:
                errors.append(str(e))
                stop.set()
            except Exception as e:  # noqa: BLE001 (a bug here: report it, stop the program only)
                errors.append("%s: %s" % (type(e).__name__, e))
                stop.set()

        def run_all(jobs):
            ts = [threading.Thread(target=in_thread, args=j) for j in jobs]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            if errors:
                raise Failed("; ".join(dict.fromkeys(errors)))

        # 1. snapshots
        run_all([(b, self.spawn, name, b, 0, True) for b in spec["batches"]])
        snaps = [threads_out[b] for b in spec["batches"]]
        for r in snaps:
            if r["outcome"] != "fits":
                raise Failed("the snapshot at batch %d ran out of memory with no limit" % r["batch"])
        base = snaps[0]
        kinds = {r["model"] for r in snaps}
        if len(kinds) != 1:
            raise Failed("the processes used different models: %s" % "; ".join(sorted(kinds)))
        total = base["total_memory"]
        limits = choose_limits([(r["batch"], r["peak_allocated"]) for r in snaps], total)

        # 2. one search a limit, at the same time
        def one_search(target, limit):
            results = []

            def fits(b):
                r = self.spawn(name, b, limit, False)
                results.append(r)
                return r["outcome"] == "fits"
            best, _ = search(fits, stop=stop.is_set)
            return best, results

        run_all([(("search", t), one_search, t, lim) for t, lim, _ in limits])
        rows, trials, notes = [], [], []
        for (target, limit, want), (lo, hi) in zip(limits, RANGES):
            best, results = threads_out[("search", target)]
            got = {r["limit_bytes"] for r in results}
            if len(got) != 1:
                raise Failed("the trials of the %d MiB limit set different limits: %s" % (limit // MiB, sorted(got)))
            limit_bytes = got.pop()
            if limit_bytes != want:
                notes.append("limit %d MiB: the allocator's limit is %d bytes, not %d (cudaMemGetInfo's total "
                             "is not total_memory)" % (limit // MiB, limit_bytes, want))
            at = [r for r in results if r["batch"] == best and r["outcome"] == "fits"]
            rows.append(dict(limit_bytes=limit_bytes, max_batch=best,
                             peak_allocated_at_max=at[0]["peak_allocated"] if at else 0,
                             peak_reserved_at_max=at[0]["peak_reserved"] if at else 0, trials=len(results)))
            trials += results
            if not lo <= best <= hi:
                notes.append("limit %d MiB (aimed at batch %d): max batch %d, outside %d-%d" %
                             (limit // MiB, target, best, lo, hi))
                self.say("%s: %s: %s" % (PROG, name, notes[-1]))
            self.say("%-8s limit %d MiB (%d bytes): max batch %d (%d trials)" %
                     (name, limit // MiB, limit_bytes, best, len(results)))

        # 3. files
        meta = [("program", name), ("model", base["model"]), ("why", base["why"])]
        meta += sorted(base["extra"].items())
        meta += [("step", "forward, loss, backward, optimizer.step(), zero_grad(set_to_none=True): " + spec["step"]),
                 ("inputs", "torch.Generator(device='cuda').manual_seed(%d); torch.manual_seed(%d); "
                            "cudnn.benchmark False" % (SEED, SEED)),
                 ("torch", base["torch"]), ("cuda", base["cuda"]), ("cudnn", base["cudnn"]),
                 ("gpu", base["gpu"]), ("capability", base["capability"]), ("python", base["python"]),
                 ("total_memory", total)]
        if base["mem_get_info_total"] != total:
            meta.append(("mem_get_info_total", base["mem_get_info_total"]))
        meta.append(("alloc_conf", "PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF unset"))
        meta += [("env " + k, os.environ[k]) for k in ENV_KEYS if k in os.environ]
        meta.append(("batches_recorded", " ".join(str(b) for b in spec["batches"])))
        for r in snaps:
            meta.append(("snapshot_b%d" % r["batch"], "%s_b%d.pickle.gz peak_allocated %d peak_reserved %d "
                         "num_alloc_retries %d num_ooms %d entries %d" % (
                             name, r["batch"], r["peak_allocated"], r["peak_reserved"],
                             r["num_alloc_retries"], r["num_ooms"], r["entries"])))
        for (target, limit, _), row in zip(limits, rows):
            meta.append(("limit_%dMiB" % (limit // MiB), "limit_bytes %d (fraction %d / total_memory), aimed at "
                         "batch %d; max_batch %d" % (row["limit_bytes"], limit, target, row["max_batch"])))
        meta += [("note", n) for n in notes]
        meta += [("steps", STEPS), ("seed", SEED),
                 ("recorded", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))]
        atomic_write(os.path.join(self.outdir, name + ".trials.tsv"), trials_tsv(trials))
        atomic_write(os.path.join(self.outdir, name + ".expected.tsv"), expected_tsv(rows))
        atomic_write(os.path.join(self.outdir, name + ".meta"), "".join("%s: %s\n" % kv for kv in meta))
        self.say("%s: model used: %s (%s)" % (name, base["model"], base["why"]))


def main(argv):
    if argv and argv[0] == "--child":
        if len(argv) != 6:
            print("%s: --child PROGRAM BATCH LIMIT RECORD OUTDIR" % PROG, file=sys.stderr)
            return 2
        program, batch, limit, record, outdir = argv[1:6]
        return child(program, int(batch), int(limit), record == "1", outdir)
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    try:
        outdir, names, jobs = parse_args(argv)
    except ValueError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    t0 = time.monotonic()
    runner = Runner(outdir, jobs)
    failed = {}

    def one(name):
        try:
            runner.program(name)
        except Failed as e:
            failed[name] = str(e)
        except Exception as e:  # noqa: BLE001 (a bug: fail this program, say so)
            failed[name] = "%s: %s" % (type(e).__name__, e)
    ts = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    runner.say("%s: %d processes, %.1f s" % (PROG, runner.processes, time.monotonic() - t0))
    for n in names:
        if n in failed:
            runner.say("%s: %s failed: %s" % (PROG, n, failed[n]), err=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
