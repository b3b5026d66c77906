#!/usr/bin/env python3
"""compile_reference.py: PyTorch's own torch.compile figures for C25 (seed
003: "torch.compile optimises graph execution and reduces temporary
tensors"), beside eager's, for the suite's Transformer workload. Run it on
the GPU machine (PyTorch 2.11, CUDA, triton, an H100):

    python3 tests/torch/compile_reference.py OUTDIR
    python3 tests/torch/compile_reference.py OUTDIR --only enc_adamw_fp32 --steps 10

For each configuration of --configs (default compile_configs.txt beside this
script: NAME, a tab, build/workload's flags) and each mode, eager then
compile, a fresh Python process (clean allocator statistics, cuBLAS handles,
Dynamo caches) builds the model, optimizer and GradScaler exactly as
transformer_reference.py does (its Training class: same layers, seed,
optimizer, autocast, loss and step; eager's rows here are the same
training as that script's) and trains it for --steps steps:

    eager:   out = model(src, tgt)                  (or model(src[, mask=, is_causal=]))
    compile: model = torch.compile(model)           (only the module: loss, backward,
             out = model(src, tgt)                   GradScaler and optimizer stay eager)

    per step: torch.cuda.reset_peak_memory_stats(); CUDA events around the
              step (K micro-steps of forward, loss, backward; the optimizer;
              zero_grad(set_to_none=True)); then memory_stats().

torch.compile is called with its defaults (mode "default", backend inductor,
fullgraph False, dynamic None): "reduce-overhead" records CUDA graphs, whose
private memory pool would change what peak allocated means and would keep
the graphs' inputs alive; "max-autotune" benchmarks kernels for minutes. The
settings in force are written to the meta files. Dynamo compiles in the
first step (forward; AOTAutograd's backward at its first call): the steps in
which Dynamo's graph counter moved are listed as compile_steps and, with the
first --warmup steps (default 2), left out of the medians. --checkpoint
configurations are refused (the checkpointed loops call the module's layers
outside the compiled module).

After the steps, a forward-only probe (--fwd-repeats times, default 3):
fresh src and tgt, then reset the peak, and the forward alone under autocast
with autograd on (training mode, as in a step), synchronised:
    fwd_peak_above_start  peak allocated minus allocated before the forward
    fwd_kept              allocated after it minus before: the output and
                          what autograd keeps for backward (autocast's cast
                          weights are freed when its region closes)
    fwd_transient         fwd_peak_above_start - fwd_kept: the temporaries
                          the forward freed before returning (bytes)
    fwd_output            the output's storage (bytes)
(medians of the repeats). If torch.compile, or any step, fails, the error's
type and first two lines are written to NAME.MODE.meta (status=error,
failed_in_step) beside the steps done so far (the traceback goes to stderr),
and the run goes on with the next one; a child that dies without its meta
gets one from the driver saying so.

It writes into OUTDIR (which must be new or empty; nothing is overwritten):

  configs.txt      one line per configuration: NAME, a tab, the flags and --steps
  NAME.MODE.csv    one row per step (MODE eager or compile), build/workload's
                   CSV as transformer_reference.py writes it (the breakdown empty)
  NAME.MODE.meta   key=value: versions and GPU, mode, status, error, steps,
                   warmup_steps, compile_steps, timed_steps, step_time_{median,
                   min,max}_s, peak_allocated_{median,min,max},
                   allocated_end_median, peak_reserved_max, the fwd_ figures,
                   Dynamo's graph and graph-break counts, Inductor's FX graph
                   cache hits and misses, and (compile) triton's version, the
                   torch.compile arguments, the dynamo., inductor. and
                   functorch. settings and the TORCHINDUCTOR_/TRITON_ variables
  summary.csv      one row per configuration and mode, from the meta files
  meta.txt         versions, GPU, triton, the compile settings (from the first
                   compile run's meta), wall_s

Exit: 0 every run ok; 1 a run failed (recorded in its meta; the others
ran); 2 usage (bad flags, unknown name, OUTDIR not empty); 77 no CUDA device
or no torch. Standard library and torch only.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import traceback

from reference_output import number
from transformer_reference import Cfg, Training, device_meta, env_meta, sdpa_choice, write_csv

MODES = ("eager", "compile")
DEFAULT_STEPS = 10
DEFAULT_WARMUP = 2
DEFAULT_FWD_REPEATS = 3
CHILD_TIMEOUT_S = 300
ERROR_EXIT = 4  # a child that recorded its failure in NAME.MODE.meta
NAME_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
# torch.compile(model) with its defaults; written to the meta files.
COMPILE_ARGS = {"compile_call": "torch.compile(model)", "compile_mode": "default",
                "compile_backend": "inductor", "compile_fullgraph": False, "compile_dynamic": None}
# Settings that change what is compiled, fused, recomputed or cached (absent
# ones are written as such: names move between releases).
SETTINGS = (
    ("dynamo", "torch._dynamo.config",
     ("recompile_limit", "cache_size_limit", "automatic_dynamic_shapes", "assume_static_by_default",
      "suppress_errors", "inline_inbuilt_nn_modules", "capture_scalar_outputs")),
    ("inductor", "torch._inductor.config",
     ("max_autotune", "triton.cudagraphs", "fx_graph_cache", "autotune_local_cache", "freezing",
      "fallback_random", "coordinate_descent_tuning", "epilogue_fusion", "pattern_matcher",
      "memory_planning", "reorder_for_locality", "compile_threads")),
    ("functorch", "torch._functorch.config", ("activation_memory_budget",)),
)
ABSENT = object()
SETTING_ENV = ("TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE", "TORCHINDUCTOR_COMPILE_THREADS",
               "TORCHDYNAMO_DISABLE", "TORCH_COMPILE_DISABLE", "TRITON_CACHE_DIR")
SUMMARY_KEYS = ("status", "timed_steps", "step_time_median_s", "step_time_min_s", "step_time_max_s",
                "peak_allocated_median", "peak_allocated_min", "peak_allocated_max", "allocated_end_median",
                "peak_reserved_max", "fwd_peak_above_start", "fwd_kept", "fwd_transient", "fwd_output",
                "compile_steps", "dynamo_unique_graphs", "dynamo_graph_breaks", "error")
GLOBAL_KEYS = ("torch_version", "cuda_version", "cudnn_version", "device_name", "sm_count", "capability",
               "total_memory", "python_version", "triton_version") + tuple(COMPILE_ARGS)


# ---------------------------------------------------------------- configurations

def read_configs(path, steps):
    """[(name, flags)] from a NAME<TAB>flags file; ValueError on a bad line."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if "\t" not in line:
                raise ValueError("%s:%d: want NAME<TAB>flags" % (path, n))
            name, flags = (s.strip() for s in line.split("\t", 1))
            if not NAME_RE.match(name) or name in dict(out):
                raise ValueError("%s:%d: bad or repeated name '%s'" % (path, n, name))
            try:
                cfg = Cfg(flags, steps)
            except ValueError as e:
                raise ValueError("%s:%d: %s" % (path, n, e))
            if cfg.checkpoint:
                raise ValueError("%s:%d: --checkpoint: the checkpointed layers would run outside "
                                 "the compiled module" % (path, n))
            out.append((name, flags))
    if not out:
        raise ValueError("%s: no configuration" % path)
    return out


