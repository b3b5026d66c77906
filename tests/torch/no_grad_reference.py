#!/usr/bin/env python3
"""no_grad_reference.py: PyTorch's own figures for C27 (build/c27_no_grad_eval:
the MLP's forward in common/workload/mlp/mlp_forward.c, the Transformer's in
common/workload/transformer/tfm_forward.c and tfm_fastpath.c). Run it on the
GPU machine:

    python3 tests/torch/no_grad_reference.py OUTDIR
    python3 tests/torch/no_grad_reference.py OUTDIR --only mlp_b256_grad,enc_b16_eval_no_grad
    python3 tests/torch/no_grad_reference.py --list

For each configuration in CONFIGS, a fresh Python process (so the caching
allocator's statistics, the cuBLAS handle and its workspaces start clean, as
C27 starts each figure from a fresh model) builds C27's network and runs one
forward. --jobs processes run at once (4 by default; each has its own
allocator and statistics, so only forward_time_s feels the others; --jobs 1
for isolated times). The workloads, fp32:

    mlp          Sequential(Linear(in,H), ReLU(), [Linear(H,H), ReLU()] * (L-2), Linear(H,out)),
                 L=8, in = width = out = 1024; inputs x = randn(B, 1024)
    transformer  seed 000's nn.Transformer(d_model=256) (nhead 8, 6+6 layers, ff 2048,
                 dropout 0.1, relu, batch_first False), made on the host and moved
                 by .cuda() as the seed makes it (transformer_reference.py --build
                 host); inputs src = randn(64, B, 256), tgt = randn(64, B, 256)
    encoder      layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048,
                 dropout=0.1, activation="relu", batch_first=True, device=cuda);
                 nn.TransformerEncoder(layer, 4, enable_nested_tensor=False); del layer;
                 inputs src = randn(B, 128, 512)

in each mode (the MLP has no dropout and no fast path: grad and no_grad only):

    grad            model.train(); autograd on
    no_grad         model.train(); under torch.no_grad()
    eval_no_grad    model.eval();  under torch.no_grad() (the encoder's layers take
                    torch._transformer_encoder_layer_fwd, PyTorch's fast path)
    inference_mode  model.eval();  under torch.inference_mode()

    torch.cuda.reset_peak_memory_stats()
    with mode: inputs = randn(...); out = model(*inputs)
    del out, inputs

It writes OUTDIR/no_grad_reference.json (written to a temporary name and
renamed):

    {"meta": {torch and CUDA versions, GPU, SM count, allocator settings,
              mha_fastpath_enabled, jobs, wall_s},
     "configs": [{"name", "workload" ("mlp" | "transformer" | "encoder"), its shape
                  ("layers", "in", "width", "out" for the MLP; "d_model", "heads",
                  "enc_layers", "dec_layers", "ff", "dropout", "seq", "batch_first",
                  "build" ("host": made on the host, then .cuda(); "device")
                  for the others), "batch", "mode",
                  "allocated_before"  memory_allocated() before the inputs: weights only
                  "peak_allocated"    max_memory_allocated() over the inputs' randn and
                                      the forward (C27's peak_allocated)
                  "allocated_out"     memory_allocated() when the model returns
                  "allocated_end"     memory_allocated() after del out, inputs
                                      (weights + workspaces)
                  "peak_reserved"     max_memory_reserved() over the same span
                  "output_bytes"      out.numel() * out.element_size()
                  "has_graph"         out.grad_fn is not None
                  "fast_path_layers"  calls of torch._transformer_encoder_layer_fwd
                  "fast_path_mha"     calls of torch._native_multi_head_attention from
                                      Python (MultiheadAttention.forward's fast path)
                  "forward_time_s"    CUDA events around the inputs ... model(...),
                                      the first (cold) forward
                  "status"            "ok" or "oom"}, ...]}

C27 --model-only writes the same figures (variant WORKLOAD/MODE, param
batch); tests/scripts/test_no_grad_fixtures.sh requires them equal byte for
byte. Exit: 0 ok, 1 a configuration failed, 2 usage, 77 no CUDA device.
Standard library and torch only.
"""
import argparse
import concurrent.futures
import contextlib
import json
import os
import subprocess
import sys
import time

# C27's sweep (experiments/c27_no_grad_eval.c KINDS): the MLP at four
# batches, the Transformer at the seed's batch and a quarter of it, the
# encoder at two.
MLP = dict(layers=8, width=1024)
MLP["in"] = MLP["out"] = 1024
# build: "host" made on the host then .cuda() (seed 000's code), "device" made
# with device=cuda (C27's encoder, which no seed builds).
TRANSFORMER = dict(d_model=256, heads=8, enc_layers=6, dec_layers=6, ff=2048, dropout=0.1, seq=64,
                   batch_first=False, build="host")
