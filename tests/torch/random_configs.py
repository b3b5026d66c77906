#!/usr/bin/env python3
"""random_configs.py: PyTorch's figures for Transformer configurations drawn at
random over the whole flag space of build/workload --arch transformer|encoder,
and for C24's sharded configurations over build/sharded_model's
(issue 22: exact beyond the fixtures, not only on the configurations tuned).

    python3 tests/torch/random_configs.py --list [--n N] [--seed S] [--c24]
    python3 tests/torch/random_configs.py OUTDIR [--n N] [--seed S] [--steps K]
    python3 tests/torch/random_configs.py OUTDIR --c24 [--n N] [--seed S] [--steps K]

draws N configurations with a seeded generator (the same N and seed give the
same draws anywhere, with the standard library alone), writes them to
OUTDIR/drawn.txt and runs tests/torch/transformer_reference.py over them
(each in a fresh process, no trace) on the GPU machine. Copy OUTDIR's files
into tests/fixtures/random_transformer/; make test replays every drawn
configuration with build/workload --model-only and compares each step's peak
and end-of-step allocated bytes (tests/scripts/test_random_configs.sh).

The space: architecture; d_model = heads x head size (heads 1, 2, 3, 4, 6, 8;
head sizes 8..128 in multiples of 8, the ones the model takes: a head size
that sends PyTorch to its math attention is refused by build/workload, not
modelled); 1-3 encoder and 1-2 decoder layers;
ff 8..512; dropout 0, 0.1 or 0.3; relu or gelu; post- or pre-norm;
batch-first or not; causal (encoder only); sequence 1..128 and micro-batch
1..16 with accumulation 1, 2 or 4; sgd, momentum, adam or adamw; fp32, fp16
or bf16; checkpointing on or off. Sizes stay small so that N configurations
run in a few minutes on one GPU.

With --c24 (two GPUs): the wrapper (ddp, zero2, fsdp: taken in turn, so each
gets a third of the draws), world 2, 2-8 Linear layers, input, hidden and
output widths from 1 to 4096 (half of them any integer, log-uniform, so
mostly odd; half multiples of 64), batch 1..4096 (log-uniform) and sgd,
momentum or adam; tests/torch/fsdp_reference.py records them (a fresh
torchrun per configuration) into OUTDIR, and tests/scripts/test_sharded_fixtures.sh
replays them with build/sharded_model.

With --fsdp-tfm (issue 30 item 7; --gpus N, default 2): nn.TransformerEncoder
under FSDP2 (fully_shard on each layer, then on the whole), the wrapper in
turn (fsdp, zero2), d_model 64..1024 (heads 1..16, a head size that is a
multiple of 4 up to 256: memory-efficient attention's), 1-6 layers, ff
16..4096 (log-uniform, any integer, so mostly odd: padded shards), sequence
16..512 (log-uniform), batch 1..16 a rank, relu or gelu, post- or pre-norm,
batch-first or not, dropout 0, Adam, fp32;
tests/torch/fsdp_transformer_reference.py records them into OUTDIR and
tests/scripts/test_fsdp_transformer_fixtures.sh replays them with
build/sharded_model --model transformer.
"""
import argparse
import math
import os
import random
import subprocess
import sys

DEFAULT_N = 40
DEFAULT_SEED = 22
DEFAULT_STEPS = 4


def draw(n, seed):
    """N (name, build/workload flags) pairs from a generator seeded with seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        arch = rng.choice(("transformer", "encoder"))
        heads = rng.choice((1, 2, 3, 4, 6, 8))
        hd = rng.choice((8, 16, 24, 32, 40, 64, 72, 128))
        d = heads * hd
        enc = rng.randint(1, 3)
        dec = rng.randint(1, 2)
        ff = rng.randint(8, 512)
        dropout = rng.choice(("0", "0.1", "0.3"))
        act = rng.choice(("relu", "gelu"))
        norm_first = rng.random() < 0.5
        batch_first = rng.random() < 0.5
        causal = arch == "encoder" and rng.random() < 0.4
        seq = rng.choice((1, 2, 5, 16, 31, 64, 100, 128))
        accum = rng.choice((1, 1, 2, 4))
        batch = accum * rng.randint(1, 16)
        opt = rng.choice(("sgd", "momentum", "adam", "adamw"))
        prec = rng.choice(("fp32", "fp16", "bf16"))
        ckpt = rng.random() < 0.3
        flags = ["--arch", arch, "--d-model", str(d), "--heads", str(heads), "--enc-layers", str(enc)]
        if arch == "transformer":
            flags += ["--dec-layers", str(dec)]
        flags += ["--ff", str(ff), "--dropout", dropout, "--activation", act, "--seq", str(seq),
                  "--batch", str(batch), "--accum", str(accum), "--optimizer", opt, "--precision", prec]
        flags += (["--norm-first"] if norm_first else []) + (["--batch-first"] if batch_first else [])
        flags += (["--causal"] if causal else []) + (["--checkpoint"] if ckpt else [])
        out.append(("r%02d_%s_%s_%s" % (i, "tfm" if arch == "transformer" else "enc", opt, prec),
                    " ".join(flags)))
    return out


C24_MODES = ("ddp", "zero2", "fsdp")
C24_DEFAULT_N = 24
C24_DEFAULT_SEED = 24


def c24_width(rng):
    """A width in 1..4096: half any integer (log-uniform), half a multiple of 64."""
    if rng.random() < 0.5:
        return max(1, min(4096, int(round(2 ** rng.uniform(0, 12)))))
    return 64 * rng.randint(1, 64)


def draw_c24(n, seed):
    """N (name, build/sharded_model flags without --world/--steps) pairs."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        mode = C24_MODES[i % len(C24_MODES)]
        layers = rng.randint(2, 8)
        d_in, width, d_out = c24_width(rng), c24_width(rng), c24_width(rng)
        batch = max(1, min(4096, int(round(2 ** rng.uniform(0, 12)))))
        opt = rng.choice(("sgd", "momentum", "adam"))
        out.append(("s%02d_%s_%s" % (i, mode, opt),
                    "--mode %s --layers %d --in %d --width %d --out %d --batch %d --optimizer %s"
                    % (mode, layers, d_in, width, d_out, batch, opt)))
    return out


