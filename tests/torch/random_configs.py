#!/usr/bin/env python3
"""random_configs.py: PyTorch's figures for Transformer configurations drawn at
random over the whole flag space of build/workload --arch transformer|encoder,
and for C24's sharded configurations over build/sharded_model's
(issue 22: exact beyond the fixtures, not only on the configurations tuned).

    python3 tests/torch/random_configs.py --list [--n N] [--seed S] [--c24]
    python3 tests/torch/random_configs.py OUTDIR [--n N] [--seed S] [--steps K]
    python3 tests/torch/random_configs.py OUTDIR --c24 [--n N] [--seed S] [--steps K]
    python3 tests/torch/random_configs.py OUTDIR --tfm-real [--part K/N] [--steps K]
    python3 tests/torch/random_configs.py --tfm-real --list | --estimates [--part K/N]

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

With --tfm-real (issue 32 item 2; default --n 64 --seed 3202; one GPU): the
Transformer at real sizes, over build/workload's whole flag space: --arch
transformer or encoder; d_model = heads x head size from 64 to 1024 (3 draws
in 10 near 256, 512, 768 or 1024, the others near a log-uniform width), the
head size 16, 32, 64 or 128 (the GPU's attention kernels') in 9 draws of 10,
otherwise one that only --model-only takes (8, 24, 40, 48, 80, 96, 160, 192
or 256; in fp32 also 12, 20, 36 or 44), the name then ending _hdN; 1-12
encoder layers (and 1-12 decoder layers); ff 4 x d_model (4 in 10), 2048 (1
in 10) or any integer from d_model / 2 to 4 x d_model (at most 4096,
log-uniform); sequence 16..2048 (log-uniform); batch 1..64 (log-uniform
micro-batches) with accumulation 1-4 dividing it; sgd, momentum, adam or
adamw; fp32, fp16 and bf16 in turn (draw i the (i mod 3)-th) and --build
device or host in turn by threes (every precision with both builds in each
six draws); dropout 0 or 0.1; relu or gelu; pre- or post-norm; batch-first
or not; causal (encoder only); checkpointing on or off. Every eighth draw
(i = 0, 8, ...) is an encoder with --checkpoint, --causal and --norm-first
(in fp32, bf16 and fp16 in turn). A draw whose estimate (tfm_real_estimate,
generous: weights, gradients, the optimizer's state and temporaries,
autocast's copies, a micro-batch's activations; the attention kernels are
fused, no L x L scores) exceeds TFM_REAL_MAX_BYTES (40 GB) or
TFM_REAL_MAX_FLOP (2 TFLOP a step) has its micro-batch halved, then its
accumulation dropped, then its layers halved until it fits, so that each
runs its steps in well under a second on an H100 with room to spare. The
names are xNN_ARCH_OPTIMIZER_PRECISION_BUILD[_hdN]. Record them in parts,
each within the GPU machine's ten minutes a command (--part K/N: the K-th of
N slices of the draws; drawn.txt holds them all, configs.txt and meta.txt
the last part's), into one OUTDIR:

    python3 tests/torch/random_configs.py OUTDIR --tfm-real --part 1/3   (then 2/3, 3/3)

and copy OUTDIR's drawn.txt, NAME.csv and NAME.meta into
tests/fixtures/random_tfm_real/: tests/scripts/test_random_configs.sh checks
the draws (Cfg's parse, build/workload's rules, coverage, each run through
--model-only within its estimate) and replays what is recorded there.
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


TFM_REAL_DEFAULT_N = 64
TFM_REAL_DEFAULT_SEED = 3202
TFM_REAL_MAX_BYTES = 40 * 10 ** 9      # the estimate's bound: half an H100's 80 GB
TFM_REAL_MAX_FLOP = 2e12               # a step's: 4 steps in well under a second of math
TFM_REAL_GPU_HEAD_SIZES = (16, 32, 64, 128)          # the GPU's attention kernels' (tfm_attn_supported)
TFM_REAL_OTHER_HEAD_SIZES = (8, 24, 40, 48, 80, 96, 160, 192, 256)   # multiples of 8 up to 256
TFM_REAL_OTHER_FP32_HEAD_SIZES = (12, 20, 36, 44)    # multiples of 4 only: fp32's (memory-efficient)
TFM_REAL_PRECISIONS = ("fp32", "fp16", "bf16")
TFM_REAL_BUILDS = ("device", "host")


def tfm_params(arch, d, ff, enc, dec):
    """The parameter count, as mc_tfm_param_count (tfm_config.c)."""
    attn, ffn = 4 * d * d + 4 * d, 2 * d * ff + ff + d
    n = enc * (attn + ffn + 4 * d)
    if arch == "transformer":
        n += 2 * d + dec * (2 * attn + ffn + 6 * d) + 2 * d
    return n


def tfm_real_estimate(arch, d, heads, enc, dec, ff, seq, batch, accum, opt, prec, ckpt):
    """(parameters, bytes, FLOP a step): an upper estimate of a configuration's
    peak allocated memory and its arithmetic, both generous.

    bytes: 4 B a parameter for the weights and 4 for the gradients; Adam's
    two moments (8 B) or momentum's buffer (4 B); 8 B more for the foreach
    optimizer's temporaries; autocast's half copies (2 B); then the
    activations of one micro-batch: per token and layer (a decoder layer
    counts twice) (24 d + 5 ff) x 4 B (every saved tensor taken as fp32),
    or with --checkpoint the layer inputs (d x 4 B per layer) and one layer's
    whole activations; the attention kernels (memory-efficient in fp32,
    cuDNN or flash in half: build/workload refuses a head size that would
    send PyTorch to its math attention) keep only a log-sum-exp per head and
    query, no L x L scores; then 1 GB for cuBLAS's and cuDNN's workspaces and
    the allocator's rounding.

    FLOP: 6 x parameters x tokens (8 x with --checkpoint's recomputation)
    plus attention's 4 L^2 d a sequence forward, 3.5 times that with the
    backward (twice more with --checkpoint), per attention (a decoder layer
    has two)."""
    p = tfm_params(arch, d, ff, enc, dec)
    state = {"sgd": 0, "momentum": 4, "adam": 8, "adamw": 8}[opt]
    static = p * (4 + 4 + state + 8 + (2 if prec != "fp32" else 0))
    layer_units = enc + (2 * dec if arch == "transformer" else 0)
    tokens_micro = (batch // accum) * seq
    per_layer = tokens_micro * (24 * d + 5 * ff) * 4
    if ckpt:
        act = layer_units * tokens_micro * d * 4 + 2 * per_layer
    else:
        act = layer_units * per_layer
    act += 4 * tokens_micro * d * 4 + (batch // accum) * heads * seq * 4 * layer_units
    mem = static + act + 10 ** 9
    tokens = batch * seq
    attns = enc + (2 * dec if arch == "transformer" else 0)
    flop = (8 if ckpt else 6) * p * tokens + attns * batch * 4 * seq * seq * d * (5.5 if ckpt else 4.5)
    return p, mem, flop


def draw_tfm_real(n, seed):
    """N (name, build/workload flags) pairs: the Transformer at real sizes
    (issue 32 item 2), as the module docstring's --tfm-real says. Each
    draw's choices come in a fixed order from one generator seeded with
    seed; a draw over the bounds is shrunk (micro-batch, accumulation,
    layers), and only one that still does not fit is drawn again from the
    same generator, so the same N and seed give the same lines anywhere."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        prec = TFM_REAL_PRECISIONS[i % 3]
        build = TFM_REAL_BUILDS[(i // 3) % 2]
        forced = i % 8 == 0    # checkpointing, causal and pre-norm together
        while True:
            arch = "encoder" if forced else rng.choice(("transformer", "encoder"))
            if rng.random() < 0.9:
                hd, gpu = rng.choice(TFM_REAL_GPU_HEAD_SIZES), True
            else:
                hd = rng.choice(TFM_REAL_OTHER_HEAD_SIZES
                                + (TFM_REAL_OTHER_FP32_HEAD_SIZES if prec == "fp32" else ()))
                gpu = False
            lo, hi = -(-64 // hd), 1024 // hd       # heads: d_model from 64 to 1024
            if rng.random() < 0.3:   # a width of the usual models'
                want = rng.choice((256, 512, 768, 1024))
            else:
                want = 2 ** rng.uniform(math.log2(64), math.log2(1024))
            heads = max(lo, min(hi, int(round(want / hd))))
            d = heads * hd
            enc = rng.randint(1, 12)
            dec = rng.randint(1, 12) if arch == "transformer" else 0
            u = rng.random()
            ff = 4 * d if u < 0.4 else 2048 if u < 0.5 else log_int(rng, max(16, d // 2), min(4096, 4 * d))
            seq = log_int(rng, 16, 2048)
            accum = rng.choice((1, 1, 2, 3, 4))
            batch = accum * log_int(rng, 1, 64 // accum)
            opt = rng.choice(("sgd", "momentum", "adam", "adamw"))
            dropout = rng.choice(("0", "0.1"))
            act = rng.choice(("relu", "gelu"))
            norm_first = forced or rng.random() < 0.5
            batch_first = rng.random() < 0.5
            causal = forced or (arch == "encoder" and rng.random() < 0.4)
            ckpt = forced or rng.random() < 0.35
            # over the bounds: the micro-batch halved, then the accumulation
            # dropped (batch = accum = 1), then the layers halved
            while True:
                _, mem, flop = tfm_real_estimate(arch, d, heads, enc, dec, ff, seq, batch, accum, opt, prec,
                                                 ckpt)
                if mem <= TFM_REAL_MAX_BYTES and flop <= TFM_REAL_MAX_FLOP:
                    break
                if batch > accum:
                    batch = accum * (batch // accum // 2)
                elif accum > 1:
                    batch = accum = 1
                elif max(enc, dec) > 1:
                    enc, dec = max(1, enc // 2), max(1, dec // 2) if dec else 0
                else:
                    break
            if mem <= TFM_REAL_MAX_BYTES and flop <= TFM_REAL_MAX_FLOP:
                break
        flags = ["--arch", arch, "--d-model", str(d), "--heads", str(heads), "--enc-layers", str(enc)]
        if arch == "transformer":
            flags += ["--dec-layers", str(dec)]
        flags += ["--ff", str(ff), "--dropout", dropout, "--activation", act, "--seq", str(seq),
                  "--batch", str(batch), "--accum", str(accum), "--optimizer", opt, "--precision", prec,
                  "--build", build]
        flags += (["--norm-first"] if norm_first else []) + (["--batch-first"] if batch_first else [])
        flags += (["--causal"] if causal else []) + (["--checkpoint"] if ckpt else [])
        name = "x%02d_%s_%s_%s_%s" % (i, "tfm" if arch == "transformer" else "enc", opt, prec, build)
        out.append((name + ("" if gpu else "_hd%d" % hd), " ".join(flags)))
    return out


def tfm_real_estimate_flags(flags):
    """tfm_real_estimate of a --tfm-real line's flags: (parameters, bytes, FLOP)."""
    t = flags.split()
    v = {t[j]: t[j + 1] for j in range(len(t) - 1) if t[j].startswith("--") and not t[j + 1].startswith("--")}

    def num(k, dflt=0):
        return int(v.get(k, dflt))
    return tfm_real_estimate(v["--arch"], num("--d-model"), num("--heads"), num("--enc-layers"),
                             num("--dec-layers"), num("--ff"), num("--seq"), num("--batch"), num("--accum", 1),
                             v["--optimizer"], v["--precision"], "--checkpoint" in t)


def parse_part(text):
    """--part K/N: (K, N), 1 <= K <= N."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError("--part takes K/N, e.g. 1/3")
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError("--part K/N needs 1 <= K <= N")
    return k, n


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
    ap.add_argument("--tfm-real", action="store_true",
                    help="draw the Transformer at real sizes (default --n %d --seed %d; one GPU)"
                         % (TFM_REAL_DEFAULT_N, TFM_REAL_DEFAULT_SEED))
    ap.add_argument("--part", type=parse_part, metavar="K/N",
                    help="Transformer draws: list or run only the K-th of N slices of them (drawn.txt "
                         "still holds them all), so that each part fits one GPU command")
    ap.add_argument("--estimates", action="store_true",
                    help="with --tfm-real: print NAME, parameters, the estimated peak bytes and FLOP "
                         "a step, tab-separated, and exit")
    ap.set_defaults(n=None, seed=None)
    a = ap.parse_args()
    if a.c24 + a.fsdp_tfm + a.tfm_real > 1:
        ap.error("--c24, --fsdp-tfm and --tfm-real draw different things: give one")
    if a.part and (a.c24 or a.fsdp_tfm):
        ap.error("--part is for the Transformer draws (transformer_reference.py)")
    if a.estimates and not a.tfm_real:
        ap.error("--estimates needs --tfm-real")
    if a.n is None:
        a.n = (C24_DEFAULT_N if a.c24 else FSDP_TFM_DEFAULT_N if a.fsdp_tfm
               else TFM_REAL_DEFAULT_N if a.tfm_real else DEFAULT_N)
    if a.seed is None:
        a.seed = (C24_DEFAULT_SEED if a.c24 else FSDP_TFM_DEFAULT_SEED if a.fsdp_tfm
                  else TFM_REAL_DEFAULT_SEED if a.tfm_real else DEFAULT_SEED)
    if a.n < 1 or a.steps < 1 or a.gpus < 1:
        ap.error("--n, --steps and --gpus must be >= 1")
    drawn = (draw_c24(a.n, a.seed) if a.c24 else draw_fsdp_tfm(a.n, a.seed) if a.fsdp_tfm
             else draw_tfm_real(a.n, a.seed) if a.tfm_real else draw(a.n, a.seed))
    part = drawn
    if a.part:
        k, parts = a.part
        part = drawn[(k - 1) * len(drawn) // parts:k * len(drawn) // parts]
        if not part:
            ap.error("--part %d/%d of %d draws is empty" % (k, parts, len(drawn)))
    if a.estimates:
        for name, flags in part:
            p, mem, flop = tfm_real_estimate_flags(flags)
            print("%s\t%d\t%d\t%.4g" % (name, p, mem, flop))
        return 0
    if a.list:
        for name, flags in part:
            print("%s\t%s" % (name, flags))
        return 0
    if not a.outdir:
        ap.error("give OUTDIR (or --list)")
    os.makedirs(a.outdir, exist_ok=True)
    path = os.path.join(a.outdir, "drawn.txt")
    with open(path, "w") as f:
        f.write("# name<TAB>build/%s flags; drawn by tests/torch/random_configs.py%s --n %d --seed %d\n"
                % ("sharded_model" if a.c24 or a.fsdp_tfm else "workload",
                   " --c24" if a.c24 else " --fsdp-tfm" if a.fsdp_tfm else " --tfm-real" if a.tfm_real else "",
                   a.n, a.seed))
        for name, flags in drawn:
            f.write("%s\t%s\n" % (name, flags))
    here = os.path.dirname(os.path.abspath(__file__))
    if a.fsdp_tfm:
        return subprocess.call([sys.executable, os.path.join(here, "fsdp_transformer_reference.py"),
                                a.outdir, "--configs", path, "--steps", str(a.steps), "--gpus", str(a.gpus)])
    if a.c24:
        return subprocess.call([sys.executable, os.path.join(here, "fsdp_reference.py"), a.outdir,
                                "--configs", path, "--steps", str(a.steps)])
    only = ["--only", ",".join(name for name, _ in part)] if a.part else []
    return subprocess.call([sys.executable, os.path.join(here, "transformer_reference.py"), a.outdir,
                            "--configs", path, "--no-trace", "--steps", str(a.steps)] + only)


if __name__ == "__main__":
    sys.exit(main())
