#!/usr/bin/env python3
"""fsdp_reference.py: PyTorch's own per-rank memory figures for C24 (the
training workload data-parallel over two GPUs, common/workload/sharded/sharded_seq.h).
Run it on a machine with two GPUs:

    python3 tests/torch/fsdp_reference.py OUTDIR [--steps 6] [--only NAME,...] [--gpus 2]
    python3 tests/torch/fsdp_reference.py OUTDIR --configs FILE [--steps K]

--configs FILE runs FILE's NAME<TAB>flags lines instead of CONFIGS (drawn by
tests/torch/random_configs.py --c24); a line whose flags begin with
--mode M runs that wrapper only, as NAME (not NAME_MODE).

For each configuration in CONFIGS and each wrapper (ddp, zero2, fsdp), it
starts `python3 -m torch.distributed.run --standalone --nproc_per_node GPUS`
on this script (a fresh process per rank and configuration, so each rank's
caching allocator and cuBLAS workspaces start clean, as in the model), with
NCCL_NVLS_ENABLE=0 (NVLink multicast off). Each rank builds, on its GPU,

    model = Sequential(Linear(in,H), ReLU(), [Linear(H,H), ReLU()] * (L-2), Linear(H,out))
    ddp:   DistributedDataParallel(model, device_ids=[rank])   (bucket_cap_mb 25,
           gradient_as_bucket_view False: the defaults)
    zero2: fully_shard(each Linear, reshard_after_forward=False); fully_shard(model, same)
    fsdp:  fully_shard(each Linear); fully_shard(model)        (FSDP2, ZeRO-3)
    opt = SGD(lr) | SGD(lr, momentum=0.9) | Adam(lr)           (foreach, after wrapping)

and trains it as build/workload's fp32 step does (mlp_reference.py), with
its own batch of B rows:

    reset_peak_memory_stats(); x = randn(B, in); y = randn(B, out)
    out = model(x); loss = mse_loss(out, y) / 1; loss.backward(); del x, y, out, loss
    opt.step(); opt.zero_grad(set_to_none=True)
    (figures read), then 0.3 s for NCCL's watchdog to let go of the step's
    finished collectives (REAP_S below; also once before the first step)

It writes into OUTDIR (the shape tests/scripts/test_sharded_fixtures.sh reads):

  configs.txt        NAME_MODE, a tab, build/sharded_model's flags (without --rank)
  meta.txt           key=value: torch, CUDA and NCCL versions, GPUs, ...
  NAME_MODE.rankR.init  what rank R holds before the first step: the bytes
                     allocated after init_process_group, after building the
                     model, after wrapping it, and after the barrier and the
                     wait (key=value lines)
  NAME_MODE.rankR.csv  one row per step: step,peak_allocated,allocated_end,
                     peak_reserved,status (torch.cuda.max_memory_allocated() after
                     reset_peak_memory_stats() at the step's start;
                     memory_allocated() after zero_grad; max_memory_reserved()),
                     and step_time_s (CUDA events around the step)

Exit: 0 ok, 1 a configuration failed, 2 usage, 77 no torch, fewer GPUs than
--gpus, or no NCCL. Standard library and torch only.
"""
import argparse
import os
import subprocess
import sys
import time

# name, build/sharded_model's network flags. Shapes: C24's GPU run (--quick
# 1024, default 4096: 8 layers, 32 rows a rank, Adam); an odd width so the
# shards are padded (999 rows over 2 ranks: 500 and 499); a batch large
# enough that activations dominate.
CONFIGS = [
    ("w1024_adam", "--layers 8 --in 1024 --width 1024 --out 1024 --batch 32 --optimizer adam"),
    ("w4096_adam", "--layers 8 --in 4096 --width 4096 --out 4096 --batch 32 --optimizer adam"),
    ("odd_momentum", "--layers 3 --in 100 --width 999 --out 10 --batch 64 --optimizer momentum"),
    ("bigbatch_sgd", "--layers 4 --in 1024 --width 1024 --out 1024 --batch 4096 --optimizer sgd"),
]
MODES = ("ddp", "zero2", "fsdp")
DEFAULT_STEPS = 6
LR = {"sgd": 0.01, "momentum": 0.01, "adam": 1e-3}  # build/workload's
CHILD_TIMEOUT_S = 300
# ProcessGroupNCCL keeps each collective's tensors (stashed, in place of
# record_stream) until its watchdog thread, which wakes every 100 ms, finds
# the work finished. Steps of a few ms would otherwise carry the tensors of
# earlier steps' collectives: DDP's step-1 bucket, freed by the rebuild at
# step 2, stayed allocated through steps 2-6 in some runs and not in others
# (H200 x2, 2026-11-23: +16 MiB of a 98 MiB end of step, by the watchdog's
# phase). Waiting this long before the first step and after each step's
# figures gives the steady state the model describes, the same in every run.
REAP_S = 0.3
HEADER = "step,peak_allocated,allocated_end,peak_reserved,status,step_time_s"


