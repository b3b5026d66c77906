#!/usr/bin/env python3
"""mlp_reference.py: PyTorch's own figures for the suite's training workload
(build/workload, DESIGN.md "The training workload"). Run it on the GPU machine:

    python3 tests/torch/mlp_reference.py OUTDIR
    python3 tests/torch/mlp_reference.py OUTDIR --only tiny_sgd_fp32,adam_fp16

For each configuration in CONFIGS, a fresh Python process (so the caching
allocator's statistics, the cuBLAS handles and their workspaces start clean,
as in build/workload, which is one process per configuration) builds the
network of DESIGN.md's pseudo-code and trains it for --steps steps:

    model = Sequential(Linear(in,H), ReLU(), [Linear(H,H), ReLU()] * (L-2), Linear(H,out))
    opt   = SGD(lr) | SGD(lr, momentum=0.9) | Adam(lr)        (defaults: foreach on CUDA)
    scaler = GradScaler("cuda") if fp16
    per step: reset_peak_memory_stats(); K micro-steps of
        x = randn(b, in); y = randn(b, out)
        with autocast(fp16|bf16) unless fp32:
            out = model(x)        (--checkpoint: each Linear+ReLU pair under
                                   torch.utils.checkpoint, use_reentrant=False;
                                   --checkpoint-segments S: checkpoint_sequential(
                                   model, S, x, use_reentrant=False))
            loss = mse_loss(out, y) / K
        (scaler.scale(loss) if fp16 else loss).backward(); del x, y, out, loss
    then scaler.step(opt); scaler.update() | opt.step(); opt.zero_grad(set_to_none=True)

It writes into OUTDIR:

  configs.txt   one line per configuration: NAME, a tab, build/workload's flags
  meta.txt      key=value lines: torch and CUDA versions, GPU, SM count, ...
  NAME.csv      one row per step, in build/workload's CSV shape:
                step,peak_allocated,allocated_end,peak_reserved,reserved_end,
                step_time_s,loss,loss_scale,skipped,status, then the breakdown
                columns of build/workload, left empty here
                  peak_allocated  torch.cuda.max_memory_allocated() after
                                  reset_peak_memory_stats() at the step's start
                  allocated_end   torch.cuda.memory_allocated() after zero_grad
                  peak_reserved / reserved_end   the same for reserved bytes
                  step_time_s     CUDA events around the whole step (inputs,
                                  forward, backward, optimizer, zero_grad), then
                                  a synchronize: device time of a step that starts
                                  on an idle GPU
                  loss            the step's loss (sum of its micro-steps' loss/K),
                                  copied to pinned memory without a sync
                  loss_scale      GradScaler's scale after update() (fp16), else 1
                  skipped         1 where GradScaler skipped the optimizer step
  NAME.trace    the allocator's requests over model set-up and the first two
                steps, from torch.cuda.memory._record_memory_history, as a
                memclaims-trace v1 file (alloc ID BYTES ADDRESS / free ID, ids in
                request order, reset_peak at each step's start, the Python frame
                of each request as a trailing comment, segment events as comments).
                build/workload --trace FILE writes its own sequence in the same
                shape, and build/replay replays this one through the model.

The median step time over the steps after the first two (warm-up, traced) is
printed per configuration on stderr. Exit: 0 ok, 1 a configuration failed,
2 usage, 77 no CUDA device. Standard library and torch only.
"""
import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time

from reference_output import number, write_trace

