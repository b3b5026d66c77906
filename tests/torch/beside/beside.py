"""beside.py: what the PyTorch counterparts in tests/torch/beside/ share
(their rows, options, training steps, records and sentences; the GPU's
idle share is beside_idle.py's, the bootstrap spreads beside_spread.py's,
seed 000's programs beside_seeds.py's, and each counterpart calls them
through here too).
Each KEY.py measures with PyTorch what the suite's experiment KEY measures,
on the same shapes, and prints its figures as rows of that experiment's own
CSV. scripts/run-all runs them all, after the suite, in one process
(run_many.py: torch, the CUDA context and cuBLAS are set up once) and
appends each one's rows to RUN/KEY.csv; each is as usable by hand:

    python3 tests/torch/beside/KEY.py [--suite-csv FILE] [--csv-header LINE] [--quick]
                                      [--repeats N] [--warmup N] [--device N] [--budget-s S]

Output (stdout): rows of the suite's tidy CSV (common/csv.h, MC_CSV_HEADER):
  - figures: claim and experiment as the suite's; variant "pytorch:" and the
    suite variant the row stands beside ("pytorch:sgemm",
    "pytorch:weight_bound_fp16"); param, param_value, metric and unit as the
    suite's row; n..stdev over the measured repeats (sample stdev, the median
    of an even count the mean of the middle two, as common/stats.c); status
    ok, oom (the point ran out of memory), failed or skipped (not measured:
    run-all's time budget, or a point the claim does not need; the note
    says which); note: how it was measured or why it failed. A point that
    fails is such a row; the others go on.
  - gpu_idle_share (unit ratio): for the step the claim's regime sentence
    names (the verdict row's; a profile costs 0.2-2 s, so the others are
    not profiled), IDLE_STEPS
    (3 to 5: no more than about a second of them) more steps under
    torch.profiler (CUDA activities alone), after one profiled step left out
    (the profiler's own start): per step 1 - (union of its kernel, memcpy
    and memset intervals) / (the timed steps' median time): the share of an
    unprofiled step the GPU waited for the host to launch work (the
    profiler slows the host, not the GPU's kernels: idle_share); the row is
    their median, min, max.
  - every figure of n > 1 samples: its note ends with the median's spread,
    the 10th to 90th percentile of the median over MEDIAN_RESAMPLES
    bootstrap resamples (common/band.h's mc_band_median_of, a fixed seed):
    "median spread (bootstrap 10-90%): LO .. HI". The sentences give a
    ratio of medians with its spread the same way (ratio_spread).
  - summaries: variant "pytorch", metric "pytorch_beside", no figures, the
    note setting PyTorch's figure beside the suite's ("speed-up ... PyTorch
    1.9 (suite 1.7)"); REPORT.md prints each under the claim.
  - one verdict-beside row (variant "pytorch", param "verdict", metric
    pytorch_beside): one sentence naming the suite's key figure and
    PyTorch's, and where they disagree, the regime (launch-bound against
    GPU-bound, with the measured idle share and its spread) that explains
    it: a regime is named only where the spread of the median idle share
    lies wholly on one side of an edge (regime()); else the step is mixed.
    Its time ratio (fp16 against fp32, k micro-steps against one,
    checkpointed, offloaded or compiled against plain) comes from the two
    trainings built again and stepped in turn, PAIR_ROUNDS rounds
    (paired, compare_steps): a shared host's speed moves from second to
    second, and steps measured one configuration after the other carried
    that drift into the ratio (C05's fp16 speed-up read 0.85x, 0.58x and
    0.72x in three runs on one H200).
  No verdict, finding or verification rows: the verdict is the suite's own.
  Without --csv-header the header comes first (a CSV of its own); with it,
  LINE must be the header these rows are written for (the first line of the
  CSV they are appended to), else exit 2.
--suite-csv FILE: the suite's CSV of the same run. The points measured are
  the ones it measured (its --quick, the points it left out or ran out of
  memory at), and the summaries give its figures. Without it, the
  experiment's own lists (with --quick, its quick lists), and summaries with
  PyTorch's figures alone.
--repeats, --warmup: 5 timed and 2 warm-up per point unless given (fewer
  than most experiments: the figures beside are medians with min, max and
  stdev, not the verdict's).
--budget-s S: run-all's allowance for this counterpart (0, the default: no
  limit). The points each script ranks first (those its summaries and
  verdict row name) are always measured; another is started only while the
  allowance lasts, else it is a row of status skipped saying so.
A training configuration this process has already measured (another
counterpart's same model, batch, precision and optimizer) is not measured
again: its figures are reused and the note says whose they are.
Progress on stderr. Exit: 0 rows written; 2 usage; 77 no torch or no CUDA
device (one line on stderr, nothing on stdout). Standard library and torch
only.
"""
import argparse
import csv
import gc
import math
import os
import statistics
import sys
import time

