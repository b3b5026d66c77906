#!/usr/bin/env python3
"""transformer_reference.py: PyTorch's own figures for the suite's Transformer
workload (build/workload --arch transformer|encoder, issue 9). Run it on the
GPU machine (PyTorch 2.11, CUDA, an H100):

    python3 tests/torch/transformer_reference.py OUTDIR
    python3 tests/torch/transformer_reference.py OUTDIR --only enc_tiny_sgd_fp32_causal

then copy OUTDIR's files into tests/fixtures/transformer/ (make test compares
build/workload --model-only against them: tests/scripts/test_transformer_fixtures.sh).

For each configuration in CONFIGS, a fresh Python process (clean allocator
statistics, cuBLAS handles and workspaces, as build/workload) builds

    transformer: model = nn.Transformer(d_model, nhead, enc, dec, ff, dropout,
                                        activation, batch_first=, norm_first=,
                                        device="cuda")
    encoder:     layer = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout,
                                                    activation, batch_first=,
                                                    norm_first=, device="cuda")
                 model = nn.TransformerEncoder(layer, enc, enable_nested_tensor=False)
                 del layer
    --build host: the same made on the host (no device=), then
                 model = model.cuda(), as the seeds build it (issue 32)
                 --causal: mask = nn.Transformer.generate_square_subsequent_mask(L,
                           device="cuda"), once, before the first step
    opt   = SGD(lr) | SGD(lr, momentum=0.9) | Adam(lr) | AdamW(lr)   (foreach on CUDA)
    scaler = GradScaler("cuda") if fp16

and trains it in training mode for --steps steps:

    per step: reset_peak_memory_stats(); K micro-steps of
        src = randn(shape); tgt = randn(shape)   (shape (L, b, E), or (b, L, E)
                                                  with --batch-first; b = B/K)
        with autocast(fp16|bf16) unless fp32:
            out = model(src, tgt)                         (transformer)
                | model(src, mask=mask, is_causal=True)   (encoder --causal)
                | model(src)                              (encoder)
                  --checkpoint: the same loops as TransformerEncoder/Decoder.forward
                  with each layer under torch.utils.checkpoint(use_reentrant=False)
            loss = mse_loss(out, tgt) / K
        (scaler.scale(loss) if fp16 else loss).backward(); del src, tgt, out, loss
    then scaler.step(opt); scaler.update() | opt.step(); opt.zero_grad(set_to_none=True)

It writes into OUTDIR, in tests/torch/mlp_reference.py's shapes:

  configs.txt   one line per configuration: NAME, a tab, build/workload's flags
  meta.txt      key=value lines: torch, CUDA and cuDNN versions, GPU, SM count,
                and sdpa_backend: the backend scaled_dot_product_attention picks
                for the first configuration's attention (torch._fused_sdp_choice:
                flash, efficient, cudnn or math); the model takes cuDNN for
                fp16/bf16 (flash past a head size of 128) and efficient for fp32
  NAME.csv      one row per step, build/workload's CSV (the breakdown empty)
  NAME.meta     the same keys for that configuration
  NAME.trace    for the configurations in TRACED only (all with --trace-all):
                the allocator's requests over set-up and the first
                --traced-steps steps (2 by default)
                (memclaims-trace v1, Python frames as comments, no machine
                paths: file names only). A --checkpoint configuration is
                recorded without stacks (context=None, as make_snapshots.py
                records): with Python stacks on, PyTorch 2.11's checkpoint
                recomputation failed in backward ("SystemError: <built-in
                method run_backward ...> returned NULL without setting an
                exception"). Any other traced configuration whose process fails
                is run once more without stacks. Its frames are then missing
                (they are comments only); NAME.meta says trace_stacks=python or
                none and trace_retry=0 or 1.

Exit: 0 ok, 1 a configuration failed, 2 usage, 77 no CUDA device. Standard
library and torch only.
"""
import argparse
import contextlib
import copy
import os
import statistics
import subprocess
import sys
import time

from reference_output import number, write_trace