# name, build/workload flags (without --steps, which is --steps below).
# Shapes are chosen so that tensors fall in both pools (H=1024: 4 MiB weights in
# 20 MiB segments, b*H*4 = 1 MiB activations in 2 MiB small segments), and one
# large configuration shows the step time of GEMM-bound work.
MID = "--layers 4 --in 1024 --width 1024 --out 1024 --batch 256"
CONFIGS = [
    ("tiny_sgd_fp32", "--layers 3 --in 64 --width 64 --out 64 --batch 8 --optimizer sgd "
                      "--precision fp32 --accum 1"),
    ("sgd_fp32", MID + " --optimizer sgd --precision fp32 --accum 1"),
    ("momentum_fp32", MID + " --optimizer momentum --precision fp32 --accum 1"),
    ("adam_fp32", MID + " --optimizer adam --precision fp32 --accum 1"),
    ("adam_fp16", MID + " --optimizer adam --precision fp16 --accum 1"),
    ("adam_bf16", MID + " --optimizer adam --precision bf16 --accum 1"),
    ("sgd_fp32_accum4", MID + " --optimizer sgd --precision fp32 --accum 4"),
    ("momentum_fp32_ckpt", MID + " --optimizer momentum --precision fp32 --accum 1 --checkpoint"),
    ("adam_fp16_accum2_ckpt", MID + " --optimizer adam --precision fp16 --accum 2 --checkpoint"),
    # checkpoint_sequential over the 2L-1 modules: S=2 at L=4 (segment size 3:
    # [Linear ReLU Linear] checkpointed, its output the plain tail's input),
    # S=7 (each module alone: pre-ReLU outputs kept as segment inputs), and
    # L=8, S=4 at a batch where activations dominate (C08's shape).
    ("adam_fp32_seg2", MID + " --optimizer adam --precision fp32 --accum 1 --checkpoint-segments 2"),
    ("sgd_fp32_accum2_seg7", MID + " --optimizer sgd --precision fp32 --accum 2 --checkpoint-segments 7"),
    ("bigbatch_adam_fp32_L8_seg4", "--layers 8 --in 1024 --width 1024 --out 1024 --batch 8192 "
                                   "--optimizer adam --precision fp32 --accum 1 --checkpoint-segments 4"),
    ("large_adam_fp32", "--layers 8 --in 4096 --width 4096 --out 4096 --batch 512 "
                        "--optimizer adam --precision fp32 --accum 1"),
    ("large_sgd_bf16", "--layers 8 --in 4096 --width 4096 --out 4096 --batch 512 "
                       "--optimizer sgd --precision bf16 --accum 1"),
    # Large batches, as the C05 and C20 sweeps reach: the reduction scratch of
    # the bias gradients and the activations dominate there.
    ("bigbatch_adam_fp32", "--layers 4 --in 1024 --width 1024 --out 1024 --batch 16384 "
                           "--optimizer adam --precision fp32 --accum 1"),
    ("bigbatch_adam_fp16", "--layers 8 --in 1024 --width 1024 --out 1024 --batch 32768 "
                           "--optimizer adam --precision fp16 --accum 1"),
]
DEFAULT_STEPS = 12
TRACED_STEPS = 2          # steps recorded in NAME.trace; also the timing warm-up
LR = {"sgd": 0.01, "momentum": 0.01, "adam": 1e-3}  # build/workload uses the same
CHILD_TIMEOUT_S = 120
HEADER = ("step,peak_allocated,allocated_end,peak_reserved,reserved_end,step_time_s,loss,"
          "loss_scale,skipped,status,peak_weights,peak_casts,peak_grads,peak_optimizer,"
          "peak_activations,peak_workspace,peak_other")


class Cfg:
    """build/workload's flags, parsed as strictly as it does."""

    def __init__(self, flags, steps):
        self.layers = self.in_ = self.width = self.out = self.batch = None
        self.optimizer, self.precision, self.accum, self.checkpoint = None, None, 1, False
        self.segments = 0
        self.steps = steps
        toks = flags.split()
        i = 0
        ints = {"--layers": "layers", "--in": "in_", "--width": "width", "--out": "out",
                "--batch": "batch", "--accum": "accum", "--steps": "steps",
                "--checkpoint-segments": "segments"}
        while i < len(toks):
            t = toks[i]
            if t == "--checkpoint":
                self.checkpoint = True
                i += 1
                continue
            if i + 1 >= len(toks):
                raise ValueError("%s needs a value" % t)
            v = toks[i + 1]
            if t in ints:
                n = int(v)
                if n < 1:
                    raise ValueError("%s needs a whole number >= 1" % t)
                setattr(self, ints[t], n)
            elif t == "--optimizer" and v in ("sgd", "momentum", "adam"):
                self.optimizer = v
            elif t == "--precision" and v in ("fp32", "fp16", "bf16"):
                self.precision = v
            else:
                raise ValueError("bad option %s %s" % (t, v))
            i += 2
        for k in ("layers", "in_", "width", "out", "batch", "optimizer", "precision"):
            if getattr(self, k) is None:
                raise ValueError("missing --%s" % k.rstrip("_"))
        if self.layers < 2:
            raise ValueError("--layers must be >= 2")
        if self.batch % self.accum:
            raise ValueError("--batch must be divisible by --accum")
        if self.segments and (self.segments > 2 * self.layers - 1 or self.checkpoint
                              or self.precision != "fp32"):
            raise ValueError("--checkpoint-segments must be from 1 to 2L-1, with fp32 and "
                             "without --checkpoint")


