#!/usr/bin/env python3
"""fsdp_transformer_reference.py: PyTorch's own per-rank memory figures for
nn.TransformerEncoder under FSDP2 (issue 30 item 7; the model:
build/sharded_model --model transformer). Run it on a machine with GPUS GPUs:

    python3 tests/torch/fsdp_transformer_reference.py OUTDIR [--gpus 2] [--steps 4] [--only NAME,...]
    python3 tests/torch/fsdp_transformer_reference.py OUTDIR --configs FILE [--gpus N] [--trace | --no-history]

The fixtures live in tests/fixtures/fsdp_transformer/wN/, one folder per
world size N (w2: --gpus 2, w4: --gpus 4), each an OUTDIR of this script;
tests/scripts/test_fsdp_transformer_fixtures.sh replays every folder's rows.

CONFIGS are tests/torch/random_configs.py's draw_fsdp_tfm (--fsdp-tfm:
8 draws, seed 307; the same draws for every world size); --configs FILE runs
FILE's NAME<TAB>flags lines instead. A line's flags are build/sharded_model's
(build/workload's Transformer flags); one that begins with --mode M runs
that wrapper only, as NAME; one without runs both, as NAME_fsdp and
NAME_zero2.

For each configuration it starts `python3 -m torch.distributed.run
--standalone --nproc_per_node GPUS` on this script (a fresh process per rank
and configuration, so each rank's caching allocator and cuBLAS workspaces
start clean, as in the model), with NCCL_NVLS_ENABLE=0 (NVLink multicast
off). Each rank builds on its GPU, as tests/torch/transformer_reference.py
builds --arch encoder,

    layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0,
                                       activation, batch_first=, norm_first=, device="cuda")
    model = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False); del layer
    fsdp:  fully_shard(each model.layers[i]); fully_shard(model)      (FSDP2, ZeRO-3)
    zero2: the same with reshard_after_forward=False
    opt = Adam(lr=1e-3) (foreach; SGD and momentum too, by --optimizer)  after wrapping

and trains it in training mode, fp32, with its own batch (B sequences a
rank), as transformer_reference.py's step with K = 1:

    reset_peak_memory_stats(); src = randn(shape); tgt = randn(shape)
        (shape (L, B, E), or (B, L, E) with --batch-first)
    out = model(src); loss = mse_loss(out, tgt) / 1; loss.backward()
    loss_host.copy_(loss.detach(), non_blocking=True); del src, tgt, out, loss
    opt.step(); opt.zero_grad(set_to_none=True)
    (figures read), then 0.3 s for NCCL's watchdog to let go of the step's
    finished collectives (REAP_S; also once before the first step:
    tests/torch/fsdp_reference.py says why)

It writes into OUTDIR (tests/torch/fsdp_reference.py's shapes):

  configs.txt        NAME, a tab, build/sharded_model's flags without --rank:
                     --model transformer --mode M --world N <network> --steps K
  meta.txt           key=value: torch, CUDA and NCCL versions, GPU, world, steps
  NAME.rankR.init    what rank R holds before the first step: the bytes
                     allocated after init_process_group, after building the
                     model, after wrapping it, after the barrier and the wait
  NAME.rankR.segments  the segments rank R's caching allocator got from the
                     driver, in order (address, bytes, stream; from a memory
                     history without stacks, kept from the model's first
                     tensor): build/sharded_model --segments puts the model's
                     segments there, as build/replay places a trace's.
                     Not with --no-history: then no memory history is
                     recorded (it costs host time at every allocation and
                     free, so a run that is timed beside the suite's,
                     tests/torch/sharded_speed.py --model transformer, goes
                     without) and no .segments file is written; the other
                     files are written as without it
  NAME.rankR.csv     one row per step: step,peak_allocated,allocated_end,
                     peak_reserved,status,step_time_s
                     (max_memory_allocated() after reset_peak_memory_stats()
                     at the step's start; memory_allocated() after zero_grad;
                     max_memory_reserved(); CUDA events around the step)
  with --trace:      trace/NAME.rankR.pickle.gz, every rank's torch.cuda.memory
                     snapshot (Python stacks; gzipped) from before the model
                     is built to the last step (scripts/snapshot2trace
                     --device R makes it a trace; not for the fixtures: they
                     are large), and trace/NAME.rankR.marks: one line per
                     mark, the number of events then, a tab, the mark
                     (after_model, after_wrap, before_step_1, end_step_K)

Exit: 0 ok, 1 a configuration failed, 2 usage, 77 no torch, fewer GPUs than
--gpus, or no NCCL. Standard library and torch only.
"""
import argparse
import gzip
import os
import pickle
import subprocess
import sys
import time

