#!/usr/bin/env python3
"""no_grad_reference.py: PyTorch's own figures for C27 (build/c27_no_grad_eval,
common/workload/mlp/mlp_forward.c). Run it on the GPU machine:

    python3 tests/torch/no_grad_reference.py OUTDIR
    python3 tests/torch/no_grad_reference.py OUTDIR --only mlp_b256_grad,mlp_b256_no_grad

For each configuration in CONFIGS, a fresh Python process (so the caching
allocator's statistics, the cuBLAS handle and its workspaces start clean, as
C27 starts each figure from a fresh model) builds C27's network and runs one
forward, with autograd (grad) or under torch.no_grad():

    model = Sequential(Linear(in,H), ReLU(), [Linear(H,H), ReLU()] * (L-2), Linear(H,out))
    torch.cuda.reset_peak_memory_stats()
    [with torch.no_grad():]
        x = torch.randn(B, in); out = model(x)
    del out, x

It writes OUTDIR/no_grad_reference.json (written to a temporary name and
renamed):

    {"meta": {torch and CUDA versions, GPU, SM count, allocator settings},
     "configs": [{"name", "workload", "layers", "in", "width", "out", "batch",
                  "mode" ("grad" | "no_grad"),
                  "allocated_before"  memory_allocated() before x: weights only
                  "peak_allocated"    max_memory_allocated() over x = randn;
                                      out = model(x) (C27's peak_allocated)
                  "allocated_out"     memory_allocated() when model(x) returns
                                      (C27's allocated_out)
                  "allocated_end"     memory_allocated() after del out, x
                                      (C27's allocated_end: weights + workspaces)
                  "peak_reserved"     max_memory_reserved() over the same span
                  "forward_time_s"    CUDA events around x = randn ... model(x),
                                      the first (cold) forward
                  "status"            "ok" or "oom"}, ...]}

C27 --model-only writes the same figures (variant mlp/grad or mlp/no_grad,
param batch); they must be equal byte for byte. Exit: 0 ok, 1 a
configuration failed, 2 usage, 77 no CUDA device. Standard library and
torch only.
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

# C27's sweep: the MLP (L=8, in = width = out = 1024, fp32) at these batches.
LAYERS, IN, WIDTH, OUT = 8, 1024, 1024, 1024
BATCHES = [256, 1024, 4096, 16384]
MODES = ["grad", "no_grad"]
CONFIGS = [("mlp_b%d_%s" % (b, m), b, m) for b in BATCHES for m in MODES]
CHILD_TIMEOUT_S = 120


def run_child(name, batch, mode, device):
    """One forward in this process; prints one JSON object on stdout."""
    try:
        import torch
    except ImportError:
        print("no_grad_reference: torch is not installed here: waived", file=sys.stderr)
        return 77
    from torch import nn

    if not torch.cuda.is_available() or device >= torch.cuda.device_count():
        print("no_grad_reference: no CUDA device %d: waived" % device, file=sys.stderr)
        return 77
    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    torch.manual_seed(0)
    dims = [IN] + [WIDTH] * (LAYERS - 1) + [OUT]
    mods = []
    for i in range(LAYERS):  # weight then bias of each Linear, made on the device
        mods.append(nn.Linear(dims[i], dims[i + 1], device=dev))
        if i < LAYERS - 1:
            mods.append(nn.ReLU())
    model = nn.Sequential(*mods)
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    ctx = torch.no_grad() if mode == "no_grad" else contextlib.nullcontext()
    status = "ok"
    rec = {"name": name, "workload": "mlp", "layers": LAYERS, "in": IN, "width": WIDTH,
           "out": OUT, "batch": batch, "mode": mode, "allocated_before": before}
    try:
        start.record()
        with ctx:
            x = torch.randn(batch, IN, device=dev)
            out = model(x)
        stop.record()
        stop.synchronize()
        rec["allocated_out"] = torch.cuda.memory_allocated()
        rec["peak_allocated"] = torch.cuda.max_memory_allocated()
        rec["peak_reserved"] = torch.cuda.max_memory_reserved()
        rec["forward_time_s"] = start.elapsed_time(stop) * 1e-3
        if mode == "grad" and out.grad_fn is None:
            print("no_grad_reference: %s: the output has no graph" % name, file=sys.stderr)
            return 1
        if mode == "no_grad" and out.grad_fn is not None:
            print("no_grad_reference: %s: the output has a graph" % name, file=sys.stderr)
            return 1
        del out, x
    except torch.cuda.OutOfMemoryError:
        status = "oom"
    torch.cuda.synchronize()
    rec["allocated_end"] = torch.cuda.memory_allocated()
    rec["status"] = status
    props = torch.cuda.get_device_properties(device)
    rec["meta"] = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "device_name": props.name,
        "sm_count": props.multi_processor_count,
        "capability": "%d.%d" % (props.major, props.minor),
        "total_memory": props.total_memory,
        "python_version": sys.version.split()[0],
        "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG", ""),
        "CUBLASLT_WORKSPACE_SIZE": os.environ.get("CUBLASLT_WORKSPACE_SIZE", ""),
        "TORCH_CUBLASLT_UNIFIED_WORKSPACE": os.environ.get("TORCH_CUBLASLT_UNIFIED_WORKSPACE", ""),
        "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }
    print(json.dumps(rec))
    print("no_grad_reference: %-20s peak_allocated %12s  allocated_out %12s  allocated_end %12d"
          % (name, rec.get("peak_allocated"), rec.get("allocated_out"), rec["allocated_end"]),
          file=sys.stderr)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", help="folder for no_grad_reference.json")
    ap.add_argument("--only", help="comma-separated configuration names (default: all)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device number")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # one configuration, in this process
    a = ap.parse_args()
    if a.device < 0:
        ap.error("--device must be >= 0")
    table = {n: (b, m) for n, b, m in CONFIGS}
    if a.list:
        for n, b, m in CONFIGS:
            print("%s\tmlp layers=%d in=%d width=%d out=%d batch=%d %s"
                  % (n, LAYERS, IN, WIDTH, OUT, b, m))
        return 0
    if a.child:
        if a.child not in table:
            ap.error("unknown configuration %s" % a.child)
        b, m = table[a.child]
        return run_child(a.child, b, m, a.device)

    names = [n for n, _, _ in CONFIGS]
    if a.only:
        names = [s for s in a.only.split(",") if s]
        bad = [s for s in names if s not in table]
        if bad:
            ap.error("unknown configuration(s): %s (see --list)" % ",".join(bad))
    os.makedirs(a.outdir, exist_ok=True)
    t0 = time.monotonic()
    records, failed, meta = [], [], {}
    for n in names:
        cmd = [sys.executable, os.path.abspath(__file__), a.outdir, "--child", n,
               "--device", str(a.device)]
        try:
            p = subprocess.run(cmd, timeout=CHILD_TIMEOUT_S, stdout=subprocess.PIPE, text=True)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = -1
            print("no_grad_reference: %s: timed out after %d s" % (n, CHILD_TIMEOUT_S),
                  file=sys.stderr)
        if rc == 77:
            return 77
        if rc != 0:
            failed.append(n)
            print("no_grad_reference: %s failed (exit %d)" % (n, rc), file=sys.stderr)
            continue
        rec = json.loads(p.stdout.strip().splitlines()[-1])
        meta = rec.pop("meta")
        records.append(rec)
    meta["wall_s"] = round(time.monotonic() - t0, 1)
    path = os.path.join(a.outdir, "no_grad_reference.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"meta": meta, "configs": records}, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print("no_grad_reference: %d configurations in %.1f s, %d failed; %s"
          % (len(names), time.monotonic() - t0, len(failed), path), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