# name, build/workload flags (without --steps). Together: both architectures,
# every optimizer and precision, accumulation, checkpointing, causal,
# norm-first, gelu, dropout 0, both batch_first values; the first two are
# the seeds' own (seed 000: nn.Transformer(d_model=256) on (64, 100, 256)
# with batch_first False, i.e. seq 64 and batch 100, accumulation 4 with
# Adam; nn.Transformer(d_model=512, batch_first=True) on (32, 100, 512)
# under autocast fp16 and GradScaler, with Adam).
CONFIGS = [
    ("seed_t256_adam_fp32_accum4", "--arch transformer --d-model 256 --seq 64 --batch 100 --accum 4 "
                                   "--optimizer adam --precision fp32"),
    ("seed_t512_bf_adam_fp16", "--arch transformer --d-model 512 --batch-first --seq 100 --batch 32 "
                               "--optimizer adam --precision fp16"),
    ("enc_tiny_sgd_fp32_causal", "--arch encoder --d-model 64 --heads 4 --enc-layers 2 --ff 128 "
                                 "--seq 32 --batch 8 --causal --optimizer sgd --precision fp32"),
    ("tfm_tiny_adamw_fp16_ckpt_bf", "--arch transformer --d-model 64 --heads 4 --enc-layers 1 "
                                    "--dec-layers 1 --ff 128 --seq 16 --batch 8 --accum 2 --checkpoint "
                                    "--batch-first --optimizer adamw --precision fp16"),
    ("enc_momentum_bf16_prenorm_gelu_bf", "--arch encoder --d-model 256 --heads 4 --enc-layers 4 "
                                          "--ff 1024 --seq 128 --batch 16 --norm-first --activation gelu "
                                          "--batch-first --optimizer momentum --precision bf16"),
    ("tfm_sgd_bf16_prenorm_bf", "--arch transformer --d-model 128 --heads 4 --enc-layers 2 "
                                "--dec-layers 2 --ff 512 --seq 64 --batch 16 --norm-first --batch-first "
                                "--optimizer sgd --precision bf16"),
    ("enc_adamw_fp32_ckpt_causal_bf", "--arch encoder --d-model 256 --heads 8 --enc-layers 3 --ff 1024 "
                                      "--seq 128 --batch 16 --causal --checkpoint --batch-first "
                                      "--optimizer adamw --precision fp32"),
    ("tfm_momentum_fp32_gelu_nodrop", "--arch transformer --d-model 128 --heads 4 --enc-layers 2 "
                                      "--dec-layers 1 --ff 256 --seq 32 --batch 16 --activation gelu "
                                      "--dropout 0 --optimizer momentum --precision fp32"),
    ("enc_adam_fp16_causal_accum4", "--arch encoder --d-model 512 --heads 8 --enc-layers 2 --ff 2048 "
                                    "--seq 256 --batch 16 --causal --accum 4 --optimizer adam "
                                    "--precision fp16"),
    ("tfm_adam_fp32_ckpt_prenorm", "--arch transformer --d-model 256 --heads 8 --enc-layers 2 "
                                   "--dec-layers 2 --ff 1024 --seq 64 --batch 32 --norm-first --checkpoint "
                                   "--optimizer adam --precision fp32"),
    # cuDNN attention in half precision without dropout (its forward
    # workspace was assumed from the dropout runs).
    ("enc_sgd_bf16_nodrop_bf", "--arch encoder --d-model 128 --heads 4 --enc-layers 2 --ff 256 --seq 64 "
                               "--batch 8 --dropout 0 --batch-first --optimizer sgd --precision bf16"),
]
TRACED = ("enc_tiny_sgd_fp32_causal", "tfm_tiny_adamw_fp16_ckpt_bf")
DEFAULT_STEPS = 6
TRACED_STEPS = 2          # steps recorded in NAME.trace by default (--traced-steps)
WARMUP_STEPS = 2          # first steps left out of the median step time
LR = {"sgd": 0.01, "momentum": 0.01, "adam": 1e-3, "adamw": 1e-3}
CHILD_TIMEOUT_S = 300
HEADER = ("step,peak_allocated,allocated_end,peak_reserved,reserved_end,step_time_s,loss,"
          "loss_scale,skipped,status,peak_weights,peak_casts,peak_grads,peak_optimizer,"
          "peak_activations,peak_workspace,peak_other")
SDPA_NAMES = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


