"""beside_idle.py: the share of a PyTorch step its GPU has nothing to run
(idle_share: the GPU's busy time over profiled steps against the timed,
unprofiled steps), and the regime that share establishes (regime:
launch-bound, GPU-bound, partly, or mixed where its spread straddles an
edge) in a verdict sentence's words (regime_clause). Standard library and
torch (passed in)."""
import statistics
import time

from beside_refs import reason, reference_module
from beside_spread import median_spread, ratio_spread, with_spread


def gpu_activities_of_kineto(torch, prof):
    """[(name, start, end)] in s of the GPU activities (kernels, memcpys,
    memsets) of a torch.profiler session, from Kineto's own event list
    (prof.profiler.kineto_results: C++ objects, no trace file): ~0.06 s for
    a seed 000 step's 15,000 events on an H200's host, against ~0.2-0.6 s
    for its chrome trace written and parsed. None where this torch has no
    such list (the chrome trace is read instead)."""
    try:
        events = prof.profiler.kineto_results.events()
        cuda = torch.autograd.DeviceType.CUDA
    except Exception:  # noqa: BLE001 (a private API: the trace stands in)
        return None
    out = []
    for e in events:
        if e.device_type() == cuda and e.duration_ns() > 0:
            out.append((e.name(), e.start_ns() * 1e-9, (e.start_ns() + e.duration_ns()) * 1e-9))
    return out


def gpu_activities_of_trace(trace):
    """[(name, start, end)] in s of the kernels, memcpys and memsets of a
    chrome trace (tests/torch/profile_reference.py's GPU_CATEGORIES)."""
    cats = reference_module("profile_reference").GPU_CATEGORIES
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [(str(e.get("name", "")), float(e.get("ts", 0)) * 1e-6,
             (float(e.get("ts", 0)) + float(e.get("dur", 0))) * 1e-6)
            for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in cats
            and float(e.get("dur", 0)) > 0]


def busy_of(intervals):
    """(span, busy) in s: first start to last end, and the length of the
    union of the intervals within it."""
    if not intervals:
        return 0.0, 0.0
    iv = sorted(intervals)
    busy, cur_s, cur_e = 0.0, iv[0][0], iv[0][1]
    for s, e in iv[1:]:
        if s > cur_e:
            busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    busy += cur_e - cur_s
    return max(e for _, e in iv) - iv[0][0], busy


IDLE_STEPS = 5  # profiled steps per point whose busy times are its row (after one left out)
IDLE_MIN_STEPS, IDLE_BUDGET_S = 3, 1.0  # fewer, down to 3, where 5 steps would take over 1 s


def profiled_steps(timed_steps):
    """How many steps to profile after timed_steps ([(time in s, ...)]):
    IDLE_STEPS, or fewer where they would take over IDLE_BUDGET_S (a slow
    step's busy time varies little), never fewer than IDLE_MIN_STEPS."""
    t = statistics.median(g[0] for g in timed_steps) if timed_steps else 0.0
    return IDLE_STEPS if t <= 0 else max(IDLE_MIN_STEPS, min(IDLE_STEPS, int(IDLE_BUDGET_S / t)))


MARK_CYCLES = 1000   # the marker kernel between profiled steps: torch.cuda._sleep's spin, ~0.5 us
MARK_NAME = "spin_kernel"  # its name in the profile (at::cuda::(anonymous namespace)::spin_kernel(long))


def split_at_marks(activities):
    """The (start, end) intervals of each profiled step, in order: the GPU
    activities between one marker kernel and the next (each step is
    launched after a marker and ends with a synchronize, so none of its work
    crosses the next marker)."""
    steps, cur = [], None
    for name, s, e in sorted(activities, key=lambda a: a[1]):
        if MARK_NAME in name:
            if cur is not None:
                steps.append(cur)
            cur = []
        elif cur is not None:
            cur.append((s, e))
    return steps