# ---------------------------------------------------------------- the training step

class Training:
    """A configuration's network, optimizer, GradScaler and training step,
    as the module docstring says; shared with profile_reference.py. Built in
    the order of its requests: parameters (the optimizer's and GradScaler's
    state come lazily, in the first step)."""

    def __init__(self, torch, cfg, dev):
        import torch.nn.functional as F
        from torch import nn
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential
        self.torch, self.cfg, self.dev = torch, cfg, dev
        self.F, self.checkpoint, self.checkpoint_sequential = F, checkpoint, checkpoint_sequential
        dims = [cfg.in_] + [cfg.width] * (cfg.layers - 1) + [cfg.out]
        mods = []
        for i in range(cfg.layers):
            mods.append(nn.Linear(dims[i], dims[i + 1], device=dev))
            if i < cfg.layers - 1:
                mods.append(nn.ReLU())
        self.mods = mods
        self.model = nn.Sequential(*mods)
        self.pairs = [nn.Sequential(mods[2 * i], mods[2 * i + 1]) for i in range(cfg.layers - 1)]
        params = list(self.model.parameters())
        if cfg.optimizer == "sgd":
            self.opt = torch.optim.SGD(params, lr=LR["sgd"])
        elif cfg.optimizer == "momentum":
            self.opt = torch.optim.SGD(params, lr=LR["momentum"], momentum=0.9)
        else:
            self.opt = torch.optim.Adam(params, lr=LR["adam"])
        self.scaler = torch.amp.GradScaler("cuda") if cfg.precision == "fp16" else None
        self.amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(cfg.precision)

    def autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return self.torch.autocast("cuda", dtype=self.amp_dtype)

    def forward(self, x):
        cfg = self.cfg
        if cfg.segments:
            return self.checkpoint_sequential(self.model, cfg.segments, x, use_reentrant=False)
        if not cfg.checkpoint:
            return self.model(x)
        h = x
        for p in self.pairs:
            h = self.checkpoint(p, h, use_reentrant=False)
        return self.mods[-1](h)

    def step(self, loss_host):
        """One training step: K = --accum micro-steps (fresh x and y, forward
        under autocast, loss / K, backward, each micro-step's loss copied into
        loss_host[k], a pinned float32 tensor of K), then the optimizer
        (through the GradScaler in fp16) and zero_grad(set_to_none=True)."""
        torch, F, cfg, scaler, opt = self.torch, self.F, self.cfg, self.scaler, self.opt
        K, b = cfg.accum, cfg.batch // cfg.accum
        for k in range(K):
            x = torch.randn(b, cfg.in_, device=self.dev)
            y = torch.randn(b, cfg.out, device=self.dev)
            with self.autocast():
                out = self.forward(x)
                loss = F.mse_loss(out, y) / K
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            loss_host[k].copy_(loss.detach(), non_blocking=True)
            del x, y, out, loss
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)


# ---------------------------------------------------------------- one configuration

