#!/usr/bin/env python3
"""offload_reference.py: PyTorch's own figures for C23's Transformer
(build/workload --offload, common/workload/transformer/tfm_offload.c). Run it on
the GPU machine:

    python3 tests/torch/offload_reference.py OUTDIR [--batches 50,100,200] [--steps 5]

Seed 000's model, nn.Transformer(d_model=256).cuda() with Adam, trained on
torch.randn(64, B, 256) as build/workload --arch transformer --d-model 256
--seq 64 --batch B --optimizer adam does it, in a fresh process per figure
(the allocator's statistics and cuBLAS's workspaces start clean):

    per step: reset_peak_memory_stats(); src = randn; tgt = randn;
              [with HOOKS:] out = model(src, tgt); loss = mse_loss(out, tgt) / 1
              loss.backward(); loss copied to pinned memory; del src, tgt, out, loss
              opt.step(); opt.zero_grad(set_to_none=True)

in three variants:
    keep          no hooks
    offload       saved_tensors_hooks that copy every saved CUDA tensor that
                  is not a parameter into a pinned tensor of its size and
                  back (non_blocking): save_on_cpu(pin_memory=True)'s hooks
                  with parameters skipped, the policy of --offload
    save_on_cpu   torch.autograd.graph.save_on_cpu(pin_memory=True) itself
                  (parameters offloaded too), for reference

It writes OUTDIR/offload_reference.csv (to a temporary name, then renamed):
    variant,batch,step,peak_allocated,allocated_end,step_time_s,loss
The model's figures to set beside it (step 3 on):
    build/workload --arch transformer --d-model 256 --seq 64 --batch B \\
        --optimizer adam --steps 5 --model-only [--offload]
Exit: 0 ok, 1 a figure failed, 2 usage, 77 no CUDA device. Standard library
and torch only.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

from reference_output import torch_or_waive

VARIANTS = ["keep", "offload", "save_on_cpu"]
SEQ, D_MODEL = 64, 256
CHILD_TIMEOUT_S = 300


def run_child(variant, batch, steps):
    """One variant at one batch in this process: one JSON list of rows on stdout."""
    torch = torch_or_waive("offload_reference")
    if torch is None:
        return 77
    import torch.nn.functional as F
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Transformer(d_model=D_MODEL).cuda()
    opt = torch.optim.Adam(model.parameters())
    # a parameter, or a view of one (the cross-attention's split in_proj_weight, a weight's .t())
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def pack(t):
        if not t.is_cuda or t.untyped_storage().data_ptr() in params:
            return (None, t)
        packed = torch.empty(t.size(), dtype=t.dtype, layout=t.layout, pin_memory=True)
        packed.copy_(t)
        return (t.device, packed)

    def unpack(p):
        device, t = p
        return t if device is None else t.to(device, non_blocking=True)

    if variant == "keep":
        hooks = None
    elif variant == "offload":
        hooks = lambda: torch.autograd.graph.saved_tensors_hooks(pack, unpack)  # noqa: E731
    else:
        hooks = lambda: torch.autograd.graph.save_on_cpu(pin_memory=True)  # noqa: E731
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rows = []
    loss_host = torch.zeros(1, dtype=torch.float32).pin_memory()
    torch.cuda.synchronize()
    for step in range(1, steps + 1):
        torch.cuda.reset_peak_memory_stats()
        start.record()
        src = torch.randn(SEQ, batch, D_MODEL, device=dev)
        tgt = torch.randn(SEQ, batch, D_MODEL, device=dev)
        if hooks is None:
            out = model(src, tgt)
        else:
            with hooks():
                out = model(src, tgt)
        loss = F.mse_loss(out, tgt) / 1  # / K as build/workload (K = 1): its block too
        loss.backward()
        loss_host[0].copy_(loss.detach(), non_blocking=True)  # no device block of its own
        del src, tgt, out, loss
        opt.step()
        opt.zero_grad(set_to_none=True)
        stop.record()
        stop.synchronize()
        st = torch.cuda.memory_stats()
        rows.append([variant, batch, step, st["allocated_bytes.all.peak"],
                     st["allocated_bytes.all.current"], start.elapsed_time(stop) * 1e-3,
                     float(loss_host[0])])
    print(json.dumps(rows))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--batches", default="50,100,200")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--child", nargs=2, metavar=("VARIANT", "BATCH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    try:
        batches = [int(b) for b in a.batches.split(",")]
    except ValueError:
        print("offload_reference: --batches needs whole numbers separated by commas", file=sys.stderr)
        return 2
    if a.steps < 3 or any(b < 1 for b in batches):
        print("offload_reference: --steps must be at least 3 and batches positive", file=sys.stderr)
        return 2
    if a.child:
        return run_child(a.child[0], int(a.child[1]), a.steps)
    os.makedirs(a.outdir, exist_ok=True)
    rows, failed = [], 0
    for b in batches:
        for v in VARIANTS:
            cmd = [sys.executable, os.path.abspath(__file__), a.outdir, "--steps", str(a.steps),
                   "--child", v, str(b)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                print("offload_reference: %s B=%d timed out" % (v, b), file=sys.stderr)
                failed += 1
                continue
            if r.returncode == 77:
                sys.stderr.write(r.stderr)
                return 77
            if r.returncode != 0:
                print("offload_reference: %s B=%d failed: %s" % (v, b, r.stderr.strip()[-500:]),
                      file=sys.stderr)
                failed += 1
                continue
            got = json.loads(r.stdout.strip().splitlines()[-1])
            rows += got
            print("offload_reference: %-11s B=%-4d step %d peak_allocated %d allocated_end %d"
                  % (v, b, got[-1][2], got[-1][3], got[-1][4]), file=sys.stderr)
    path = os.path.join(a.outdir, "offload_reference.csv")
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "batch", "step", "peak_allocated", "allocated_end", "step_time_s", "loss"])
        w.writerows(rows)
    os.replace(tmp, path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