# The parts of their own (what the counterparts call as b.NAME comes from here too)
from beside_idle import idle_of, idle_share, launch_bound, profiled_steps, regime, regime_clause  # noqa: F401
from beside_refs import reason, reference_module  # noqa: F401
from beside_seeds import seed_program
from beside_spread import median_spread, noise, percentile, ratio_spread, rounds_spread, with_spread  # noqa: F401

# Kineto leaves CUPTI attached after a torch.profiler session unless
# TEARDOWN_CUPTI is 1 (pytorch/pytorch#144455): on an H200, seed 000's
# launch-bound Transformer step then took 55 ms instead of 39 ms for the rest
# of the process, so every point timed after the first profiled one read
# ~35% slow. Set before torch is imported (Kineto reads it at each
# profiler's end); a user's own setting stands.
os.environ.setdefault("TEARDOWN_CUPTI", "1")

HEADER = ("claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,"
          "status,note")
PREFIX = "pytorch"          # the variant of a summary; "pytorch:" + the suite's of a figure
SUMMARY = "pytorch_beside"  # the metric of a summary row


# ---------------------------------------------------------------- CSV out

def number(v):
    """A figure as mc_csv_write_number writes it: integral values below 2^53
    bare, others %.10g, inf/-inf, NaN and None empty."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if float(v).is_integer() and abs(v) < 2 ** 53:
        return "%.0f" % v
    return "%.10g" % v


def field(s):
    """One CSV field, quoted where it holds a comma or a quote; a newline
    becomes a space (a record never spans lines: csv_read.h)."""
    s = str(s).replace("\r", " ").replace("\n", " ")
    if any(c in s for c in ',"'):
        return '"' + s.replace('"', '""') + '"'
    return s


def stats(xs):
    """n, median, min, max, mean, stdev of the samples xs (common/stats.c)."""
    xs = [float(x) for x in xs]
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs),
            "mean": statistics.fmean(xs), "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0}


class Rows:
    """The rows of one experiment's counterpart, printed a point at a time
    (flush() after each), so that rows already measured survive a later
    crash or timeout: scripts/run-all keeps every complete line."""

    def __init__(self, claim, key, out=None):
        self.claim, self.key = claim, key
        self.out = out if out is not None else sys.stdout  # run_many.py's, when it runs this
        self.pending = []
        self.failures = []  # (what, why) of the points that failed
        self.skips = []     # (what, why) of the points not measured
        self.verdict_made = False

    def emit(self, variant, param, value, metric, unit, samples, status="ok", note=""):
        """A figure over samples (a list; [] for none, as an oom or failed
        row); with more than one sample the note gives the median's spread."""
        s = stats(samples) if samples else None
        if s is not None and s["n"] > 1:
            lo, hi = median_spread(samples)
            note = (note + "; " if note else "") + "median spread (bootstrap 10-90%%): %s .. %s" % (
                number(lo), number(hi))
        figs = ["0", "", "", "", "", ""] if s is None else \
            [str(s["n"])] + [number(s[k]) for k in ("median", "min", "max", "mean", "stdev")]
        cols = [self.claim, self.key, "%s:%s" % (PREFIX, variant), param,
                number(value) if param else "", metric, unit] + figs + [status, note]
        self.pending.append(",".join(field(c) for c in cols))

    def value(self, variant, param, value, metric, unit, v, note=""):
        """A single figure (n = 1), status ok; nothing where v is None or NaN."""
        if v is not None and not math.isnan(v):
            self.emit(variant, param, value, metric, unit, [v], "ok", note)

    def failed(self, torch, variant, param, value, metric, unit, what, e):
        """A point that raised e: its row (status oom or failed, the reason
        in the note), flushed, and a line on stderr."""
        self.failed_why(variant, param, value, metric, unit, what, reason(e), "oom" if is_oom(torch, e) else "failed")

    def failed_why(self, variant, param, value, metric, unit, what, why, status="failed"):
        """A point that failed for the reason why (one line; status failed
        or oom): its row, flushed, and a line on stderr."""
        self.emit(variant, param, value, metric, unit, [], status, why)
        self.flush()
        self.failures.append((what, why))
        log("beside/" + self.key, "%s: %s", what, why)

    def skipped(self, variant, param, value, metric, unit, what, why):
        """A point not measured (the time budget, or not needed): its row,
        status skipped, the reason in the note; flushed."""
        self.emit(variant, param, value, metric, unit, [], "skipped", why)
        self.flush()
        self.skips.append((what, why))
        log("beside/" + self.key, "%s: skipped: %s", what, why)

    def idle(self, variant, param, value, rec):
        """The gpu_idle_share row of a point whose record has one: the
        shares of its profiled steps."""
        idle = rec.get("idle") if rec else None
        if idle and idle.get("share") is not None:
            self.emit(variant, param, value, "gpu_idle_share", "ratio", idle["shares"], "ok",
                      "%d more steps under torch.profiler (CUDA activities), after one left out: each 1 - "
                      "busy / the timed steps' median %s (busy: the union of its kernels, memcpys and "
                      "memsets; median busy %s; under the profiler the step spanned %s); %s" % (
                          len(idle["shares"]), seconds(idle.get("step_s", idle["span_s"])),
                          seconds(idle["busy_s"]), seconds(idle["span_s"]), regime(idle)))

    def peaks(self, pairs, what="peak allocated"):
        """The summary of peaks_line(pairs, what), where any pair has both figures."""
        line = peaks_line(pairs, what)
        if line:
            self.summary(line)

    def verdict(self, text):
        """The verdict-beside row: one sentence, one line, < 300 characters;
        nothing for an empty text (close() then says the key point is missing)."""
        if not text:
            return
        text = " ".join(str(text).split())
        if len(text) >= 300:
            text = text[:296].rstrip() + "..."
        cols = [self.claim, self.key, PREFIX, "verdict", "", SUMMARY, "", "0", "", "", "", "", "", "ok", text]
        self.pending.append(",".join(field(c) for c in cols))
        self.verdict_made = True

    def close(self, npoints):
        """The summaries of the points that failed and were skipped, and a
        verdict-beside row saying so where the point it compares is missing;
        flushed."""
        if not self.verdict_made:
            self.verdict("PyTorch's key figure for %s is missing: the point its verdict row compares was not "
                         "measured in this run (not among the suite's points, skipped or failed); the rows above "
                         "set what was measured beside the suite's." % self.claim)
        self.failures_summary(npoints)
        if self.skips:
            shown = "; ".join("%s: %s" % f for f in self.skips[:3])
            more = " and %d more" % (len(self.skips) - 3) if len(self.skips) > 3 else ""
            self.summary("%d of %d points not measured: %s%s" % (len(self.skips), npoints, shown, more))
        self.flush()

    def failures_summary(self, npoints):
        """The summary of the points that failed (status failed), if any."""
        if self.failures:
            shown = "; ".join("%s: %s" % f for f in self.failures[:4])
            more = " and %d more" % (len(self.failures) - 4) if len(self.failures) > 4 else ""
            self.summary("%d of %d points failed: %s%s" % (len(self.failures), npoints, shown, more),
                         "failed")

    def summary(self, text, status="ok"):
        cols = [self.claim, self.key, PREFIX, "", "", SUMMARY, "", "0", "", "", "", "", "", status, text]
        self.pending.append(",".join(field(c) for c in cols))

    def flush(self):
        for line in self.pending:
            self.out.write(line + "\n")
        self.out.flush()
        self.pending = []