# ---------------------------------------------------------------- one configuration, one mode

def one_line(e):
    """An exception as one meta value: its type and its first two non-empty
    lines (Dynamo's BackendCompilerFailed says which backend on the first and
    why on the second), at most 400 characters."""
    text = [t.strip() for t in str(e).splitlines() if t.strip()]
    return ("%s: %s" % (type(e).__name__, " | ".join(text[:2])))[:400]


def compile_settings(torch):
    """The torch.compile arguments, the settings of SETTINGS, triton's version and
    the environment variables that change compilation."""
    import importlib
    out = dict(COMPILE_ARGS)
    for prefix, modname, keys in SETTINGS:
        try:
            mod = importlib.import_module(modname)
        except Exception as e:  # noqa: BLE001 (written down, not hidden)
            out["%s.import" % prefix] = one_line(e)
            continue
        for k in keys:
            v = mod
            for part in k.split("."):
                v = getattr(v, part, ABSENT)
                if v is ABSENT:
                    break
            out["%s.%s" % (prefix, k)] = "absent" if v is ABSENT else v
    for k in SETTING_ENV:
        out[k] = os.environ.get(k, "")
    return out


def triton_version():
    try:
        import triton
        return triton.__version__
    except Exception as e:  # noqa: BLE001
        return "not available (%s)" % type(e).__name__