def parse_flags(flags):
    """build/sharded_model's network flags as a dict (strict)."""
    toks = flags.split()
    ints = ("--layers", "--in", "--width", "--out", "--batch")
    cfg = {"optimizer": "sgd"}
    if len(toks) >= 2 and toks[0] == "--mode":
        if toks[1] not in MODES:
            raise ValueError("bad flag --mode %s" % toks[1])
        cfg["mode"] = toks[1]
        toks = toks[2:]
    if len(toks) % 2:
        raise ValueError("flags come in pairs: %s" % flags)
    for k, v in zip(toks[::2], toks[1::2]):
        if k in ints:
            if int(v) < 1:
                raise ValueError("%s must be >= 1" % k)
            cfg[k[2:]] = int(v)
        elif k == "--optimizer" and v in LR:
            cfg["optimizer"] = v
        else:
            raise ValueError("bad flag %s %s" % (k, v))
    for k in ("layers", "in", "width", "out", "batch"):
        if k not in cfg:
            raise ValueError("missing --%s" % k)
    if cfg["layers"] < 2:
        raise ValueError("--layers must be >= 2")
    return cfg


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def read_configs(path):
    """NAME<TAB>flags lines of a file ('#' comments and blank lines
    skipped); OSError where it cannot be read, ValueError where a line is
    not NAME<TAB>flags (fsdp_transformer_reference.py reads its own so)."""
    with open(path) as f:
        configs = [tuple(line.rstrip("\n").split("\t", 1)) for line in f
                   if line.strip() and not line.startswith("#")]
    if any(len(c) != 2 for c in configs):
        raise ValueError("every line is NAME<TAB>flags")
    return configs