class Cfg:
    """build/workload's Transformer flags, parsed as strictly as it does."""

    INTS = {"--d-model": "d_model", "--heads": "heads", "--enc-layers": "enc", "--dec-layers": "dec",
            "--ff": "ff", "--seq": "seq", "--batch": "batch", "--accum": "accum", "--steps": "steps"}
    FLAGS = {"--norm-first": "norm_first", "--batch-first": "batch_first", "--causal": "causal",
             "--checkpoint": "checkpoint"}
    CHOICES = {"--arch": ("arch", ("transformer", "encoder")),
               "--activation": ("activation", ("relu", "gelu")),
               "--optimizer": ("optimizer", ("sgd", "momentum", "adam", "adamw")),
               "--precision": ("precision", ("fp32", "fp16", "bf16")),
               "--build": ("build", ("device", "host"))}

    def __init__(self, flags, steps):
        self.arch, self.d_model, self.heads, self.enc, self.dec, self.ff = None, 512, 8, 6, 6, 2048
        self.dropout, self.activation, self.seq, self.batch, self.accum = 0.1, "relu", None, None, 1
        self.optimizer, self.precision, self.steps = "sgd", "fp32", steps
        self.build = "device"
        self.norm_first = self.batch_first = self.causal = self.checkpoint = False
        toks = flags.split()
        i = 0
        while i < len(toks):
            t = toks[i]
            if t in self.FLAGS:
                setattr(self, self.FLAGS[t], True)
                i += 1
                continue
            if i + 1 >= len(toks):
                raise ValueError("%s needs a value" % t)
            v = toks[i + 1]
            if t in self.INTS:
                n = int(v)
                if n < 1:
                    raise ValueError("%s needs a whole number >= 1" % t)
                setattr(self, self.INTS[t], n)
            elif t == "--dropout":
                self.dropout = float(v)
                if not 0 <= self.dropout < 1:
                    raise ValueError("--dropout must be in [0, 1)")
            elif t in self.CHOICES and v in self.CHOICES[t][1]:
                setattr(self, self.CHOICES[t][0], v)
            else:
                raise ValueError("bad option %s %s" % (t, v))
            i += 2
        for k in ("arch", "seq", "batch"):
            if getattr(self, k) is None:
                raise ValueError("missing --%s" % k)
        if self.d_model % self.heads:
            raise ValueError("--heads must divide --d-model")
        if self.causal and self.arch != "encoder":
            raise ValueError("--causal needs --arch encoder")
        if self.batch % self.accum:
            raise ValueError("--batch must be divisible by --accum")


# ---------------------------------------------------------------- output

def write_csv(path, rows):
    """rows (lists of HEADER's columns) as build/workload's CSV, via a temporary name."""
    with open(path + ".tmp", "w") as f:
        f.write(HEADER + "\n")
        for r in rows:
            f.write(",".join(number(v) if not isinstance(v, str) else v for v in r) + "\n")
    os.replace(path + ".tmp", path)


def device_meta(torch, device):
    """The versions and the GPU, as the first keys of NAME.meta (in order)."""
    props = torch.cuda.get_device_properties(device)
    return {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version(),
        "device_name": props.name,
        "sm_count": props.multi_processor_count,
        "capability": "%d.%d" % (props.major, props.minor),
        "total_memory": props.total_memory,
        "python_version": sys.version.split()[0],
    }


def env_meta():
    """The environment variables that change cuBLAS, SDPA or the allocator."""
    return {k: os.environ.get(k, "") for k in
            ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE", "TORCH_CUBLASLT_UNIFIED_WORKSPACE",
             "TORCH_CUDNN_SDPA_DEPRIORITIZED", "PYTORCH_CUDA_ALLOC_CONF")}


# ---------------------------------------------------------------- the training step

# Models made on the host (--build host), by what make() is given, kept for the
# builds after the first: each such build is a deep copy of the first one's
# host model, then model.cuda(dev) as before, so the device sees the same
# requests in the same order and only the weights' values repeat. None
# (this script's runs, a process per configuration): every build makes its
# own. PyTorch's counterparts beside the suite (tests/torch/beside) build
# seed 000's two Transformers ~25 times in one process, and making one on
# the host (the layers' init, then nn.Transformer's xavier_uniform_ of every
# matrix, on the CPU) took 6.4 s of the H200's PyTorch part at 5b44de1
# (sampled); a deep copy takes a tenth of that.
HOST_MODELS = None