def dynamo_counts():
    """(unique graphs compiled, graph breaks, FX graph cache hits, misses) so far in
    this process, from torch._dynamo.utils.counters; Nones where it is missing."""
    try:
        from torch._dynamo.utils import counters
    except Exception:  # noqa: BLE001
        return None, None, None, None
    return (int(counters["stats"]["unique_graphs"]), int(sum(counters["graph_break"].values())),
            int(counters["inductor"]["fxgraph_cache_hit"]), int(counters["inductor"]["fxgraph_cache_miss"]))


def forward_probe(torch, tr, repeats):
    """The forward alone, as the module docstring says: the medians of
    (peak above start, kept, transient, output bytes) over repeats."""
    got = []
    for _ in range(repeats):
        src = torch.randn(tr.shape, device=tr.dev)
        tgt = torch.randn(tr.shape, device=tr.dev)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        with tr.autocast():
            out = tr.forward(src, tgt)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        kept = torch.cuda.memory_allocated() - base
        got.append((peak, kept, peak - kept, out.untyped_storage().nbytes()))
        del src, tgt, out
    return [int(statistics.median(col)) for col in zip(*got)]


def run_child(name, flags, outdir, mode, steps, warmup, device, fwd_repeats):
    try:
        import torch
    except ImportError:
        print("compile_reference: torch is not installed here: waived", file=sys.stderr)
        return 77
    if not torch.cuda.is_available() or device >= torch.cuda.device_count():
        print("compile_reference: no CUDA device %d: waived" % device, file=sys.stderr)
        return 77
    cfg = Cfg(flags, steps)
    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    torch.manual_seed(0)
    meta = device_meta(torch, device)
    meta.update(env_meta())
    meta.update(mode=mode, status="ok", error="", steps=cfg.steps, warmup_steps=warmup)
    if mode == "compile":  # eager imports neither triton nor torch._dynamo here
        meta["triton_version"] = triton_version()
        meta.update(compile_settings(torch))
    rows, compile_steps, fwd, tr = [], [], None, None
    # Dynamo's counters, read in compile mode only (eager never imports torch._dynamo here)
    counts = dynamo_counts if mode == "compile" else (lambda: (None, None, None, None))
    graphs0 = counts()[0] or 0
    try:
        tr = Training(torch, cfg, dev, (lambda m: torch.compile(m)) if mode == "compile" else None)
        loss_host = torch.zeros(cfg.accum, dtype=torch.float32).pin_memory()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        prev_scale = 65536.0  # GradScaler's init_scale
        torch.cuda.synchronize()
        for step in range(1, cfg.steps + 1):
            before = counts()[0] or 0
            torch.cuda.reset_peak_memory_stats()
            start.record()
            tr.step(loss_host)
            stop.record()
            stop.synchronize()
            st = torch.cuda.memory_stats()
            if (counts()[0] or 0) > before:
                compile_steps.append(step)
            scale, skipped = 1.0, 0
            if tr.scaler is not None:
                scale = tr.scaler.get_scale()
                skipped = int(scale < prev_scale)
                prev_scale = scale
            rows.append([step, st["allocated_bytes.all.peak"], st["allocated_bytes.all.current"],
                         st["reserved_bytes.all.peak"], st["reserved_bytes.all.current"],
                         start.elapsed_time(stop) * 1e-3, float(loss_host.sum()), scale, skipped, "ok"]
                        + [None] * 7)
        if fwd_repeats > 0:
            before = counts()[0] or 0
            fwd = forward_probe(torch, tr, fwd_repeats)
            meta["fwd_compiled"] = int((counts()[0] or 0) > before)  # 1: the probe compiled again
    except Exception as e:  # noqa: BLE001 (recorded: a compile failure is a result)
        traceback.print_exc()
        meta["status"], meta["error"] = "error", one_line(e)
        meta["failed_in_step"] = len(rows) + 1 if len(rows) < cfg.steps else "forward probe"
    write_csv(os.path.join(outdir, "%s.%s.csv" % (name, mode)), rows)

    timed = [r for r in rows if r[0] > warmup and r[0] not in compile_steps]
    meta["compile_steps"] = " ".join(str(s) for s in compile_steps)
    meta["timed_steps"] = len(timed)
    times = [r[5] for r in timed]
    peaks = [r[1] for r in timed]
    meta["step_time_median_s"] = number(statistics.median(times)) if timed else ""
    meta["step_time_min_s"] = number(min(times)) if timed else ""
    meta["step_time_max_s"] = number(max(times)) if timed else ""
    meta["peak_allocated_median"] = number(statistics.median(peaks)) if timed else ""
    meta["peak_allocated_min"] = min(peaks) if timed else ""
    meta["peak_allocated_max"] = max(peaks) if timed else ""
    meta["allocated_end_median"] = number(statistics.median([r[2] for r in timed])) if timed else ""
    meta["peak_reserved_max"] = max(r[3] for r in rows) if rows else ""
    for k, v in zip(("fwd_peak_above_start", "fwd_kept", "fwd_transient", "fwd_output"), fwd or [""] * 4):
        meta[k] = v
    meta["fwd_repeats"] = fwd_repeats if fwd else 0
    graphs, breaks, hits, misses = counts()
    meta.update(dynamo_unique_graphs="" if graphs is None else graphs - graphs0,
                dynamo_graph_breaks="" if breaks is None else breaks,
                inductor_fxgraph_cache_hit="" if hits is None else hits,
                inductor_fxgraph_cache_miss="" if misses is None else misses)
    if tr is not None:
        try:
            meta["sdpa_backend"] = sdpa_choice(torch, cfg, dev, tr.amp_dtype)
        except Exception as e:  # noqa: BLE001
            meta["sdpa_backend"] = "unknown (%s)" % type(e).__name__
    write_meta(os.path.join(outdir, "%s.%s.meta" % (name, mode)), meta)
    if meta["status"] == "ok":
        print("compile_reference: %-24s %-7s step %s s, peak_allocated %s (medians of %d steps), "
              "compile_steps [%s], forward transient %s bytes"
              % (name, mode, meta["step_time_median_s"], meta["peak_allocated_median"], len(timed),
                 meta["compile_steps"], meta["fwd_transient"]), file=sys.stderr)
    else:
        print("compile_reference: %-24s %-7s failed in step %s: %s"
              % (name, mode, meta["failed_in_step"], meta["error"]), file=sys.stderr)
    return 0 if meta["status"] == "ok" else ERROR_EXIT