def run_rank(name, mode, flags, outdir, steps):
    """One rank, under torchrun (RANK, LOCAL_RANK, WORLD_SIZE set)."""
    os.environ["NCCL_NVLS_ENABLE"] = "0"  # before NCCL initialises, whatever was set
    try:
        import torch
        import torch.distributed as dist
        import torch.nn.functional as F
        from torch import nn
    except ImportError:
        print("fsdp_reference: torch is not installed here: waived", file=sys.stderr)
        return 77
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel as DDP

    cfg = parse_flags(flags)
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    held = [("after_init_process_group", torch.cuda.memory_allocated())]
    torch.manual_seed(0)
    dims = [cfg["in"]] + [cfg["width"]] * (cfg["layers"] - 1) + [cfg["out"]]
    mods = []
    for i in range(cfg["layers"]):
        mods.append(nn.Linear(dims[i], dims[i + 1], device=dev))
        if i < cfg["layers"] - 1:
            mods.append(nn.ReLU())
    model = nn.Sequential(*mods)
    held.append(("after_model", torch.cuda.memory_allocated()))
    if mode == "ddp":
        model = DDP(model, device_ids=[local])
    else:
        raf = mode == "fsdp"
        for m in mods:
            if isinstance(m, nn.Linear):
                fully_shard(m, reshard_after_forward=raf)
        fully_shard(model, reshard_after_forward=raf)
    held.append(("after_wrap", torch.cuda.memory_allocated()))
    params = list(model.parameters())
    o = cfg["optimizer"]
    if o == "adam":
        opt = torch.optim.Adam(params, lr=LR[o])
    else:
        opt = torch.optim.SGD(params, lr=LR[o], momentum=0.9 if o == "momentum" else 0)
    b = cfg["batch"]
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    rows = []
    torch.cuda.synchronize()
    dist.barrier()
    held.append(("after_barrier", torch.cuda.memory_allocated()))
    time.sleep(REAP_S)
    held.append(("before_step_1", torch.cuda.memory_allocated()))
    tracing = os.environ.get("FSDP_REFERENCE_TRACE") == "1" and rank == 0
    if tracing:  # rank 0's allocator events with Python stacks (--trace)
        torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="python")
    marks = []
    for step in range(1, steps + 1):
        torch.cuda.reset_peak_memory_stats()
        start.record()
        x = torch.randn(b, cfg["in"], device=dev)
        y = torch.randn(b, cfg["out"], device=dev)
        out = model(x)
        loss = F.mse_loss(out, y) / 1  # build/workload's `/ K` with K = 1
        loss.backward()
        del x, y, out, loss
        opt.step()
        opt.zero_grad(set_to_none=True)
        stop.record()
        stop.synchronize()
        rows.append("%d,%d,%d,%d,ok,%.9g" % (
            step, torch.cuda.max_memory_allocated(), torch.cuda.memory_allocated(),
            torch.cuda.max_memory_reserved(), start.elapsed_time(stop) / 1e3))
        time.sleep(REAP_S)  # let the watchdog release this step's finished collectives
        if tracing:  # where each step's events end in the trace
            marks.append(len(torch.cuda.memory._snapshot()["device_traces"][local]))
    base = os.path.join(outdir, "%s.rank%d" % (name if "mode" in cfg else "%s_%s" % (name, mode), rank))
    write_atomic(base + ".init", "".join("%s=%d\n" % kv for kv in held))
    if tracing:
        torch.cuda.memory._dump_snapshot(base + ".pickle")
        write_atomic(base + ".marks", "".join("%d\n" % m for m in marks))
    write_atomic(base + ".csv", HEADER + "\n" + "\n".join(rows) + "\n")
    if rank == 0:
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        with open(os.path.join(outdir, "meta.txt.tmp"), "w") as f:
            f.write("torch_version=%s\ncuda_version=%s\nnccl_version=%s\ndevice_name=%s\n"
                    "world_size=%d\nsteps=%d\nNCCL_NVLS_ENABLE=%s\n" % (
                        torch.__version__, torch.version.cuda, nccl,
                        torch.cuda.get_device_name(dev), world, steps,
                        os.environ.get("NCCL_NVLS_ENABLE", "")))
        os.replace(os.path.join(outdir, "meta.txt.tmp"), os.path.join(outdir, "meta.txt"))
    dist.destroy_process_group()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated configuration names")
    ap.add_argument("--configs", help="a file of NAME<TAB>flags lines to run instead of CONFIGS")
    ap.add_argument("--trace", action="store_true",
                    help="also write rank 0's allocator events with Python stacks (NAME.rank0.pickle, "
                         "a torch.cuda.memory snapshot; NAME.rank0.marks: each step's last event)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # NAME under torchrun
    ap.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.steps < 1 or a.gpus < 1:
        ap.error("--steps and --gpus must be >= 1")
    configs = CONFIGS
    if a.configs:
        try:
            configs = read_configs(a.configs)
        except OSError as e:
            ap.error("cannot read --configs: %s" % e)
        except ValueError as e:
            ap.error("--configs: %s" % e)
    table = dict(configs)
    if a.list:
        for n, fl in configs:
            print("%s\t%s --steps %d" % (n, fl, a.steps))
        return 0
    if a.child:
        if a.child not in table or not a.mode:
            ap.error("unknown configuration %s" % a.child)
        return run_rank(a.child, a.mode, table[a.child], a.outdir, a.steps)

    names = [s for s in a.only.split(",") if s] or [n for n, _ in configs]
    bad = [s for s in names if s not in table]
    if bad:
        ap.error("unknown configuration(s): %s (see --list)" % ",".join(bad))
    try:
        for n in names:
            parse_flags(table[n])
    except ValueError as e:
        print("fsdp_reference: bad configuration: %s" % e, file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("fsdp_reference: torch is not installed here: waived", file=sys.stderr)
        return 77
    if torch.cuda.device_count() < a.gpus or not torch.distributed.is_nccl_available():
        print("fsdp_reference: needs %d GPUs and NCCL (found %d GPUs): waived"
              % (a.gpus, torch.cuda.device_count()), file=sys.stderr)
        return 77
    os.makedirs(a.outdir, exist_ok=True)
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", FSDP_REFERENCE_TRACE="1" if a.trace else "0")
    t0 = time.monotonic()
    failed, lines = [], []
    runs = 0
    for n in names:
        fixed = parse_flags(table[n]).get("mode")
        for mode in ([fixed] if fixed else MODES):
            runs += 1
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc_per_node", str(a.gpus), os.path.abspath(__file__), a.outdir,
                   "--child", n, "--mode", mode, "--steps", str(a.steps)]
            if a.configs:
                cmd += ["--configs", os.path.abspath(a.configs)]
            try:
                rc = subprocess.run(cmd, env=env, timeout=CHILD_TIMEOUT_S).returncode
            except subprocess.TimeoutExpired:
                rc = -1
            label = n if fixed else "%s_%s" % (n, mode)
            if rc != 0:
                failed.append(label)
                print("fsdp_reference: %s failed (exit %d)" % (label, rc), file=sys.stderr)
                continue
            net = table[n].split(None, 2)[2] if fixed else table[n]
            lines.append("%s\t--mode %s --world %d %s --steps %d" % (label, mode, a.gpus, net, a.steps))
    with open(os.path.join(a.outdir, "configs.txt"), "w") as f:
        f.write("# name<TAB>build/sharded_model flags (add --rank R); "
                "written by tests/torch/fsdp_reference.py\n")
        f.write("".join(line + "\n" for line in lines))
    print("fsdp_reference: %d runs in %.1f s, %d failed"
          % (runs, time.monotonic() - t0, len(failed)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