import transformer_reference as tref
from fsdp_reference import CHILD_TIMEOUT_S, HEADER, LR, REAP_S, read_configs, write_atomic
from random_configs import FSDP_TFM_DEFAULT_N, FSDP_TFM_DEFAULT_SEED, draw_fsdp_tfm

CONFIGS = draw_fsdp_tfm(FSDP_TFM_DEFAULT_N, FSDP_TFM_DEFAULT_SEED)
MODES = ("fsdp", "zero2")
DEFAULT_STEPS = 4
MAX_EVENTS = 1000000  # the memory history's ring: every event of set-up and the steps


class Cfg:
    """build/sharded_model --model transformer's network flags, strictly:
    build/workload's Transformer flags (transformer_reference.py's Cfg
    parses them) for one nn.TransformerEncoder made on the device, in fp32
    with one micro-step and dropout 0, and --mode."""

    REFUSED = ("--arch", "--dec-layers", "--accum", "--precision", "--checkpoint", "--causal", "--build",
               "--steps")

    def __init__(self, flags):
        toks = flags.split()
        self.mode = None
        if "--mode" in toks:
            i = toks.index("--mode")
            if i + 1 >= len(toks) or toks[i + 1] not in MODES:
                raise ValueError("bad option --mode %s" % " ".join(toks[i + 1:i + 2]))
            self.mode = toks[i + 1]
            del toks[i:i + 2]
        for t in toks:
            if t in self.REFUSED:
                raise ValueError("bad option %s (the FSDP2 model takes the encoder alone, fp32, one "
                                 "micro-step, made on the device)" % t)
        base = tref.Cfg("--arch encoder " + " ".join(toks), 1)
        if base.dropout != 0:
            raise ValueError("give --dropout 0 (the model's FSDP2 run has no dropout)")
        if base.optimizer not in LR:
            raise ValueError("bad option --optimizer %s" % base.optimizer)
        if (base.d_model // base.heads) % 4:
            raise ValueError("--heads must divide --d-model in heads of a multiple of 4 "
                             "(memory-efficient attention's)")
        self.d_model, self.heads, self.layers, self.ff = base.d_model, base.heads, base.enc, base.ff
        self.dropout, self.activation, self.optimizer = base.dropout, base.activation, base.optimizer
        self.seq, self.batch = base.seq, base.batch
        self.norm_first, self.batch_first = base.norm_first, base.batch_first

    def net(self):
        """The flags again, without --mode: what configs.txt carries after --world."""
        f = ["--d-model", self.d_model, "--heads", self.heads, "--enc-layers", self.layers, "--ff", self.ff,
             "--dropout", 0, "--activation", self.activation, "--seq", self.seq, "--batch", self.batch,
             "--optimizer", self.optimizer]
        f += (["--norm-first"] if self.norm_first else []) + (["--batch-first"] if self.batch_first else [])
        return " ".join(str(x) for x in f)


def segment_lines(events):
    """The segments the caching allocator asked the driver for (and gave
    back), in order, from a memory history: `alloc ADDR BYTES STREAM` or
    `free ADDR BYTES STREAM` lines (hex address, decimal bytes), after a
    header. The driver places segments its own way (here with NCCL's own
    allocations among them), and where equal free blocks tie, the lowest
    address wins: build/sharded_model --segments FILE puts the model's
    segments at these addresses."""
    out = ["# segment_alloc/segment_free events of one rank: op addr bytes stream\n"]
    for e in events:
        a = e.get("action")
        if a in ("segment_alloc", "segment_free"):
            out.append("%s 0x%x %d %d\n" % ("alloc" if a == "segment_alloc" else "free", e["addr"],
                                             e["size"], e.get("stream", 0)))
    return "".join(out)


def run_rank(name, mode, cfg, outdir, steps, trace, history=True):
    """One rank, under torchrun (RANK, LOCAL_RANK, WORLD_SIZE set). trace
    needs history (main refuses --trace with --no-history)."""
    os.environ["NCCL_NVLS_ENABLE"] = "0"  # before NCCL initialises, whatever was set
    try:
        import torch
        import torch.distributed as dist
        import torch.nn.functional as F
        from torch import nn
    except ImportError:
        print("fsdp_transformer_reference: torch is not installed here: waived", file=sys.stderr)
        return 77
    from torch.distributed.fsdp import fully_shard

    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    held = [("after_init_process_group", torch.cuda.memory_allocated())]
    marks = []

    def mark(label):
        if trace:
            marks.append((len(torch.cuda.memory._snapshot()["device_traces"][local]), label))

    # This rank's allocator events from the model's first tensor: without
    # stacks (cheap, yet host time at every allocation), for the segments'
    # addresses; with Python stacks under --trace; none under --no-history.
    if history:
        torch.cuda.memory._record_memory_history(enabled="all", context="all" if trace else None,
                                                 stacks="python", max_entries=MAX_EVENTS)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.heads, dim_feedforward=cfg.ff, dropout=0.0,
                                       activation=cfg.activation, batch_first=cfg.batch_first,
                                       norm_first=cfg.norm_first, device=dev)
    model = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
    del layer
    model.train()
    held.append(("after_model", torch.cuda.memory_allocated()))
    mark("after_model")
    raf = mode == "fsdp"
    for m in model.layers:
        fully_shard(m, reshard_after_forward=raf)
    fully_shard(model, reshard_after_forward=raf)
    held.append(("after_wrap", torch.cuda.memory_allocated()))
    mark("after_wrap")
    params = list(model.parameters())
    o = cfg.optimizer
    if o == "adam":
        opt = torch.optim.Adam(params, lr=LR[o])
    else:
        opt = torch.optim.SGD(params, lr=LR[o], momentum=0.9 if o == "momentum" else 0)
    shape = (cfg.batch, cfg.seq, cfg.d_model) if cfg.batch_first else (cfg.seq, cfg.batch, cfg.d_model)
    loss_host = torch.zeros(1, dtype=torch.float32).pin_memory()  # pinned: not in the device's figures
    torch.manual_seed(1 + rank)  # this rank's own batches
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    rows = []
    torch.cuda.synchronize()
    dist.barrier()
    held.append(("after_barrier", torch.cuda.memory_allocated()))
    time.sleep(REAP_S)
    held.append(("before_step_1", torch.cuda.memory_allocated()))
    mark("before_step_1")
    for step in range(1, steps + 1):
        torch.cuda.reset_peak_memory_stats()
        start.record()
        src = torch.randn(shape, device=dev)
        tgt = torch.randn(shape, device=dev)
        out = model(src)
        loss = F.mse_loss(out, tgt) / 1  # transformer_reference.py's `/ K` with K = 1
        loss.backward()
        loss_host[0].copy_(loss.detach(), non_blocking=True)
        del src, tgt, out, loss
        opt.step()
        opt.zero_grad(set_to_none=True)
        stop.record()
        stop.synchronize()
        rows.append("%d,%d,%d,%d,ok,%.9g" % (
            step, torch.cuda.max_memory_allocated(), torch.cuda.memory_allocated(),
            torch.cuda.max_memory_reserved(), start.elapsed_time(stop) / 1e3))
        mark("end_step_%d" % step)
        time.sleep(REAP_S)  # let the watchdog release this step's finished collectives
    base = os.path.join(outdir, "%s.rank%d" % (name, rank))
    write_atomic(base + ".init", "".join("%s=%d\n" % kv for kv in held))
    if history:
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        write_atomic(base + ".segments", segment_lines(snap["device_traces"][local]))
    if trace:  # gzipped: Python stacks repeat (scripts/snapshot2trace reads .pickle.gz)
        tbase = os.path.join(outdir, "trace", "%s.rank%d" % (name, rank))
        os.makedirs(os.path.dirname(tbase), exist_ok=True)
        with gzip.open(tbase + ".pickle.gz.tmp", "wb") as f:
            pickle.dump(snap, f)
        os.replace(tbase + ".pickle.gz.tmp", tbase + ".pickle.gz")
        write_atomic(tbase + ".marks", "".join("%d\t%s\n" % m for m in marks))
    write_atomic(base + ".csv", HEADER + "\n" + "\n".join(rows) + "\n")
    if rank == 0:
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        write_atomic(os.path.join(outdir, "meta.txt"),
                     "torch_version=%s\ncuda_version=%s\nnccl_version=%s\ndevice_name=%s\n"
                     "world_size=%d\nsteps=%d\nNCCL_NVLS_ENABLE=%s\n" % (
                         torch.__version__, torch.version.cuda, nccl, torch.cuda.get_device_name(dev),
                         world, steps, os.environ.get("NCCL_NVLS_ENABLE", "")))
    dist.destroy_process_group()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    ap.add_argument("--gpus", type=int, default=2, help="the world size: GPUs of this machine")
    ap.add_argument("--only", default="", help="comma-separated configuration names")
    ap.add_argument("--configs", help="a file of NAME<TAB>flags lines to run instead of CONFIGS")
    ap.add_argument("--trace", action="store_true",
                    help="also write every rank's allocator events with Python stacks (trace/NAME.rankR.pickle.gz, "
                         "a torch.cuda.memory snapshot; trace/NAME.rankR.marks)")
    ap.add_argument("--no-history", action="store_true",
                    help="record no memory history and write no .segments files (for timed runs: the history "
                         "costs host time at every allocation)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # NAME under torchrun
    ap.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.steps < 1 or a.gpus < 1:
        ap.error("--steps and --gpus must be >= 1")
    if a.trace and a.no_history:
        ap.error("--trace needs the memory history: not with --no-history")
    configs = CONFIGS
    if a.configs:
        try:
            configs = read_configs(a.configs)
        except (OSError, ValueError) as e:
            ap.error("--configs: %s" % e)
    table = dict(configs)
    if a.list:
        for n, fl in configs:
            print("%s\t%s --steps %d" % (n, fl, a.steps))
        return 0
    if a.child:
        if a.child not in table or not a.mode:
            ap.error("unknown configuration %s" % a.child)
        label = a.child if Cfg(table[a.child]).mode else "%s_%s" % (a.child, a.mode)
        return run_rank(label, a.mode, Cfg(table[a.child]), a.outdir, a.steps,
                        os.environ.get("FSDP_TFM_REFERENCE_TRACE") == "1", history=not a.no_history)

    names = [s for s in a.only.split(",") if s] or [n for n, _ in configs]
    bad = [s for s in names if s not in table]
    if bad:
        ap.error("unknown configuration(s): %s (see --list)" % ",".join(bad))
    try:
        parsed = {n: Cfg(table[n]) for n in names}
    except ValueError as e:
        print("fsdp_transformer_reference: bad configuration: %s" % e, file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("fsdp_transformer_reference: torch is not installed here: waived", file=sys.stderr)
        return 77
    if torch.cuda.device_count() < a.gpus or not torch.distributed.is_nccl_available():
        print("fsdp_transformer_reference: needs %d GPUs and NCCL (found %d GPUs): waived"
              % (a.gpus, torch.cuda.device_count()), file=sys.stderr)
        return 77
    os.makedirs(a.outdir, exist_ok=True)
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", FSDP_TFM_REFERENCE_TRACE="1" if a.trace else "0")
    t0 = time.monotonic()
    failed, lines = [], []
    runs = 0
    for n in names:
        cfg = parsed[n]
        for mode in ([cfg.mode] if cfg.mode else MODES):
            runs += 1
            t1 = time.monotonic()
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc_per_node", str(a.gpus), os.path.abspath(__file__), a.outdir,
                   "--child", n, "--mode", mode, "--steps", str(a.steps)]
            if a.configs:
                cmd += ["--configs", os.path.abspath(a.configs)]
            if a.no_history:
                cmd += ["--no-history"]
            try:
                rc = subprocess.run(cmd, env=env, timeout=CHILD_TIMEOUT_S).returncode
            except subprocess.TimeoutExpired:
                rc = -1
            label = n if cfg.mode else "%s_%s" % (n, mode)
            print("fsdp_transformer_reference: %s on %d GPUs: exit %d, %.1f s"
                  % (label, a.gpus, rc, time.monotonic() - t1), file=sys.stderr)
            if rc != 0:
                failed.append(label)
                continue
            lines.append("%s\t--model transformer --mode %s --world %d %s --steps %d"
                         % (label, mode, a.gpus, cfg.net(), a.steps))
    write_atomic(os.path.join(a.outdir, "configs.txt"),
                 "# name<TAB>build/sharded_model flags (add --rank R); "
                 "written by tests/torch/fsdp_transformer_reference.py\n" + "".join(line + "\n" for line in lines))
    print("fsdp_transformer_reference: %d runs on %d GPUs in %.1f s, %d failed"
          % (runs, a.gpus, time.monotonic() - t0, len(failed)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