def run_child(name, flags, outdir, steps, device):
    try:
        import torch
    except ImportError:
        print("mlp_reference: torch is not installed here: waived", file=sys.stderr)
        return 77

    if not torch.cuda.is_available() or device >= torch.cuda.device_count():
        print("mlp_reference: no CUDA device %d: waived" % device, file=sys.stderr)
        return 77
    cfg = Cfg(flags, steps)
    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    torch.manual_seed(0)
    script = os.path.basename(__file__)
    torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
    marks = []

    def mark(label, reset_peak):
        n = len(torch.cuda.memory._snapshot()["device_traces"][device])
        marks.append((n, label, reset_peak))

    mark("set-up: parameters, optimizer%s" % (", GradScaler" if cfg.precision == "fp16" else ""),
         False)
    tr = Training(torch, cfg, dev)
    K, scaler = cfg.accum, tr.scaler
    loss_host = torch.zeros(K, dtype=torch.float32).pin_memory()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    rows, times = [], []
    prev_scale = 65536.0  # GradScaler's init_scale
    torch.cuda.synchronize()
    for step in range(1, cfg.steps + 1):
        if step <= TRACED_STEPS:
            mark("step %d" % step, True)
        torch.cuda.reset_peak_memory_stats()
        start.record()
        tr.step(loss_host)
        stop.record()
        stop.synchronize()
        st = torch.cuda.memory_stats()
        if step <= TRACED_STEPS:
            mark("end of step %d (after zero_grad)" % step, False)
        dt = start.elapsed_time(stop) * 1e-3
        scale, skipped = 1.0, 0
        if scaler is not None:
            # get_scale() reads the scale (a sync, after the step's own): a
            # backoff (scale fell) is GradScaler skipping the optimizer step.
            scale = scaler.get_scale()
            skipped = int(scale < prev_scale)
            prev_scale = scale
        rows.append([step, st["allocated_bytes.all.peak"], st["allocated_bytes.all.current"],
                     st["reserved_bytes.all.peak"], st["reserved_bytes.all.current"], dt,
                     float(loss_host.sum()), scale, skipped, "ok"] + [None] * 7)
        if step > TRACED_STEPS:
            times.append(dt)
        if step == TRACED_STEPS or (step == cfg.steps and step < TRACED_STEPS):
            snap = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)
            write_trace(os.path.join(outdir, name + ".trace"), snap["device_traces"][device],
                        marks, script)

    path = os.path.join(outdir, name + ".csv")
    with open(path + ".tmp", "w") as f:
        f.write(HEADER + "\n")
        for r in rows:
            f.write(",".join(number(v) if not isinstance(v, str) else v for v in r) + "\n")
    os.replace(path + ".tmp", path)

    props = torch.cuda.get_device_properties(device)
    meta = {
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
        "steps": cfg.steps,
        "traced_steps": TRACED_STEPS,
    }
    with open(os.path.join(outdir, name + ".meta"), "w") as f:
        for k, v in meta.items():
            f.write("%s=%s\n" % (k, v))
    med = statistics.median(times) if times else float("nan")
    last = rows[-1]
    print("mlp_reference: %-24s peak_allocated %12d  allocated_end %12d  step %.3f ms (median of %d)"
          % (name, last[1], last[2], med * 1e3, len(times)), file=sys.stderr)
    return 0


# ---------------------------------------------------------------- driver

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", help="folder for configs.txt, meta.txt, NAME.csv, NAME.trace")
    ap.add_argument("--only", help="comma-separated configuration names (default: all)")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="steps per configuration")
    ap.add_argument("--device", type=int, default=0, help="CUDA device number")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # one configuration, in this process
    a = ap.parse_args()
    if a.steps < 1 or a.device < 0:
        ap.error("--steps must be >= 1 and --device >= 0")
    table = dict(CONFIGS)
    if a.list:
        for n, fl in CONFIGS:
            print("%s\t%s --steps %d" % (n, fl, a.steps))
        return 0
    if a.child:
        if a.child not in table:
            ap.error("unknown configuration %s" % a.child)
        return run_child(a.child, table[a.child], a.outdir, a.steps, a.device)

    names = [n for n, _ in CONFIGS]
    if a.only:
        names = [s for s in a.only.split(",") if s]
        bad = [s for s in names if s not in table]
        if bad:
            ap.error("unknown configuration(s): %s (see --list)" % ",".join(bad))
    try:
        Cfg(table[names[0]], a.steps)
        for n in names:
            Cfg(table[n], a.steps)
    except ValueError as e:
        print("mlp_reference: bad configuration: %s" % e, file=sys.stderr)
        return 2
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "configs.txt"), "w") as f:
        f.write("# name<TAB>build/workload flags; written by tests/torch/mlp_reference.py\n")
        for n in names:
            f.write("%s\t%s --steps %d\n" % (n, table[n], a.steps))
    t0 = time.monotonic()
    failed = []
    for n in names:
        cmd = [sys.executable, os.path.abspath(__file__), a.outdir, "--child", n,
               "--steps", str(a.steps), "--device", str(a.device)]
        try:
            rc = subprocess.run(cmd, timeout=CHILD_TIMEOUT_S).returncode
        except subprocess.TimeoutExpired:
            rc = -1
            print("mlp_reference: %s: timed out after %d s" % (n, CHILD_TIMEOUT_S), file=sys.stderr)
        if rc == 77:
            return 77
        if rc != 0:
            failed.append(n)
            print("mlp_reference: %s failed (exit %d)" % (n, rc), file=sys.stderr)
    meta_src = os.path.join(a.outdir, names[0] + ".meta")
    if os.path.exists(meta_src):
        with open(meta_src) as src, open(os.path.join(a.outdir, "meta.txt"), "w") as dst:
            dst.write(src.read())
            dst.write("wall_s=%.1f\n" % (time.monotonic() - t0))
    print("mlp_reference: %d configurations in %.1f s, %d failed"
          % (len(names), time.monotonic() - t0, len(failed)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
