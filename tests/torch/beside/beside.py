"""beside.py: what the PyTorch counterparts in tests/torch/beside/ share.
Each KEY.py measures with PyTorch what the suite's experiment KEY measures,
on the same shapes, and prints its figures as rows of that experiment's own
CSV. scripts/run-all --pytorch calls it after the experiment and appends
the rows to RUN/KEY.csv; it is as usable by hand:

    python3 tests/torch/beside/KEY.py [--suite-csv FILE] [--csv-header LINE]
                                      [--quick] [--repeats N] [--warmup N] [--device N]

Output (stdout): rows of the suite's tidy CSV (common/csv.h, MC_CSV_HEADER):
  - figures: claim and experiment as the suite's; variant "pytorch:" and the
    suite variant the row stands beside ("pytorch:sgemm",
    "pytorch:weight_bound_fp16"); param, param_value, metric and unit as the
    suite's row; n..stdev over the measured repeats (sample stdev, the median
    of an even count the mean of the middle two, as common/stats.c); status
    ok, oom (the point ran out of memory) or failed; note: how it was measured
    or why it failed. A point that fails is such a row; the others go on.
  - summaries: variant "pytorch", metric "pytorch_beside", no figures, the
    note setting PyTorch's figure beside the suite's ("speed-up ... PyTorch
    1.9 (suite 1.7)"); REPORT.md prints each under the claim.
  No verdict, finding or verification rows: the verdict is the suite's own.
  Without --csv-header the header comes first (a CSV of its own); with it,
  LINE must be the header these rows are written for (the first line of the
  CSV they are appended to), else exit 2.
--suite-csv FILE: the suite's CSV of the same run. The points measured are
  the ones it measured (its --quick, the points it left out or ran out of
  memory at), and the summaries give its figures. Without it, the
  experiment's own lists (with --quick, its quick lists), and summaries with
  PyTorch's figures alone.
--repeats, --warmup: the experiment's defaults unless given.
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

    def __init__(self, claim, key, out=sys.stdout):
        self.claim, self.key, self.out = claim, key, out
        self.pending = []
        self.failures = []  # (what, why) of the points that failed

    def emit(self, variant, param, value, metric, unit, samples, status="ok", note=""):
        """A figure over samples (a list; [] for none, as an oom or failed row)."""
        s = stats(samples) if samples else None
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
        why = reason(e)
        self.emit(variant, param, value, metric, unit, [], "oom" if is_oom(torch, e) else "failed", why)
        self.flush()
        self.failures.append((what, why))
        print("beside/%s: %s: %s" % (self.key, what, why), file=sys.stderr)

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

def parse_args(doc, repeats, warmup, extra=None):
    """The shared options (the module docstring says what they do); extra(ap)
    adds a script's own. Exits 2 on bad input, printing the header first
    unless --csv-header names it."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--suite-csv", help="the suite's CSV of the same run: its points, its figures")
    ap.add_argument("--csv-header", help="the header of the CSV these rows are appended to")
    ap.add_argument("--quick", action="store_true", help="the experiment's --quick lists")
    ap.add_argument("--repeats", type=int, default=repeats, help="measured repeats (default %d)" % repeats)
    ap.add_argument("--warmup", type=int, default=warmup, help="warm-up repeats (default %d)" % warmup)
    ap.add_argument("--device", type=int, default=0, help="CUDA device number")
    if extra:
        extra(ap)
    a = ap.parse_args()
    if a.repeats < 1 or a.warmup < 0 or a.device < 0:
        ap.error("--repeats must be >= 1, --warmup and --device >= 0")
    if a.csv_header is not None and a.csv_header.strip() != HEADER:
        ap.error("--csv-header is not the suite's CSV header (%s): these rows would not fit" % HEADER)
    a.suite = []
    if a.suite_csv:
        try:
            a.suite = read_suite(a.suite_csv)
        except (OSError, ValueError) as e:
            ap.error("--suite-csv: %s" % e)
    return a


def open_torch(name, device):
    """torch, on CUDA device `device`; exits 77 with one line without."""
    try:
        import torch
    except ImportError as e:
        print("%s: torch is not installed here (%s): waived" % (name, e), file=sys.stderr)
        sys.exit(77)
    if not torch.cuda.is_available() or device >= torch.cuda.device_count():
        print("%s: no CUDA device %d: waived" % (name, device), file=sys.stderr)
        sys.exit(77)
    torch.cuda.set_device(device)
    return torch