FSDP_TFM_MODES = ("fsdp", "zero2")
FSDP_TFM_DEFAULT_N = 8
FSDP_TFM_DEFAULT_SEED = 307


def log_int(rng, lo, hi):
    """A whole number in lo..hi, log-uniform."""
    return max(lo, min(hi, int(round(2 ** rng.uniform(math.log2(lo), math.log2(hi))))))


def draw_fsdp_tfm(n, seed):
    """N (name, build/sharded_model --model transformer flags without
    --world/--steps) pairs: nn.TransformerEncoder under FSDP2."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        mode = FSDP_TFM_MODES[i % len(FSDP_TFM_MODES)]
        heads = rng.randint(1, 16)
        lo, hi = max(4, -(-64 // (4 * heads)) * 4), min(256, 1024 // (4 * heads) * 4)
        hd = 4 * int(round(log_int(rng, lo, hi) / 4.0))
        d = heads * max(lo, min(hi, hd))
        layers = rng.randint(1, 6)
        ff = log_int(rng, 16, 4096)
        seq = log_int(rng, 16, 512)
        batch = rng.randint(1, 16)
        act = rng.choice(("relu", "gelu"))
        norm_first = rng.random() < 0.5
        batch_first = rng.random() < 0.5
        flags = ["--mode", mode, "--d-model", str(d), "--heads", str(heads), "--enc-layers", str(layers),
                 "--ff", str(ff), "--dropout", "0", "--activation", act, "--seq", str(seq),
                 "--batch", str(batch), "--optimizer", "adam"]
        flags += (["--norm-first"] if norm_first else []) + (["--batch-first"] if batch_first else [])
        out.append(("t%02d_%s_d%dh%dl%d" % (i, mode, d, heads, layers), " ".join(flags)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", help="folder for drawn.txt and transformer_reference.py's files")
    ap.add_argument("--n", type=int, default=DEFAULT_N, help="configurations to draw")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the generator's seed")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="steps per configuration")
    ap.add_argument("--list", action="store_true", help="print the draws and exit")
    ap.add_argument("--c24", action="store_true",
                    help="draw C24's sharded configurations (default --n %d --seed %d; two GPUs)"
                         % (C24_DEFAULT_N, C24_DEFAULT_SEED))
    ap.add_argument("--fsdp-tfm", action="store_true",
                    help="draw nn.TransformerEncoder under FSDP2 (default --n %d --seed %d; --gpus GPUs)"
                         % (FSDP_TFM_DEFAULT_N, FSDP_TFM_DEFAULT_SEED))
    ap.add_argument("--gpus", type=int, default=2, help="with --fsdp-tfm: the world size")
    ap.set_defaults(n=None, seed=None)
    a = ap.parse_args()
    if a.c24 and a.fsdp_tfm:
        ap.error("--c24 and --fsdp-tfm draw different things: give one")
    if a.n is None:
        a.n = C24_DEFAULT_N if a.c24 else FSDP_TFM_DEFAULT_N if a.fsdp_tfm else DEFAULT_N
    if a.seed is None:
        a.seed = C24_DEFAULT_SEED if a.c24 else FSDP_TFM_DEFAULT_SEED if a.fsdp_tfm else DEFAULT_SEED
    if a.n < 1 or a.steps < 1 or a.gpus < 1:
        ap.error("--n, --steps and --gpus must be >= 1")
    drawn = (draw_c24(a.n, a.seed) if a.c24 else draw_fsdp_tfm(a.n, a.seed) if a.fsdp_tfm
             else draw(a.n, a.seed))
    if a.list:
        for name, flags in drawn:
            print("%s\t%s" % (name, flags))
        return 0
    if not a.outdir:
        ap.error("give OUTDIR (or --list)")
    os.makedirs(a.outdir, exist_ok=True)
    path = os.path.join(a.outdir, "drawn.txt")
    with open(path, "w") as f:
        f.write("# name<TAB>build/%s flags; drawn by tests/torch/random_configs.py%s --n %d --seed %d\n"
                % ("sharded_model" if a.c24 or a.fsdp_tfm else "workload",
                   " --c24" if a.c24 else " --fsdp-tfm" if a.fsdp_tfm else "", a.n, a.seed))
        for name, flags in drawn:
            f.write("%s\t%s\n" % (name, flags))
    here = os.path.dirname(os.path.abspath(__file__))
    if a.fsdp_tfm:
        return subprocess.call([sys.executable, os.path.join(here, "fsdp_transformer_reference.py"),
                                a.outdir, "--configs", path, "--steps", str(a.steps), "--gpus", str(a.gpus)])
    if a.c24:
        return subprocess.call([sys.executable, os.path.join(here, "fsdp_reference.py"), a.outdir,
                                "--configs", path, "--steps", str(a.steps)])
    return subprocess.call([sys.executable, os.path.join(here, "transformer_reference.py"), a.outdir,
                            "--configs", path, "--no-trace", "--steps", str(a.steps)])


if __name__ == "__main__":
    sys.exit(main())
