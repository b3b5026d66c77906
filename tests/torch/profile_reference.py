#!/usr/bin/env python3
"""profile_reference.py: PyTorch's split of one training step's GPU time by
kind, in build/workload --profile's table (issue 19). Run it on the GPU
machine with build/workload's flags:

    python3 tests/torch/profile_reference.py --arch transformer --d-model 1024 --seq 256 \\
        --batch 16 --optimizer adam --precision bf16 [--steps 10] [--csv FILE]
    python3 tests/torch/profile_reference.py --layers 4 --in 1024 --width 1024 --out 1024 \\
        --batch 256 --optimizer adam [--csv FILE]

It builds the model, optimizer and GradScaler with the reference scripts'
own Training classes (transformer_reference.py for --arch transformer|encoder,
mlp_reference.py for the MLP, the default), runs --steps steps (10, as
build/workload) unprofiled, then one more, step --steps + 1, as build/workload
--profile does:

    with torch.profiler.profile(activities=[ProfilerActivity.CUDA]):
        start.record(); one training step; stop.record(); stop.synchronize()

Every GPU activity of that step (kernels, memcpys, memsets: the chrome
trace's "kernel", "gpu_memcpy" and "gpu_memset" events) is put in a kind by
its name, lower-cased: the first rule of RULES with a substring in the name,
else elementwise. The kinds are build/workload's
(common/workload/core/wl_profile_table.h), which times each launch wrapper
as the kind it names; the rules below sort PyTorch's kernels the same way:

    copy         memcpy, memset (every copy, H2D and D2H included)
    attention    flash, fmha, sdpa, attention, cudnn: SDPA's kernels, flash,
                 memory-efficient (fmha_cutlass*, before gemm's cutlass) and
                 cuDNN's, forward and backward
    gemm         gemm, nvjet, xmma, cublas, cutlass, gemv, splitkreduce:
                 cuBLAS and cuBLASLt, their split-K reductions included
    layernorm    layer_norm, layernorm, gammabeta, rowwisemoments: LayerNorm
                 forward and backward, gamma and beta gradients included
    optimizer    multi_tensor_apply, foreach, adam, sgd, unscale, non_finite,
                 amp_update_scale: the foreach optimizers and GradScaler
    copy         copy, fill: casts (direct_copy_kernel), contiguous copies,
                 cat, fills (zeros, GradScaler's found_inf)
    elementwise  everything else: softmax, dropout, activations, adds, sums
                 (the bias gradients), mse_loss, randn

idle is the step's elapsed time between the two CUDA events less the sum of
the kinds (at least 0), total that elapsed time. The profiler's own cost
(CUPTI) lands in idle, as the events' cost does in build/workload's.

Output, on stderr as build/workload's: a line naming the flags and the step,
then the table (kind, ms, share in percent); --csv FILE (or --profile-csv
FILE, build/workload's name) writes it as CSV kind,ms,share, through a
temporary name. build/workload's --profile and --sms are accepted and change
nothing here; --lr (no kernel changes with it) and --seed likewise, --seed
seeding torch. --fused, --offload, --model-only and --verify are refused.

Exit: 0 ok, 2 usage, 77 no torch or no CUDA device. Standard library and
torch only.
"""
import json
import os
import sys
import tempfile

KINDS = ("gemm", "attention", "layernorm", "elementwise", "optimizer", "copy")
# (kind, substrings of the lower-cased name): the first rule with a match
# wins; none: elementwise. The order matters: memcpy and memset first,
# attention before gemm (the memory-efficient kernels are fmha_cutlass*),
# gemm, layernorm and optimizer before copy and fill.
RULES = (
    ("copy", ("memcpy", "memset")),
    ("attention", ("flash", "fmha", "sdpa", "attention", "cudnn")),
    ("gemm", ("gemm", "nvjet", "xmma", "cublas", "cutlass", "gemv", "splitkreduce")),
    ("layernorm", ("layer_norm", "layernorm", "gammabeta", "rowwisemoments")),
    ("optimizer", ("multi_tensor_apply", "foreach", "adam", "sgd", "unscale", "non_finite",
                   "amp_update_scale")),
    ("copy", ("copy", "fill")),
)
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
DEFAULT_STEPS = 10  # build/workload's
# build/workload flags with no PyTorch eager counterpart here, and why.
REFUSED = {
    "--fused": "is a compiler's fusion, not PyTorch eager (tests/torch/compile_reference.py)",
    "--offload": "is save_on_cpu's (tests/torch/offload_reference.py)",
    "--model-only": "runs no GPU: nothing to profile",
    "--verify": "is build/workload's arithmetic check",
}
# build/workload flags that change no kernel: taken and ignored.
IGNORED = {"--profile": 0, "--sms": 1, "--lr": 1}


class Usage(Exception):
    pass


def classify(name):
    """The kind of a GPU activity, from its name."""
    low = name.lower()
    for kind, subs in RULES:
        if any(s in low for s in subs):
            return kind
    return "elementwise"


def split(activities, total_ms):
    """(name, duration µs) pairs into the table: {kind: ms}, idle, total."""
    us = dict.fromkeys(KINDS, 0.0)
    for name, dur in activities:
        us[classify(name)] += max(dur, 0.0)
    ms = {k: us[k] / 1000.0 for k in KINDS}
    busy = 0.0
    for k in KINDS:
        busy += ms[k]
    return ms, max(total_ms - busy, 0.0), total_ms