class Training:
    """A configuration's model (with its causal mask), optimizer, GradScaler
    and training step, as the module docstring says; shared with
    compile_reference.py, which passes compile_model=torch.compile. Built in
    the order of its requests: parameters, then the mask (the optimizer's
    and GradScaler's state come lazily, in the first step)."""

    def __init__(self, torch, cfg, dev, compile_model=None):
        import torch.nn.functional as F
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        self.torch, self.cfg, self.dev = torch, cfg, dev
        self.F, self.checkpoint = F, checkpoint
        # --build host: made on the host and moved, as the seeds and most user
        # code do (nn.Transformer(...).cuda()); device: made on the GPU
        common = dict(dropout=cfg.dropout, activation=cfg.activation, batch_first=cfg.batch_first,
                      norm_first=cfg.norm_first, device=dev if cfg.build == "device" else None)
        self.mask = None

        def make():
            if cfg.arch == "transformer":
                return nn.Transformer(d_model=cfg.d_model, nhead=cfg.heads, num_encoder_layers=cfg.enc,
                                      num_decoder_layers=cfg.dec, dim_feedforward=cfg.ff, **common)
            layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.heads, dim_feedforward=cfg.ff, **common)
            return nn.TransformerEncoder(layer, cfg.enc, enable_nested_tensor=False)
        if cfg.build == "host" and HOST_MODELS is not None:
            key = (cfg.arch, cfg.d_model, cfg.heads, cfg.enc, cfg.dec, cfg.ff, tuple(sorted(common.items())))
            if key not in HOST_MODELS:
                HOST_MODELS[key] = make()
            model = copy.deepcopy(HOST_MODELS[key])
        else:
            model = make()
        if cfg.build == "host":
            model = model.cuda(dev)  # Module._apply: each parameter moved, children first
        if cfg.arch != "transformer":
            if cfg.causal:
                self.mask = nn.Transformer.generate_square_subsequent_mask(cfg.seq, device=dev)
        model.train()
        self.model = model
        params = list(model.parameters())
        if cfg.optimizer == "sgd":
            self.opt = torch.optim.SGD(params, lr=LR["sgd"])
        elif cfg.optimizer == "momentum":
            self.opt = torch.optim.SGD(params, lr=LR["momentum"], momentum=0.9)
        elif cfg.optimizer == "adam":
            self.opt = torch.optim.Adam(params, lr=LR["adam"])
        else:
            self.opt = torch.optim.AdamW(params, lr=LR["adamw"])
        self.scaler = torch.amp.GradScaler("cuda") if cfg.precision == "fp16" else None
        self.amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(cfg.precision)
        b = cfg.batch // cfg.accum
        self.shape = (b, cfg.seq, cfg.d_model) if cfg.batch_first else (cfg.seq, b, cfg.d_model)
        # What forward() calls: the module itself, or what compile_model made of
        # it (torch.compile wraps it without copying its parameters). The
        # checkpointed loops below call the module's own layers, uncompiled.
        self.call = compile_model(model) if compile_model is not None else model

    def autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return self.torch.autocast("cuda", dtype=self.amp_dtype)

    def forward(self, src, tgt):
        cfg, model, mask, checkpoint = self.cfg, self.model, self.mask, self.checkpoint
        if not cfg.checkpoint:
            if cfg.arch == "transformer":
                return self.call(src, tgt)
            return self.call(src, mask=mask, is_causal=True) if cfg.causal else self.call(src)
        # TransformerEncoder/Decoder.forward's loops (no fast path in training),
        # each layer under a non-reentrant checkpoint
        if cfg.arch == "encoder":
            x = src
            for mod in model.layers:
                x = checkpoint(mod, x, mask, None, cfg.causal, use_reentrant=False)
            return x
        x = src
        for mod in model.encoder.layers:
            x = checkpoint(mod, x, None, None, False, use_reentrant=False)
        memory = model.encoder.norm(x)
        del x
        y = tgt
        for mod in model.decoder.layers:
            y = checkpoint(mod, y, memory, None, None, None, None, False, False, use_reentrant=False)
        return model.decoder.norm(y)

    def step(self, loss_host):
        """One training step: K = --accum micro-steps (fresh src and tgt,
        forward under autocast, loss / K, backward, each micro-step's loss
        copied into loss_host[k], a pinned float32 tensor of K), then the
        optimizer (through the GradScaler in fp16) and
        zero_grad(set_to_none=True)."""
        torch, F, K, scaler, opt = self.torch, self.F, self.cfg.accum, self.scaler, self.opt
        for k in range(K):
            src = torch.randn(self.shape, device=self.dev)
            tgt = torch.randn(self.shape, device=self.dev)
            with self.autocast():
                out = self.forward(src, tgt)
                loss = F.mse_loss(out, tgt) / K
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            loss_host[k].copy_(loss.detach(), non_blocking=True)
            del src, tgt, out, loss
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)