def describe_torch(torch, device):
    """"PyTorch 2.11.0 on NVIDIA H100 80GB HBM3", for the first summary."""
    return "PyTorch %s on %s" % (torch.__version__, torch.cuda.get_device_properties(device).name)


def is_oom(torch, e):
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or "out of memory" in str(e)


def reason(e):
    """An exception in one line: its type and the first line of its message."""
    msg = str(e).strip().split("\n")[0][:200]
    return "%s: %s" % (type(e).__name__, msg) if msg else type(e).__name__


def release(torch):
    """Frees what a point left: Python's cycles, then the allocator's cache,
    so the next point's reserved bytes are its own."""
    gc.collect()
    torch.cuda.empty_cache()


def log(name, fmt, *args):
    print("%s: %s" % (name, fmt % args if args else fmt), file=sys.stderr)


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
    """The median of the suite's row, or None where it has none."""
    for r in rows:
        if (r["variant"] == variant and r["param"] == param and r["metric"] == metric
                and r["param_value"] and float(r["param_value"]) == value and r["median"]):
            return float(r["median"])
    return None


# ---------------------------------------------------------------- training steps

def train(torch, tr, warm, reps):
    """warm + reps training steps of tr (a reference script's Training:
    step(loss_host)), each as mlp_reference.py times it: reset the peak,
    CUDA events around the step, a synchronize. Returns (the measured steps'
    times in s, the last measured step's peak allocated and peak reserved
    bytes). Raises on a non-finite loss."""
    K = tr.cfg.accum
    loss_host = torch.zeros(K, dtype=torch.float32).pin_memory()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times, peak, reserved = [], 0, 0
    torch.cuda.synchronize()
    for step in range(warm + reps):
        torch.cuda.reset_peak_memory_stats()
        start.record()
        tr.step(loss_host)
        stop.record()
        stop.synchronize()
        if step >= warm:
            st = torch.cuda.memory_stats()
            times.append(start.elapsed_time(stop) * 1e-3)
            peak, reserved = st["allocated_bytes.all.peak"], st["reserved_bytes.all.peak"]
    loss = float(loss_host.sum())
    if not math.isfinite(loss):
        raise ArithmeticError("the loss is %r after %d steps" % (loss, warm + reps))
    return times, peak, reserved


def steps(torch, tr, n):
    """n training steps of tr, each timed and measured alone as train()
    does: [(time in s, peak allocated, peak reserved, allocated after the
    step)], for counterparts that need each step's figures (the first
    step's, the bytes left between steps). Raises on a non-finite loss."""
    out = []
    for _ in range(n):
        times, peak, reserved = train(torch, tr, 0, 1)
        out.append((times[0], peak, reserved, torch.cuda.memory_allocated()))
    return out


def reference_module(name):
    """tests/torch/NAME.py (mlp_reference, transformer_reference), imported."""
    here = os.path.dirname(os.path.abspath(__file__))
    parent = os.path.dirname(here)
    if parent not in sys.path:
        sys.path.insert(1, parent)
    return __import__(name)


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


def peaks_line(pairs):
    """How PyTorch's peak allocated compares with the suite's at each point
    (pairs: (what, pytorch bytes, suite bytes)): the suite's model matches
    PyTorch's allocator to the byte where its workload is PyTorch's."""
    pairs = [p for p in pairs if p[1] is not None and p[2] is not None]
    if not pairs:
        return None
    off = [p for p in pairs if p[1] != p[2]]
    text = "peak allocated: PyTorch's equals the suite's at %d of %d points" % (len(pairs) - len(off), len(pairs))
    if off:
        text += "; differs at " + ", ".join("%s (%+.3f%%)" % (w, 100.0 * (a - b) / b if b else float("inf"))
                                           for w, a, b in off[:6])
        if len(off) > 6:
            text += " and %d more" % (len(off) - 6)
    return text


# ---------------------------------------------------------------- repeated samples, spin kernel

def noise(xs):
    """The robust relative spread of xs, 1.4826 * MAD / |median| (stats.c's
    mc_stats_noise); 0 where the median is 0."""
    med = statistics.median(xs)
    mad = statistics.median([abs(x - med) for x in xs])
    return 1.4826 * mad / abs(med) if med else 0.0


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


def percentile(xs, p):
    """Percentile p (0..100) of xs, linear between order statistics (band.c's
    mc_percentile, "type 7"); None for no samples."""
    s = sorted(xs)
    if not s:
        return None
    h = (len(s) - 1) * p / 100.0
    i = int(math.floor(h))
    return s[-1] if i + 1 >= len(s) else s[i] + (h - i) * (s[i + 1] - s[i])


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