ENCODER = dict(d_model=512, heads=8, enc_layers=4, dec_layers=0, ff=2048, dropout=0.1, seq=128,
               batch_first=True, build="device")
MODES = ["grad", "no_grad", "eval_no_grad", "inference_mode"]
WORKLOADS = [("mlp", "mlp", [256, 1024, 4096, 16384], MODES[:2]),
             ("transformer", "tfm", [25, 100], MODES),
             ("encoder", "enc", [16, 64], MODES)]
CONFIGS = [("%s_b%d_%s" % (short, b, m), wl, b, m)
           for wl, short, batches, modes in WORKLOADS for b in batches for m in modes]
CHILD_TIMEOUT_S = 120


def shape_of(workload):
    return MLP if workload == "mlp" else TRANSFORMER if workload == "transformer" else ENCODER


def build(torch, workload, dev):
    """C27's network, made in the order C27's model of set-up requests its
    parameters: on the device, or (build "host") on the host and then moved
    by Module._apply, each parameter in turn, children first."""
    from torch import nn
    if workload == "mlp":
        dims = [MLP["in"]] + [MLP["width"]] * (MLP["layers"] - 1) + [MLP["out"]]
        mods = []
        for i in range(MLP["layers"]):  # weight then bias of each Linear, made on the device
            mods.append(nn.Linear(dims[i], dims[i + 1], device=dev))
            if i < MLP["layers"] - 1:
                mods.append(nn.ReLU())
        return nn.Sequential(*mods)
    s = shape_of(workload)
    common = dict(dropout=s["dropout"], activation="relu", batch_first=s["batch_first"],
                  norm_first=False, device=dev if s["build"] == "device" else None)
    if workload == "transformer":
        model = nn.Transformer(d_model=s["d_model"], nhead=s["heads"], num_encoder_layers=s["enc_layers"],
                               num_decoder_layers=s["dec_layers"], dim_feedforward=s["ff"], **common)
        return model.cuda(dev) if s["build"] == "host" else model
    layer = nn.TransformerEncoderLayer(s["d_model"], s["heads"], dim_feedforward=s["ff"], **common)
    model = nn.TransformerEncoder(layer, s["enc_layers"], enable_nested_tensor=False)
    del layer
    return model


def inputs_of(torch, workload, batch, dev):
    if workload == "mlp":
        return (torch.randn(batch, MLP["in"], device=dev),)
    s = shape_of(workload)
    shape = (batch, s["seq"], s["d_model"]) if s["batch_first"] else (s["seq"], batch, s["d_model"])
    n = 2 if workload == "transformer" else 1  # src, then tgt
    return tuple(torch.randn(shape, device=dev) for _ in range(n))


@contextlib.contextmanager
def counting(torch, counts):
    """Counts the fast paths' calls made from Python (transformer.py and
    activation.py look them up on torch at each call); the wrappers hold
    nothing past the call."""
    names = {"fast_path_layers": "_transformer_encoder_layer_fwd",
             "fast_path_mha": "_native_multi_head_attention"}
    saved = {}
    for key, attr in names.items():
        counts[key] = 0
        orig = getattr(torch, attr, None)
        if orig is None:
            continue
        saved[attr] = orig

        def wrapper(*args, _orig=orig, _key=key, **kwargs):
            counts[_key] += 1
            return _orig(*args, **kwargs)
        setattr(torch, attr, wrapper)
    try:
        yield
    finally:
        for attr, orig in saved.items():
            setattr(torch, attr, orig)