# ---------------------------------------------------------------- files

def write_meta(path, meta):
    with open(path + ".tmp", "w") as f:
        for k, v in meta.items():
            f.write("%s=%s\n" % (k, str(v).replace("\n", " ")))
    os.replace(path + ".tmp", path)


def read_meta(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, sep, v = line.rstrip("\n").partition("=")
            if sep:
                out[k] = v
    return out


def csv_field(v):
    v = str(v)
    return '"%s"' % v.replace('"', '""') if any(c in v for c in ',"\n') else v


def write_summary(outdir, runs):
    """summary.csv (one row per run, from its meta) and meta.txt (the global keys
    of the first compile run's meta, else the first meta)."""
    path = os.path.join(outdir, "summary.csv")
    metas = []
    with open(path + ".tmp", "w") as f:
        f.write(",".join(("name", "mode") + SUMMARY_KEYS) + "\n")
        for name, mode in runs:
            meta = read_meta(os.path.join(outdir, "%s.%s.meta" % (name, mode)))
            metas.append(meta)
            f.write(",".join(csv_field(v) for v in [name, mode] + [meta.get(k, "") for k in SUMMARY_KEYS])
                    + "\n")
    os.replace(path + ".tmp", path)
    full = [m for m in metas if "torch_version" in m]  # not the driver's note on a crashed child
    return next((m for m in full if m.get("mode") == "compile"), full[0] if full else {})


# ---------------------------------------------------------------- driver

def run_one(name, mode, cmd, outdir):
    """One child: its exit status. A child that left no meta (crashed, timed
    out) gets one saying so."""
    try:
        rc = subprocess.run(cmd, timeout=CHILD_TIMEOUT_S).returncode
        why = "the child process exited with %d without writing its meta" % rc
    except subprocess.TimeoutExpired:
        rc, why = -1, "timed out after %d s" % CHILD_TIMEOUT_S
    meta_path = os.path.join(outdir, "%s.%s.meta" % (name, mode))
    if rc not in (0, 77) and not os.path.exists(meta_path):
        write_meta(meta_path, {"mode": mode, "status": "error", "error": why})
    return rc


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", help="a new or empty folder for the CSV and meta files")
    ap.add_argument("--configs", default=os.path.join(here, "compile_configs.txt"),
                    help="NAME<TAB>build/workload flags per line (default: compile_configs.txt)")
    ap.add_argument("--only", help="comma-separated configuration names (default: all)")
    ap.add_argument("--modes", default=",".join(MODES), help="eager,compile (default: both)")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="steps per configuration and mode")
    ap.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                    help="first steps left out of the medians (besides compile steps)")
    ap.add_argument("--fwd-repeats", type=int, default=DEFAULT_FWD_REPEATS,
                    help="forward-only probes after the steps (0: none)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device number")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # one configuration, in this process
    ap.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.steps < 1 or a.device < 0 or a.warmup < 0 or a.fwd_repeats < 0:
        ap.error("--steps must be >= 1, --warmup, --fwd-repeats and --device >= 0")
    if a.warmup >= a.steps:
        ap.error("--warmup %d leaves no step of %d to time" % (a.warmup, a.steps))
    modes = [m for m in a.modes.split(",") if m]
    if not modes or any(m not in MODES for m in modes) or len(set(modes)) != len(modes):
        ap.error("--modes takes eager and/or compile, comma-separated")
    try:
        configs = read_configs(a.configs, a.steps)
    except (OSError, ValueError) as e:
        print("compile_reference: bad configurations: %s" % e, file=sys.stderr)
        return 2
    table = dict(configs)
    if a.list:
        for n, fl in configs:
            print("%s\t%s --steps %d" % (n, fl, a.steps))
        return 0
    if a.child:
        if a.child not in table or not a.mode:
            ap.error("unknown configuration %s, or no --mode" % a.child)
        return run_child(a.child, table[a.child], a.outdir, a.mode, a.steps, a.warmup, a.device,
                         a.fwd_repeats)

    names = [n for n, _ in configs]
    if a.only:
        names = [s for s in a.only.split(",") if s]
        bad = [s for s in names if s not in table]
        if bad or not names:
            ap.error("unknown configuration(s): %s (see --list)" % ",".join(bad))
    if os.path.isdir(a.outdir) and os.listdir(a.outdir):
        print("compile_reference: %s is not empty: give a new folder (nothing is overwritten)" % a.outdir,
              file=sys.stderr)
        return 2
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "configs.txt"), "w") as f:
        f.write("# name<TAB>build/workload flags; written by tests/torch/compile_reference.py\n")
        for n in names:
            f.write("%s\t%s --steps %d\n" % (n, table[n], a.steps))
    t0 = time.monotonic()
    runs, failed = [], []
    for n in names:
        for m in modes:
            cmd = [sys.executable, os.path.abspath(__file__), a.outdir, "--configs", a.configs,
                   "--child", n, "--mode", m, "--steps", str(a.steps), "--warmup", str(a.warmup),
                   "--fwd-repeats", str(a.fwd_repeats), "--device", str(a.device)]
            rc = run_one(n, m, cmd, a.outdir)
            if rc == 77:
                return 77
            runs.append((n, m))
            if rc != 0:
                failed.append("%s %s" % (n, m))
                print("compile_reference: %s %s failed (exit %d): see %s.%s.meta"
                      % (n, m, rc, n, m), file=sys.stderr)
    first = write_summary(a.outdir, runs)
    with open(os.path.join(a.outdir, "meta.txt"), "w") as f:
        for k, v in first.items():
            if (k in GLOBAL_KEYS or k in SETTING_ENV or k in env_meta()
                    or k.split(".")[0] in [p for p, _, _ in SETTINGS]):
                f.write("%s=%s\n" % (k, v))
        f.write("wall_s=%.1f\n" % (time.monotonic() - t0))
    print("compile_reference: %d runs in %.1f s, %d failed%s"
          % (len(runs), time.monotonic() - t0, len(failed), (": " + ", ".join(failed)) if failed else ""),
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