# ---------------------------------------------------------------- one configuration

def sdpa_choice(torch, cfg, dev, amp_dtype):
    """The backend SDPA picks for this configuration's attention call."""
    b, hd = cfg.batch // cfg.accum, cfg.d_model // cfg.heads
    dt = amp_dtype or torch.float32
    q, k, v = (torch.randn(b, cfg.heads, cfg.seq, hd, device=dev, dtype=dt, requires_grad=True)
               for _ in range(3))
    try:
        c = torch._fused_sdp_choice(q, k, v, None, cfg.dropout, cfg.causal)
        return SDPA_NAMES.get(int(c), str(c))
    except Exception as e:  # the private function moved: say so, do not guess
        return "unknown (%s)" % type(e).__name__


def record_history(torch, stacks):
    """Start torch.cuda.memory's history: with each request's Python frames
    (stacks "python"), or without any (context=None: make_snapshots.py's
    setting, which checkpointing's recomputation survives)."""
    if stacks == "python":
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=1000000)
    else:
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                                 max_entries=1000000)


def trace_stacks_for(name, flags, trace_all, retry, no_trace=False):
    """How a configuration is traced: "python", "none", or None (not traced)."""
    if no_trace or not (name in TRACED or trace_all):
        return None
    if retry or "--checkpoint" in flags.split():
        return "none"
    return "python"


def run_child(name, flags, outdir, steps, device, trace_all=False, retry=False, no_trace=False,
              traced_steps=TRACED_STEPS):
    try:
        import torch
    except ImportError:
        print("transformer_reference: torch is not installed here: waived", file=sys.stderr)
        return 77

    if not torch.cuda.is_available() or device >= torch.cuda.device_count():
        print("transformer_reference: no CUDA device %d: waived" % device, file=sys.stderr)
        return 77
    cfg = Cfg(flags, steps)
    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    torch.manual_seed(0)
    script = os.path.basename(__file__)
    stacks = trace_stacks_for(name, flags, trace_all, retry, no_trace)
    traced = stacks is not None
    was_traced = traced
    if traced:
        record_history(torch, stacks)
    marks = []

    def mark(label, reset_peak):
        if traced:
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
        if step <= traced_steps:
            mark("step %d" % step, True)
        torch.cuda.reset_peak_memory_stats()
        start.record()
        tr.step(loss_host)
        stop.record()
        stop.synchronize()
        st = torch.cuda.memory_stats()
        if step <= traced_steps:
            mark("end of step %d (after zero_grad)" % step, False)
        dt = start.elapsed_time(stop) * 1e-3
        scale, skipped = 1.0, 0
        if scaler is not None:
            scale = scaler.get_scale()
            skipped = int(scale < prev_scale)
            prev_scale = scale
        rows.append([step, st["allocated_bytes.all.peak"], st["allocated_bytes.all.current"],
                     st["reserved_bytes.all.peak"], st["reserved_bytes.all.current"], dt,
                     float(loss_host.sum()), scale, skipped, "ok"] + [None] * 7)
        if step > WARMUP_STEPS:
            times.append(dt)
        if traced and (step == traced_steps or (step == cfg.steps and step < traced_steps)):
            snap = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)
            write_trace(os.path.join(outdir, name + ".trace"), snap["device_traces"][device],
                        marks, script, stacks)
            traced = False

    write_csv(os.path.join(outdir, name + ".csv"), rows)
    meta = device_meta(torch, device)
    meta["sdpa_backend"] = sdpa_choice(torch, cfg, dev, tr.amp_dtype)
    meta.update(env_meta())
    meta["steps"] = cfg.steps
    meta["traced_steps"] = min(traced_steps, cfg.steps) if was_traced else 0
    if was_traced:
        meta["trace_stacks"] = stacks
        meta["trace_retry"] = int(retry)
    with open(os.path.join(outdir, name + ".meta"), "w") as f:
        for k, v in meta.items():
            f.write("%s=%s\n" % (k, v))
    med = statistics.median(times) if times else float("nan")
    last = rows[-1]
    print("transformer_reference: %-34s peak_allocated %12d  allocated_end %12d  step %.3f ms (median of %d), sdpa %s"
          % (name, last[1], last[2], med * 1e3, len(times), meta["sdpa_backend"]), file=sys.stderr)
    return 0