def run_child(name, workload, batch, mode, device):
    """One forward in this process; prints one JSON object on stdout."""
    try:
        import torch
    except ImportError:
        print("no_grad_reference: torch is not installed here: waived", file=sys.stderr)
        return 77

    if not torch.cuda.is_available() or device >= torch.cuda.device_count():
        print("no_grad_reference: no CUDA device %d: waived" % device, file=sys.stderr)
        return 77
    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    torch.manual_seed(0)
    model = build(torch, workload, dev)
    if mode in ("grad", "no_grad"):
        model.train()
    else:
        model.eval()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    ctx = {"grad": contextlib.nullcontext, "no_grad": torch.no_grad, "eval_no_grad": torch.no_grad,
           "inference_mode": torch.inference_mode}[mode]()
    status = "ok"
    rec = {"name": name, "workload": workload}
    rec.update(shape_of(workload))
    rec.update({"batch": batch, "mode": mode, "allocated_before": before})
    counts = {}
    try:
        with counting(torch, counts):
            start.record()
            with ctx:
                inputs = inputs_of(torch, workload, batch, dev)
                out = model(*inputs)
            stop.record()
            stop.synchronize()
        rec["allocated_out"] = torch.cuda.memory_allocated()
        rec["peak_allocated"] = torch.cuda.max_memory_allocated()
        rec["peak_reserved"] = torch.cuda.max_memory_reserved()
        rec["forward_time_s"] = start.elapsed_time(stop) * 1e-3
        rec["output_bytes"] = out.numel() * out.element_size()
        rec["has_graph"] = out.grad_fn is not None
        rec.update(counts)
        if rec["has_graph"] != (mode == "grad"):
            print("no_grad_reference: %s: the output %s a graph" % (name, "has" if rec["has_graph"] else "has no"),
                  file=sys.stderr)
            return 1
        if mode == "inference_mode" and not out.is_inference():
            print("no_grad_reference: %s: the output is not an inference tensor" % name, file=sys.stderr)
            return 1
        del out, inputs
    except torch.cuda.OutOfMemoryError:
        status = "oom"
    torch.cuda.synchronize()
    rec["allocated_end"] = torch.cuda.memory_allocated()
    rec["status"] = status
    props = torch.cuda.get_device_properties(device)
    mha = getattr(getattr(torch.backends, "mha", None), "get_fastpath_enabled", None)
    rec["meta"] = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "device_name": props.name,
        "sm_count": props.multi_processor_count,
        "capability": "%d.%d" % (props.major, props.minor),
        "total_memory": props.total_memory,
        "python_version": sys.version.split()[0],
        "mha_fastpath_enabled": mha() if mha else None,
        "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG", ""),
        "CUBLASLT_WORKSPACE_SIZE": os.environ.get("CUBLASLT_WORKSPACE_SIZE", ""),
        "TORCH_CUBLASLT_UNIFIED_WORKSPACE": os.environ.get("TORCH_CUBLASLT_UNIFIED_WORKSPACE", ""),
        "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }
    print(json.dumps(rec))
    print("no_grad_reference: %-26s peak_allocated %12s  allocated_out %12s  allocated_end %12d  fast %s/%s"
          % (name, rec.get("peak_allocated"), rec.get("allocated_out"), rec["allocated_end"],
             rec.get("fast_path_layers"), rec.get("fast_path_mha")), file=sys.stderr)
    return 0


def run_one(name, outdir, device):
    """One configuration in a fresh process: (exit code, its record or None)."""
    cmd = [sys.executable, os.path.abspath(__file__), outdir, "--child", name, "--device", str(device)]
    try:
        p = subprocess.run(cmd, timeout=CHILD_TIMEOUT_S, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    except subprocess.TimeoutExpired:
        print("no_grad_reference: %s: timed out after %d s" % (name, CHILD_TIMEOUT_S), file=sys.stderr)
        return -1, None
    sys.stderr.write(p.stderr)  # the child's lines in one piece, whatever runs beside it
    if p.returncode != 0:
        return p.returncode, None
    lines = p.stdout.strip().splitlines()
    return 0, json.loads(lines[-1]) if lines else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", help="folder for no_grad_reference.json")
    ap.add_argument("--only", help="comma-separated configuration names (default: all)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device number")
    ap.add_argument("--jobs", type=int, default=4, help="configurations run at once (default 4)")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # one configuration, in this process
    a = ap.parse_args()
    if a.device < 0:
        ap.error("--device must be >= 0")
    if a.jobs < 1:
        ap.error("--jobs must be >= 1")
    table = {n: (wl, b, m) for n, wl, b, m in CONFIGS}
    if a.list:
        for n, wl, b, m in CONFIGS:
            s = shape_of(wl)
            print("%s\t%s %s batch=%d %s" % (n, wl, " ".join("%s=%s" % kv for kv in s.items()), b, m))
        return 0
    if a.outdir is None:
        ap.error("OUTDIR is needed (or --list)")
    if a.child:
        if a.child not in table:
            ap.error("unknown configuration %s" % a.child)
        wl, b, m = table[a.child]
        return run_child(a.child, wl, b, m, a.device)

    names = [n for n, _, _, _ in CONFIGS]
    if a.only:
        names = [s for s in a.only.split(",") if s]
        bad = [s for s in names if s not in table]
        if bad:
            ap.error("unknown configuration(s): %s (see --list)" % ",".join(bad))
    os.makedirs(a.outdir, exist_ok=True)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = list(pool.map(lambda n: run_one(n, a.outdir, a.device), names))
    records, failed, meta = [], [], {}
    for n, (rc, rec) in zip(names, results):
        if rc == 77:
            return 77
        if rc != 0 or rec is None:
            failed.append(n)
            print("no_grad_reference: %s failed (exit %d)" % (n, rc), file=sys.stderr)
            continue
        meta = rec.pop("meta")
        records.append(rec)
    meta["jobs"] = a.jobs
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