def rows(table):
    """(name, ms, share %) of each row: the kinds, idle, total."""
    ms, idle, total = table

    def share(v):
        return 100.0 * v / total if total > 0 else 0.0
    return [(k, ms[k], share(ms[k])) for k in KINDS] + [("idle", idle, share(idle)),
                                                         ("total", total, share(total))]


def format_table(table):
    lines = ["%-11s %9s %8s" % ("kind", "ms", "share")]
    lines += ["%-11s %9.3f %7.1f%%" % r for r in rows(table)]
    return "\n".join(lines) + "\n"


def format_csv(table):
    return "kind,ms,share\n" + "".join("%s,%.4f,%.2f\n" % r for r in rows(table))


def write_csv(path, table):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "w") as f:
            f.write(format_csv(table))
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise Usage("cannot write %s: %s" % (path, e.strerror))


def chrome_trace(prof):
    """The profile's chrome trace, as a dict: written by the profiler's own
    writer (Kineto's, C++) to a temporary file, read back, the file removed.
    Reading it is much faster than prof.events(), which builds a Python
    FunctionEvent for every op and kernel."""
    fd, path = tempfile.mkstemp(prefix="memclaims_profile.", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def gpu_activities(trace):
    """(name, duration µs) of each kernel, memcpy and memset of a chrome trace."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [(e.get("name", ""), float(e.get("dur", 0))) for e in events
            if e.get("ph") == "X" and str(e.get("cat", "")).lower() in GPU_CATEGORIES]


# ---------------------------------------------------------------- flags

def parse(argv):
    """Own options out of build/workload's flags: (arch, model flags, steps,
    device, seed, csv path)."""
    arch, steps, device, seed, csv = "mlp", DEFAULT_STEPS, 0, 0, None
    rest = []
    i = 0
    while i < len(argv):
        a = argv[i]
        v = argv[i + 1] if i + 1 < len(argv) else None
        if a in ("-h", "--help"):
            raise Usage("help")
        if a in REFUSED:
            raise Usage("%s %s" % (a, REFUSED[a]))
        if a in IGNORED:
            if IGNORED[a] and v is None:
                raise Usage("%s needs a value" % a)
            i += 1 + IGNORED[a]
            continue
        if a in ("--csv", "--profile-csv", "--steps", "--device", "--seed", "--arch"):
            if v is None or v == "":
                raise Usage("%s needs a value" % a)
            if a in ("--csv", "--profile-csv"):
                csv = v
            elif a == "--arch":
                if v not in ("mlp", "transformer", "encoder"):
                    raise Usage("--arch needs mlp, transformer or encoder, not '%s'" % v)
                arch = v
                if v != "mlp":
                    rest += [a, v]
            else:
                try:
                    n = int(v)
                except ValueError:
                    n = -1
                if n < (1 if a == "--steps" else 0):
                    raise Usage("%s needs a whole number%s, not '%s'" % (a, " >= 1" if a == "--steps" else "", v))
                if a == "--steps":
                    steps = n
                elif a == "--device":
                    device = n
                else:
                    seed = n
            i += 2
            continue
        rest.append(a)
        i += 1
    return arch, rest, steps, device, seed, csv


def build_cfg(arch, rest, steps):
    """The reference script's Cfg and Training class for these flags."""
    if arch == "mlp":
        import mlp_reference as ref
        flags = "--optimizer sgd --precision fp32 " + " ".join(rest)  # build/workload's defaults
    else:
        import transformer_reference as ref
        flags = " ".join(rest)
    try:
        return ref.Cfg(flags, steps), ref.Training
    except ValueError as e:
        raise Usage(str(e))


# ---------------------------------------------------------------- the profiled step

def profile_step(torch, tr, loss_host):
    """One training step under torch.profiler: its GPU activities and its
    elapsed ms between CUDA events."""
    from torch.profiler import ProfilerActivity, profile
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start.record()
        tr.step(loss_host)
        stop.record()
        stop.synchronize()
    total_ms = start.elapsed_time(stop)
    return gpu_activities(chrome_trace(prof)), total_ms


def main(argv):
    try:
        arch, rest, steps, device, seed, csv = parse(argv)
        cfg, Training = build_cfg(arch, rest, steps)
    except Usage as e:
        if str(e) == "help":
            print(__doc__.split("\n\n")[0] + "\n(see the top of this file)")
            return 0
        print("profile_reference: %s" % e, file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("profile_reference: torch is not installed here: waived", file=sys.stderr)
        return 77
    if not torch.cuda.is_available() or device >= torch.cuda.device_count():
        print("profile_reference: no CUDA device %d: waived" % device, file=sys.stderr)
        return 77
    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    torch.manual_seed(seed)
    tr = Training(torch, cfg, dev)
    loss_host = torch.zeros(cfg.accum, dtype=torch.float32).pin_memory()
    for _ in range(steps):
        tr.step(loss_host)
    activities, total_ms = profile_step(torch, tr, loss_host)
    table = split(activities, total_ms)
    sys.stderr.write("profile: %s: step %d (after %d warm-up steps), %d GPU activities\n"
                     % (" ".join(argv), steps + 1, steps, len(activities)))
    sys.stderr.write(format_table(table))
    if csv:
        try:
            write_csv(csv, table)
        except Usage as e:
            print("profile_reference: %s" % e, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