# ---------------------------------------------------------------- arguments, torch

REPEATS, WARMUP = 5, 2  # timed and warm-up steps (or copies) per point, unless given


def parse_args(doc, repeats, warmup, extra=None, argv=None):
    """The shared options (the module docstring says what they do); extra(ap)
    adds a script's own; argv: the arguments (default sys.argv[1:]). Exits 2
    on bad input, printing the header first unless --csv-header names it."""
    ap = argparse.ArgumentParser(prog=doc.split(":")[0], description=doc.split("\n\n")[0])
    ap.add_argument("--suite-csv", help="the suite's CSV of the same run: its points, its figures")
    ap.add_argument("--csv-header", help="the header of the CSV these rows are appended to")
    ap.add_argument("--quick", action="store_true", help="the experiment's --quick lists")
    ap.add_argument("--repeats", type=int, default=repeats, help="measured repeats (default %d)" % repeats)
    ap.add_argument("--warmup", type=int, default=warmup, help="warm-up repeats (default %d)" % warmup)
    ap.add_argument("--device", type=int, default=0, help="CUDA device number")
    ap.add_argument("--budget-s", type=float, default=0.0,
                    help="seconds this counterpart may take; the points it ranks first are measured "
                         "whatever it is (default 0: no limit)")
    if extra:
        extra(ap)
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.warmup < 0 or a.device < 0 or not a.budget_s >= 0:
        ap.error("--repeats must be >= 1, --warmup, --device and --budget-s >= 0")
    if a.csv_header is not None and a.csv_header.strip() != HEADER:
        ap.error("--csv-header is not the suite's CSV header (%s): these rows would not fit" % HEADER)
    a.suite = []
    if a.suite_csv:
        try:
            a.suite = read_suite(a.suite_csv)
        except (OSError, ValueError) as e:
            ap.error("--suite-csv: %s" % e)
    a.budget = Budget(a.budget_s)
    return a