# ---------------------------------------------------------------- driver

def run_one(name, cmd):
    """One configuration's child process: its exit status (-1: timed out)."""
    try:
        return subprocess.run(cmd, timeout=CHILD_TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        print("transformer_reference: %s: timed out after %d s" % (name, CHILD_TIMEOUT_S), file=sys.stderr)
        return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", help="folder for configs.txt, meta.txt, NAME.csv, NAME.trace")
    ap.add_argument("--only", help="comma-separated configuration names (default: all)")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="steps per configuration")
    ap.add_argument("--device", type=int, default=0, help="CUDA device number")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--trace-all", action="store_true",
                    help="write NAME.trace for every configuration, not only TRACED's "
                         "(to find where a figure differs; commit only TRACED's)")
    ap.add_argument("--traced-steps", type=int, default=TRACED_STEPS,
                    help="steps a NAME.trace records (default %d)" % TRACED_STEPS)
    ap.add_argument("--no-trace", action="store_true",
                    help="write no trace (timing runs: recording the history slows PyTorch's step)")
    ap.add_argument("--configs", help="a file of NAME<TAB>flags lines to run instead of CONFIGS "
                                      "(tests/torch/random_configs.py writes one)")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # one configuration, in this process
    ap.add_argument("--retry", action="store_true", help=argparse.SUPPRESS)  # traced again, no stacks
    a = ap.parse_args()
    if a.steps < 1 or a.device < 0 or a.traced_steps < 1:
        ap.error("--steps and --traced-steps must be >= 1 and --device >= 0")
    configs = CONFIGS
    if a.configs:
        with open(a.configs) as f:
            configs = [tuple(l.rstrip("\n").split("\t", 1)) for l in f if l.strip() and not l.startswith("#")]
    table = dict(configs)
    if a.list:
        for n, fl in configs:
            print("%s\t%s --steps %d" % (n, fl, a.steps))
        return 0
    if a.child:
        if a.child not in table:
            ap.error("unknown configuration %s" % a.child)
        return run_child(a.child, table[a.child], a.outdir, a.steps, a.device, a.trace_all, a.retry,
                         a.no_trace, a.traced_steps)

    names = [n for n, _ in configs]
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
        print("transformer_reference: bad configuration: %s" % e, file=sys.stderr)
        return 2
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "configs.txt"), "w") as f:
        f.write("# name<TAB>build/workload flags; written by tests/torch/transformer_reference.py\n")
        for n in names:
            f.write("%s\t%s --steps %d\n" % (n, table[n], a.steps))
    t0 = time.monotonic()
    failed = []
    for n in names:
        cmd = [sys.executable, os.path.abspath(__file__), a.outdir, "--child", n,
               "--steps", str(a.steps), "--device", str(a.device),
               "--traced-steps", str(a.traced_steps)] + (["--trace-all"] if a.trace_all else []) \
            + (["--no-trace"] if a.no_trace else []) + (["--configs", os.path.abspath(a.configs)] if a.configs else [])
        rc = run_one(n, cmd)
        if rc not in (0, 77) and trace_stacks_for(n, table[n], a.trace_all, False, a.no_trace) == "python":
            print("transformer_reference: %s failed (exit %d) while traced with Python stacks: "
                  "once more without them" % (n, rc), file=sys.stderr)
            rc = run_one(n, cmd + ["--retry"])
        if rc == 77:
            return 77
        if rc != 0:
            failed.append(n)
            print("transformer_reference: %s failed (exit %d)" % (n, rc), file=sys.stderr)
    meta_src = os.path.join(a.outdir, names[0] + ".meta")
    if os.path.exists(meta_src):
        with open(meta_src) as src, open(os.path.join(a.outdir, "meta.txt"), "w") as dst:
            dst.write(src.read())
            dst.write("wall_s=%.1f\n" % (time.monotonic() - t0))
    print("transformer_reference: %d configurations in %.1f s, %d failed"
          % (len(names), time.monotonic() - t0, len(failed)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