def idle_share(torch, fn, steps=IDLE_STEPS, step_times=None):
    """The share of a step the GPU has nothing to run, from its busy time
    under torch.profiler against its time unprofiled: fn() (one step)
    1 + steps times under torch.profiler with CUDA activities only, each
    after a marker kernel and ending with a synchronize, the first left out
    (the profiler's start slows it); per step its GPU busy time (the union
    of its kernels, memcpys and memsets); then share = 1 - median busy /
    median of step_times (the timed steps, CUDA events, no profiler; the
    profiled steps' own spans where none are given), at least 0, with its
    spread (ratio_spread of the busy times and step_times).

    Why not the profiled step's own span: the profiler slows the host, not
    the GPU. On an H200 seed 000's step (29-36 ms unprofiled, 28 ms of GPU
    work) took 58-68 ms with CPU and CUDA activities profiled, its GPU idle
    45-66% of that, and 40-54 ms with CUDA activities alone, idle 27-45%:
    the profiler made a step that keeps its GPU 78-97% busy read
    launch-bound. A kernel's duration is the GPU's own clock, which the
    host's slowdown does not touch.

    Returns {share, shares (1 - busy_i / median step, per profiled step),
    lo, hi, busy_s, span_s (medians, profiled), step_s (the median step
    time the share is of), n (GPU activities), read_s (seconds spent
    reading the profile)}, or {share: None, why} where the profiler gave
    none or failed (the step's figures stand)."""
    try:
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(1 + steps):
                torch.cuda._sleep(MARK_CYCLES)
                fn()
                torch.cuda.synchronize()
            torch.cuda._sleep(MARK_CYCLES)
            torch.cuda.synchronize()
        t_read = time.perf_counter()
        acts = gpu_activities_of_kineto(torch, prof)
        if not acts:
            acts = gpu_activities_of_trace(reference_module("profile_reference").chrome_trace(prof))
        read_s = time.perf_counter() - t_read
        split = split_at_marks(acts)
        if len(split) < 2:
            return {"share": None, "why": "the profiler did not record the marker kernels between steps"}
        got = [busy_of(x) for x in split[1:]]
        got = [(span, busy) for span, busy in got if span > 0]
        if not got:
            return {"share": None, "why": "the profiler recorded no GPU activity"}
        busy = [g[1] for g in got]
        times = [t for t in (step_times or []) if t > 0] or [g[0] for g in got]
        r, lo, hi = ratio_spread(busy, times)
        t_step = statistics.median(times)
        return {"share": max(0.0, 1.0 - r), "shares": [max(0.0, 1.0 - x / t_step) for x in busy],
                "lo": max(0.0, 1.0 - hi), "hi": max(0.0, 1.0 - lo),
                "span_s": statistics.median(g[0] for g in got), "busy_s": statistics.median(busy),
                "step_s": t_step, "n": len(acts) - 2 - steps, "read_s": read_s}
    except Exception as e:  # the profiler is extra: its failure leaves the figures as they are
        return {"share": None, "why": reason(e)}


LAUNCH_BOUND, GPU_BOUND = 0.5, 0.2  # idle share at or above / at or below
MIXED = "mixed"


def regime(idle):
    """Where the spread of the median idle share (idle_share's lo .. hi)
    lies: "launch-bound" (lo >= LAUNCH_BOUND), "GPU-bound" (hi <=
    GPU_BOUND), "partly launch-bound" (wholly between), else "mixed" (it
    straddles an edge: the profiled steps decide nothing); None without a
    measured share."""
    share = idle.get("share") if idle else None
    if share is None:
        return None
    lo, hi = idle.get("lo", share), idle.get("hi", share)
    if lo >= LAUNCH_BOUND:
        return "launch-bound"
    if hi <= GPU_BOUND:
        return "GPU-bound"
    if lo > GPU_BOUND and hi < LAUNCH_BOUND:
        return "partly launch-bound"
    return MIXED


def idle_of(shares):
    """idle_share's dict of the given per-step shares (tests, by hand)."""
    lo, hi = median_spread(shares)
    return {"share": statistics.median(shares), "shares": list(shares), "lo": lo, "hi": hi}


def launch_bound(idle):
    """Whether the spread establishes that launches hold the step back
    (launch-bound or partly): the cause a sentence may then give."""
    return regime(idle) in ("launch-bound", "partly launch-bound")


def regime_clause(idle, what="PyTorch's step", unit="step"):
    """"PyTorch's step is launch-bound: its GPU is idle 62% (58-66%) of the
    step (GPU busy over 5 profiled steps against the timed ones)", "... is
    mixed: ...", or "" without a measured idle share."""
    r = regime(idle)
    if r is None:
        return ""
    n = len(idle.get("shares", [])) or 1
    head = ("%s is mixed (neither launch- nor GPU-bound for certain)" % what if r == MIXED else "%s is %s" % (what, r))
    return "%s: its GPU is idle %s of the %s (GPU busy over %d profiled %ss against the timed ones)" % (
        head, with_spread(idle["share"], idle.get("lo"), idle.get("hi"), lambda x: "%.0f%%" % (100 * x)), unit, n,
        unit)