class Budget:
    """run-all's allowance for one counterpart (--budget-s, monotonic
    clock from the parse of its options; 0: none). A point ranked first
    (first=True) is always measured; another only while the allowance lasts
    and, where its cost is known (cost_s, seconds), covers it."""

    def __init__(self, seconds):
        self.seconds, self.t0 = seconds, time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.t0

    def allows(self, first=False, cost_s=0.0):
        return first or self.seconds <= 0 or self.elapsed() + cost_s <= self.seconds

    def why(self):
        return ("not measured: run-all's time budget for this counterpart (%.0f s, --budget-s) was spent; "
                "by hand it is measured (tests/torch/beside/, no --budget-s)" % self.seconds)


def open_torch(name, device):
    """torch, on CUDA device `device`; exits 77 with one line without.
    What is alive now (torch's modules: about a million objects once
    Dynamo is in) is frozen out of Python's collector, so that release()
    between points takes milliseconds, not a tenth of a second."""
    try:
        import torch
    except ImportError as e:
        print("%s: torch is not installed here (%s): waived" % (name, e), file=sys.stderr)
        sys.exit(77)
    if not torch.cuda.is_available() or device >= torch.cuda.device_count():
        print("%s: no CUDA device %d: waived" % (name, device), file=sys.stderr)
        sys.exit(77)
    torch.cuda.set_device(device)
    gc.collect()
    gc.freeze()
    return torch


def begin(name, claim, key, args):
    """A counterpart's start: torch on args.device (open_torch: 77 without),
    its Rows, and the CSV header first when no --csv-header was given."""
    torch = open_torch(name, args.device)
    if args.csv_header is None:
        print(HEADER)
    return torch, Rows(claim, key)


def describe_torch(torch, device):
    """"PyTorch 2.11.0 on NVIDIA H100 80GB HBM3", for the first summary."""
    return "PyTorch %s on %s" % (torch.__version__, torch.cuda.get_device_properties(device).name)


def is_oom(torch, e):
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or "out of memory" in str(e)


def release(torch):
    """Frees what a point left: Python's cycles (then freezes what outlived
    them: modules imported since, such as Dynamo's on the first optimizer's
    zero_grad, so the next collection skips them), cuBLAS's and cuBLASLt's
    workspaces (33 MiB a stream on sm_90, kept for the process's life
    otherwise: C27's run at 209b719 began a point with two earlier ones still
    allocated, 66 MiB above the suite's fresh model), then the allocator's
    cache, so the next point's allocated and reserved bytes are its own, as
    the suite's fresh workload's are."""
    gc.collect()
    gc.freeze()
    clear = getattr(getattr(torch, "_C", None), "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        torch.cuda.synchronize()  # no kernel still uses a workspace
        clear()
    torch.cuda.empty_cache()


_T0 = time.monotonic()  # this process's start, for log()'s elapsed seconds


def log(name, fmt, *args):
    """One progress line on stderr, after the seconds since this process
    began ("+12.3 s"): where a counterpart's time goes, read off its log."""
    print("+%.1f s %s: %s" % (time.monotonic() - _T0, name, fmt % args if args else fmt), file=sys.stderr)


# ---------------------------------------------------------------- the suite's CSV

def read_suite(path):
    """The suite's CSV as a list of dicts (the header's names)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and set(rows[0].keys()) != set(HEADER.split(",")):
        raise ValueError("%s is not a memclaims CSV (its header is not %s)" % (path, HEADER))
    return rows


def suite_points(rows, metric):
    """The (variant, param, value) of the suite's rows of metric, in order, once each."""
    seen, out = set(), []
    for r in rows:
        if r["metric"] != metric or not r["param"]:
            continue
        p = (r["variant"], r["param"], float(r["param_value"]))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def suite_median(rows, variant, param, value, metric):
    """The median of the suite's row, or None where it has none (a row
    without a param, as a seed program's: param "", value ignored)."""
    for r in rows or []:
        if (r["variant"] == variant and r["param"] == param and r["metric"] == metric and r["median"]
                and (not param or (r["param_value"] and float(r["param_value"]) == value))):
            return float(r["median"])
    return None


# ---------------------------------------------------------------- training steps

def step_once(torch, tr, loss_host, start, stop):
    """One training step of tr (a reference script's Training: cfg.accum,
    step(loss_host)), as mlp_reference.py times it: reset the peak, CUDA
    events around the step, a synchronize. (time in s, peak allocated, peak
    reserved, allocated after the step)."""
    torch.cuda.reset_peak_memory_stats()
    start.record()
    tr.step(loss_host)
    stop.record()
    stop.synchronize()
    return (start.elapsed_time(stop) * 1e-3, torch.cuda.max_memory_allocated(),
            torch.cuda.max_memory_reserved(), torch.cuda.memory_allocated())


def steps(torch, tr, n):
    """n training steps of tr, each timed and measured alone (step_once):
    [(time in s, peak allocated, peak reserved, allocated after)]. Raises on
    a non-finite loss."""
    loss_host = torch.zeros(tr.cfg.accum, dtype=torch.float32).pin_memory()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    out = [step_once(torch, tr, loss_host, start, stop) for _ in range(n)]
    loss = float(loss_host.sum())
    if not math.isfinite(loss):
        raise ArithmeticError("the loss is %r after %d steps" % (loss, n))
    return out


PAIR_ROUNDS, PAIR_STEPS = 10, 1  # interleaved rounds, and steps of each training per round


def paired(torch, make_a, make_b, warm, rounds=PAIR_ROUNDS, per=PAIR_STEPS):
    """The step times of two trainings measured interleaved: both built
    (both live, so no memory is read here: record() reads each alone), warm
    steps of each, then `rounds` rounds of `per` steps of one and `per` of
    the other, a first in even rounds and b first in odd ones. A launch-bound
    step's time follows the host's speed, which on a shared host moves by
    10-20% from one second to the next: measured in turn, both see the same
    host, and their ratio (paired_ratio) what the trainings differ by.
    {"a": [[s, ...] per round], "b": [...]}."""
    # The trainings live in this dict alone, emptied before release(): a
    # loop variable left holding one (C23's offload training is a cycle,
    # through its forward's closure) outlived release(), whose gc.freeze()
    # then kept it for the process's life: the run at 7e9c66a began every
    # C27 point with 209,678,336 B still allocated.
    live = {}
    got = {"a": [], "b": []}
    try:
        live["a"] = make_a()
        live["b"] = make_b()
        for name in ("a", "b"):
            steps(torch, live[name], warm)
        for r in range(rounds):
            for name in (("a", "b") if r % 2 == 0 else ("b", "a")):
                got[name].append([g[0] for g in steps(torch, live[name], per)])
    finally:
        live.clear()
        release(torch)
    return got


def paired_ratio(p):
    """(median of a's steps / median of b's, lo, hi): the spread resamples
    whole rounds (a round's a and b steps together, rounds_spread), so a
    drift within the run widens it as far as it moved the ratio; (None,
    None, None) without steps."""
    ra, rb = p.get("a") or [], p.get("b") or []
    if not ra or len(ra) != len(rb) or min((t for r in rb for t in r), default=0) <= 0:
        return None, None, None

    def ratio(idx):
        return (statistics.median(t for i in idx for t in ra[i]) / statistics.median(t for i in idx for t in rb[i]))
    return (ratio(range(len(ra))),) + rounds_spread(ratio, len(ra))


def compare_steps(torch, name, make_a, make_b, warm, rec_a, rec_b):
    """t_a / t_b for a verdict sentence: (ratio, lo, hi, t_a, t_b, how),
    from paired() (how "interleaved"), or where that fails (both trainings
    may not fit at once) from the two records' own timed steps, measured one
    after the other (ratio_spread; how "one after the other")."""
    failed = False
    try:
        t0 = time.monotonic()
        p = paired(torch, make_a, make_b, warm)
        log(name, "interleaved: %d rounds in %.2f s", len(p["a"]), time.monotonic() - t0)
        r, lo, hi = paired_ratio(p)
        if r is not None:
            return (r, lo, hi) + paired_medians(p) + ("interleaved",)
    except Exception as e:  # noqa: BLE001 (the records' own steps stand)
        log(name, "interleaved steps not measured (%s): the points' own steps instead", reason(e))
        failed = True
    if failed:  # the exception's frames held a training, frozen by paired's release(): freed now
        gc.unfreeze()
        release(torch)
    r, lo, hi = ratio_spread(timed(rec_a), timed(rec_b))
    return (r, lo, hi, statistics.median(timed(rec_a)), statistics.median(timed(rec_b)), "one after the other")


def paired_medians(p):
    """(median step of a, of b) in s over all rounds."""
    return tuple(statistics.median(t for r in p[k] for t in r) for k in ("a", "b"))


# What this process measured, by training configuration: counterparts run by
# run_many.py share it, so that a configuration two claims measure (C05's
# Transformer in fp16 is C25's eager seed model; C07's, C08's and C23's seed
# 000 Transformer at sequence 64 x batch 100 are one training) is measured
# once.
_RECORDS = {}


def record(torch, key, make, warm, reps, by, profile=True, extra=None):
    """The steps of one training configuration: make() builds it (a
    Training: cfg.accum, step(loss_host)); warm + reps steps, each alone
    (step_once), then, with profile, one more under torch.profiler for the
    GPU's idle share (idle_share). key names the configuration (None: not
    shared); by says who measured it (the claim); extra(tr), if given, is
    called after the timed steps (what else the caller reads of the
    training). Returns a dict: times, peaks, reserved, after (one per step,
    step 1 first), warm, idle (or None), extra, by, again (True where
    another counterpart measured it here)."""
    full = None if key is None else (key, warm, reps, profile)
    if full in _RECORDS and (extra is None or _RECORDS[full]["extra"] is not None):
        return dict(_RECORDS[full], again=True)
    # (a record made without extra cannot give it: the training is gone, so
    # it is measured again, and the new record, with extra, is kept)
    t_make = time.monotonic()
    tr = make()
    try:
        t_steps = time.monotonic()
        got = steps(torch, tr, warm + reps)
        more = extra(tr) if extra else None
        t_prof = time.monotonic()
        idle = None
        if profile:
            loss_host = torch.zeros(tr.cfg.accum, dtype=torch.float32).pin_memory()
            idle = idle_share(torch, lambda: tr.step(loss_host), profiled_steps(got[warm:]),
                              [g[0] for g in got[warm:]])
            if idle.get("read_s") is not None:
                log(by, "idle share: %d GPU activities, profile read in %.2f s", idle["n"], idle["read_s"])
        log(by, "built in %.2f s, %d steps in %.2f s, profile %.2f s", t_steps - t_make, warm + reps,
            t_prof - t_steps, time.monotonic() - t_prof)
    finally:
        del tr
        release(torch)
    rec = {"times": [g[0] for g in got], "peaks": [g[1] for g in got], "reserved": [g[2] for g in got],
           "after": [g[3] for g in got], "warm": warm, "idle": idle, "extra": more, "by": by, "again": False}
    if full is not None:
        _RECORDS[full] = rec
    return rec


def timed(rec):
    """The timed steps' times of a record (after its warm-up)."""
    return rec["times"][rec["warm"]:]


def shared_note(rec, note):
    """note, saying where another counterpart of this run measured it."""
    return note + ("; measured once in this run, for %s (the same training)" % rec["by"] if rec.get("again")
                   else "")


# ---------------------------------------------------------------- text

def fig_list(xs, fmt):
    """"1.90, 2.51, -": each figure by fmt, None as "-"."""
    return ", ".join("-" if x is None else fmt(x) for x in xs)


def pct(x):
    return "%.1f%%" % (100 * x)


def signed_pct(x):
    return "%+.1f%%" % (100 * x)


def ratio(x):
    return "%.3g" % x


def seconds(s):
    return "%.3f ms" % (s * 1e3) if s >= 1e-3 else "%.1f us" % (s * 1e6)


def size(n):
    """Bytes as "4 KiB", "16 MiB", "1 GiB" (binary units, whole where exact)."""
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            v = n / float(1 << k)
            return ("%d %s" if v.is_integer() else "%.1f %s") % (v, unit)
    return "%d B" % n


def gbps(x):
    return "%.1f GB/s" % (x / 1e9)


def beside(label, ours, theirs, fmt, have_suite):
    """"label PyTorch a, b (suite c, d)"; the suite's part only with its CSV."""
    text = "%s PyTorch %s" % (label, fig_list(ours, fmt))
    if have_suite:
        text += " (suite %s)" % fig_list(theirs, fmt)
    return text


def peaks_line(pairs, what="peak allocated"):
    """How PyTorch's peak allocated compares with the suite's at each point
    (pairs: (what, pytorch bytes, suite bytes)): the suite's model matches
    PyTorch's allocator to the byte where its workload is PyTorch's."""
    pairs = [p for p in pairs if p[1] is not None and p[2] is not None]
    if not pairs:
        return None
    off = [p for p in pairs if p[1] != p[2]]
    text = "%s: PyTorch's equals the suite's at %d of %d points" % (what, len(pairs) - len(off), len(pairs))
    if off:
        text += "; differs at " + ", ".join("%s (%+.3f%%)" % (w, 100.0 * (a - b) / b if b else float("inf"))
                                           for w, a, b in off[:6])
        if len(off) > 6:
            text += " and %d more" % (len(off) - 6)
    return text


# ---------------------------------------------------------------- the verdict row

def differ(a, b, rel=0.2):
    """Whether two figures disagree by more than rel of the larger."""
    if a is None or b is None:
        return False
    return abs(a - b) > rel * max(abs(a), abs(b), 1e-12)


# ---------------------------------------------------------------- repeated samples, spin kernel

def sample(fn, min_n, max_n, budget_s, nwatch=0, max_noise=0.02):
    """common/sampler.c's mc_sample: fn(i) (i counting from 0) returns one
    value per series; samples are taken until the first nwatch series (0:
    all) each have noise() <= max_noise, max(min_n, max_n) samples were
    taken, or budget_s seconds (monotonic clock) have passed since the first
    sample, never fewer than min_n. Returns the series, a list of values each."""
    series, n, cap, t0 = None, 0, max(min_n, max_n, 1), time.monotonic()
    while True:
        got = fn(n)
        if series is None:
            series = [[] for _ in got]
        for s, v in zip(series, got):
            s.append(v)
        n += 1
        if n < min_n:
            continue
        watch = series[:nwatch] if 0 < nwatch < len(series) else series
        if max(noise(s) for s in watch) <= max_noise or n >= cap or time.monotonic() - t0 >= budget_s:
            return series


GATE_CYCLES = 2000000       # ~1 ms at 2 GHz: outlasts the host's launch of one timed copy
CALIBRATE_CYCLES = 20000000  # ~10 ms: the spin kernel's rate is measured over this


def spin_rate(torch):
    """Cycles per second of torch.cuda._sleep, the spin kernel that stands
    for the suite's busy and gate kernels: the median of three 10 ms spins
    timed with CUDA events, after an untimed one (the first launch loads the
    kernel). Raises AttributeError where this torch has no _sleep."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        raise AttributeError("this torch has no torch.cuda._sleep: no spin kernel")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sleep(CALIBRATE_CYCLES)
    torch.cuda.synchronize()
    rates = []
    for _ in range(3):
        start.record()
        sleep(CALIBRATE_CYCLES)
        stop.record()
        stop.synchronize()
        rates.append(CALIBRATE_CYCLES / (start.elapsed_time(stop) * 1e-3))
    return sorted(rates)[1]


# ---------------------------------------------------------------- the seeds' programs

SEED_VARIANT = "seed 000 program: %s()"  # the suite's variants of a seed's program


def seed_program_rows(args, out, which, funcs):
    """PyTorch's figures for a seed's program beside the suite's (rows
    seed_program and allocated_after), and a summary: what the seed
    printed, PyTorch here, the suite. Returns {function: returned} or None."""
    what = "seed 000 program"
    first = SEED_VARIANT % funcs[0]
    # Measured whatever --budget-s says: REPORT.md sets PyTorch's figure for
    # the seed's own code beside the seed's and the suite's (about 7 s, most
    # of it the process's import of torch).
    try:
        got = seed_program(args, which, funcs)
    except Exception as e:  # its row; the rest stands
        out.failed_why(first, "", 0, "seed_program", "bytes", what, reason(e))
        return None
    mib = 1024.0 ** 2
    parts = []
    for fn in funcs:
        var = SEED_VARIANT % fn
        returned, after = got[fn]
        out.value(var, "", 0, "seed_program", "bytes", returned,
                  "what the seed's function returns, PyTorch in a process of its own")
        out.value(var, "", 0, "allocated_after", "bytes", after, "memory_allocated() after it")
        printed = suite_median(args.suite, var, "", 0, "seed_printed")
        suite = suite_median(args.suite, var, "", 0, "seed_program")
        parts.append("%s() %.2f MB%s%s" % (
            fn, returned / mib,
            "" if suite is None else (" (suite %.2f%s)" % (suite / mib, ", equal" if suite == returned else "")),
            "" if printed is None else ", the seed printed %.2f" % (printed / mib)))
    out.flush()
    out.summary("Seed 000's program as written, in PyTorch here: " + "; ".join(parts) + ".")
    return {fn: got[fn][0] for fn in funcs}
