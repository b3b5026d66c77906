#!/usr/bin/env python3
"""make_snapshots.py: record PyTorch memory snapshots of real training runs,
and PyTorch's own memory_stats() for the same runs under each what-if
allocator setting and under two memory limits, as fixtures for
tests/scripts/test_snapshot_fixtures.sh (tests/fixtures/snapshots/README.md).

    python3 tests/torch/make_snapshots.py OUTDIR [RUN ...]

RUN picks runs (default: the first three):
  cnn     an image classifier: torchvision's resnet18 (random weights, no
          download), or where torchvision is missing a hand-written CNN of
          torch.nn layers; SGD with momentum, batch 32 of 3x224x224.
  lm      a causal language model under autocast (bf16): transformers'
          GPT2LMHeadModel from a small GPT2Config (random weights, no
          download), or where transformers is missing a GPT-like model of
          torch.nn layers; AdamW, batch 8 of 512 tokens.
  varlen  the GPT-like torch.nn model with a sequence length drawn anew each
          step (64..1024 tokens, fixed seed), which fragments the cache.
  cnn_mid, lm_mid, varlen_mid
          the same runs under max_split_size_mb (MID below) from the start,
          with the recording begun mid-training, after WARM steps: the
          snapshot starts with segments and live blocks from before it, as a
          user's snapshot of a long run does. Each is recorded twice: with
          no limit (RUN), and under a memory fraction between peak allocated
          and peak reserved of that run (RUN_limit), so that the recorded
          steps retry and give cached oversize blocks back. memory_stats()
          is read as the recording's own: peaks from reset_peak_memory_stats()
          at its start, retries and OOMs counted from there. One row each,
          `default`: the run as recorded, which the replay must equal exactly.

Needs a CUDA GPU and PyTorch (written against 2.11). Each run goes in fresh
Python processes (PYTORCH_CUDA_ALLOC_CONF is read when CUDA initialises, and
the memory fraction is per process):
  1. default settings, with history recording (context=None: no stack
     frames, hence no machine paths in the file), then _dump_snapshot, gzipped
     to OUTDIR/RUN.pickle.gz; keeps memory_stats();
  2. without recording, once under each what-if setting (expandable_segments,
     max_split_size_mb:64, roundup_power2_divisions:4);
  3. under a memory limit it fits with retries (the lowest of 25, 50, 75,
     90, 97 and 100% of the way from peak allocated to peak reserved that fits), again with
     garbage_collection_threshold:0.6 (which acts only under a limit), and
     under a limit it runs out of memory at (90% of peak allocated: it cannot
     fit, since that many bytes are live at once).
An OutOfMemoryError is caught and recorded as the outcome `oom` with the
stats read after it. Writes OUTDIR/RUN.expected.tsv and OUTDIR/RUN.meta
(versions, GPU, which model was used and why); prints one line per process.
Exits 1 if a run failed, 2 on bad arguments.
"""
import gzip
import json
import os
import random
import subprocess
import sys
import time

RUNS = ("cnn", "lm", "varlen")
# Mid-training runs: the base run and the PYTORCH_CUDA_ALLOC_CONF it runs under.
MID = {"cnn_mid": ("cnn", "max_split_size_mb:64"), "lm_mid": ("lm", "max_split_size_mb:64"),
       "varlen_mid": ("varlen", "max_split_size_mb:32")}
WARM = 3  # steps before the recording starts (mid-training runs)
STEPS = 6
SEED = 1234
WHATIF = [("expandable_segments", "expandable_segments:True"),
          ("max_split_64MiB", "max_split_size_mb:64"),
          ("roundup_power2_4", "roundup_power2_divisions:4")]
HEADER = ("setting\tconf\tlimit_bytes\toutcome\tpeak_allocated\tpeak_reserved"
          "\tnum_alloc_retries\tnum_ooms")


# ------------------------------------------------------------------ models
def hand_cnn(torch):
    nn = torch.nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True), nn.MaxPool2d(2))
    return nn.Sequential(block(3, 64), block(64, 128), block(128, 256), block(256, 512),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))


def hand_gpt(torch, vocab=8192, dim=512, layers=6, heads=8, max_len=1024):
    """A GPT-like decoder of torch.nn layers: token and position embeddings,
    pre-norm causal transformer blocks, a tied output head."""
    nn = torch.nn

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, dim)
            self.pos = nn.Embedding(max_len, dim)
            layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, ids):
            t = ids.shape[1]
            x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
            mask = nn.Transformer.generate_square_subsequent_mask(t, device=ids.device)
            return self.head(self.norm(self.blocks(x, mask=mask, is_causal=True)))
    return GPT(), vocab


def build(torch, run):
    """Returns (model, kind, note): kind names the model actually used."""
    if run == "cnn":
        try:
            import torchvision
            return torchvision.models.resnet18(weights=None), "torchvision resnet18", \
                f"torchvision {torchvision.__version__}"
        except ImportError as e:
            return hand_cnn(torch), "hand-written CNN (torch.nn)", f"torchvision missing: {e}"
    if run == "lm":
        try:
            import transformers
            cfg = transformers.GPT2Config(vocab_size=8192, n_positions=1024, n_embd=512, n_layer=6,
                                          n_head=8, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
            return transformers.GPT2LMHeadModel(cfg), "transformers GPT2LMHeadModel (small config)", \
                f"transformers {transformers.__version__}"
        except ImportError as e:
            return hand_gpt(torch)[0], "GPT-like model (torch.nn)", f"transformers missing: {e}"
    return hand_gpt(torch)[0], "GPT-like model (torch.nn), variable sequence length", ""


def train(torch, run, model, dev, warm=0, start=None):
    """warm + STEPS training steps, start() called before step warm (where
    given); every tensor comes from the seeded generator on the device, so
    each process requests the same sizes in the same order."""
    g = torch.Generator(device=dev).manual_seed(SEED)
    if run == "cnn":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        for i in range(warm + STEPS):
            if start and i == warm:
                start()
            x = torch.randn(32, 3, 224, 224, device=dev, generator=g)
            y = torch.randint(0, 1000, (32,), device=dev, generator=g)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del x, y, loss
        return
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    n = warm + STEPS
    lengths = random.Random(SEED).choices(range(64, 1025, 32), k=n) if run == "varlen" else [512] * n
    batch = 8
    for i, t in enumerate(lengths):
        if start and i == warm:
            start()
        ids = torch.randint(0, 8192, (batch, t), device=dev, generator=g)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=(run == "lm")):
            out = model(ids)
            logits = out.logits if hasattr(out, "logits") else out
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                                     ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del ids, out, logits, loss


# ------------------------------------------------------------------ one process
def child(run, setting, limit, record, outdir):
    """One process: run (or a mid-training run, MID) under the environment's
    PYTORCH_CUDA_ALLOC_CONF; prints its memory_stats() as one JSON line."""
    base, mid = MID[run][0] if run in MID else run, run in MID
    import torch
    dev = torch.device("cuda", 0)
    torch.backends.cudnn.benchmark = False   # benchmark mode sizes workspaces by timing: not repeatable
    torch.manual_seed(SEED)
    total = torch.cuda.get_device_properties(dev).total_memory
    limit_bytes = ""
    if limit:
        fraction = limit / total
        torch.cuda.set_per_process_memory_fraction(fraction, dev)
        limit_bytes = int(fraction * total)     # setMemoryFraction: static_cast<size_t>(fraction * total)
    before = {}  # memory_stats() where the recording starts (mid-training runs)

    def start():
        torch.cuda.synchronize(dev)
        before.update(torch.cuda.memory_stats(dev))
        torch.cuda.reset_peak_memory_stats(dev)
        if record:
            torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                                     max_entries=10_000_000)
    if not mid:
        start()
    outcome = "fits"
    model, kind, note = build(torch, base)
    try:
        model = model.to(dev)
        train(torch, base, model, dev, WARM if mid else 0, start if mid else None)
        torch.cuda.synchronize(dev)
    except torch.OutOfMemoryError:
        outcome = "oom"
    s = torch.cuda.memory_stats(dev)
    if not before:  # out of memory before the recording began
        raise SystemExit(f"{run}: out of memory before step {WARM}, where the recording was to start")
    whole = dict(whole_peak_allocated=max(s.get("allocated_bytes.all.peak", 0),
                                          before.get("allocated_bytes.all.peak", 0)),
                 whole_peak_reserved=max(s.get("reserved_bytes.all.peak", 0),
                                         before.get("reserved_bytes.all.peak", 0)))
    if record:
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        name = f"{run}_limit" if limit else run  # a mid-training run recorded under a limit
        tmp = os.path.join(outdir, f".{name}.pickle.gz.tmp")
        import pickle
        with gzip.open(tmp, "wb") as f:
            pickle.dump(snap, f)
        os.replace(tmp, os.path.join(outdir, f"{name}.pickle.gz"))
    print(json.dumps(dict(
        run=run, setting=setting, conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        limit_bytes=limit_bytes, outcome=outcome,
        peak_allocated=s.get("allocated_bytes.all.peak", 0), peak_reserved=s.get("reserved_bytes.all.peak", 0),
        num_alloc_retries=s.get("num_alloc_retries", 0) - before.get("num_alloc_retries", 0),
        num_ooms=s.get("num_ooms", 0) - before.get("num_ooms", 0), **whole,
        model=kind, note=note, torch=torch.__version__, cuda=torch.version.cuda,
        gpu=torch.cuda.get_device_name(dev), total_memory=total)))
    return 0


def spawn(run, setting, conf, limit, record, outdir):
    env = dict(os.environ)
    env.pop("PYTORCH_ALLOC_CONF", None)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    cmd = [sys.executable, os.path.abspath(__file__), "--child", run, setting, str(limit or 0),
           "1" if record else "0", outdir]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{run} {setting}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"{run:7s} {setting:20s} {r['outcome']:4s} peak allocated {r['peak_allocated']} "
          f"reserved {r['peak_reserved']} retries {r['num_alloc_retries']} ({time.monotonic() - t0:.1f} s)",
          flush=True)
    return r


def record_run(run, outdir):
    rows = [spawn(run, "default", "", 0, True, outdir)]
    base = rows[0]
    if base["outcome"] != "fits":
        raise RuntimeError(f"{run}: the default run does not fit this GPU")
    for name, conf in WHATIF:
        rows.append(spawn(run, name, conf, 0, False, outdir))
    a, r = base["peak_allocated"], base["peak_reserved"]
    # A limit it fits with retries: the lowest of a few points between peak
    # allocated and peak reserved that fits. The points thicken towards peak
    # reserved: lm (a GPT-2 under autocast) fits only above 0.8 of that gap,
    # with retries (the allocator model's replay of its snapshot said so
    # before PyTorch ran it), and at 1.0 fits without any.
    fit = None
    for f in (0.25, 0.5, 0.75, 0.9, 0.97, 1.0):
        lim = a + int(f * (r - a))
        t = spawn(run, "limit_fits", "", lim, False, outdir)
        if t["outcome"] == "fits":
            fit = t
            break
    if fit is None:
        raise RuntimeError(f"{run}: does not fit even a limit of its own peak reserved")
    rows.append(fit)
    rows.append(spawn(run, "gc_0.6_limit", "garbage_collection_threshold:0.6", fit["limit_bytes"], False, outdir))
    rows.append(spawn(run, "limit_oom", "", int(0.9 * a), False, outdir))
    if rows[-1]["outcome"] != "oom":
        raise RuntimeError(f"{run}: a limit of 90% of peak allocated did not run out of memory")
    write_fixture(outdir, run, rows, base)


def write_fixture(outdir, name, rows, base, extra=""):
    """NAME.expected.tsv (rows) and NAME.meta (base's versions, extra lines)."""
    with open(os.path.join(outdir, f".{name}.expected.tsv.tmp"), "w") as f:
        f.write(HEADER + "\n")
        for x in rows:
            f.write("\t".join(str(x[k]) for k in ("setting", "conf", "limit_bytes", "outcome", "peak_allocated",
                                                  "peak_reserved", "num_alloc_retries", "num_ooms")) + "\n")
    os.replace(os.path.join(outdir, f".{name}.expected.tsv.tmp"), os.path.join(outdir, f"{name}.expected.tsv"))
    with open(os.path.join(outdir, f"{name}.meta"), "w") as f:
        for k in ("model", "note", "torch", "cuda", "gpu", "total_memory"):
            f.write(f"{k}: {base[k]}\n")
        f.write(f"steps: {STEPS}\nseed: {SEED}\n{extra}recorded: "
                f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
    print(f"{name}: model used: {base['model']}{' (' + base['note'] + ')' if base['note'] else ''}", flush=True)


def record_mid(run, outdir):
    """A mid-training run (MID): RUN without a limit, then RUN_limit under the
    lowest of a few limits between the whole run's peak allocated and peak
    reserved at which the recorded steps retry (else the lowest that runs
    into the recording at all)."""
    conf = MID[run][1]
    extra = f"conf: {conf}\nrecording starts after: {WARM} steps\n"
    free = spawn(run, "default", conf, 0, True, outdir)
    if free["outcome"] != "fits":
        raise RuntimeError(f"{run}: does not fit this GPU")
    write_fixture(outdir, run, [free], free, extra)
    a, r = free["whole_peak_allocated"], free["whole_peak_reserved"]
    chosen, last = None, None  # (limit, row): the one to keep; the last recorded
    for f in (0.25, 0.5, 0.75, 0.9):
        lim = a + int(f * (r - a))
        try:
            last = (lim, spawn(run, "default", conf, lim, True, outdir))
        except RuntimeError as e:  # out of memory before the recording began
            print(f"{run}: limit at {f:.2f} of the way: {e}", flush=True)
            continue
        chosen = chosen or last
        if last[1]["num_alloc_retries"] > 0:
            chosen = last
            break
    if chosen is None:
        raise RuntimeError(f"{run}: no limit between peak allocated and peak reserved reaches the recording")
    if chosen is not last:  # the snapshot on disk is the last one's: record the chosen one again
        chosen = (chosen[0], spawn(run, "default", conf, chosen[0], True, outdir))
    chosen = chosen[1]
    write_fixture(outdir, f"{run}_limit", [chosen], chosen, extra)


def main(argv):
    if argv and argv[0] == "--child":
        run, setting, limit, record, outdir = argv[1:6]
        return child(run, setting, int(limit), record == "1", outdir)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    outdir, names = argv[0], argv[1:] or list(RUNS)
    bad = [n for n in names if n not in RUNS and n not in MID]
    if bad:
        print(f"make_snapshots: unknown run {bad[0]} (runs: {', '.join(RUNS + tuple(MID))})", file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    failed = 0
    for run in names:
        try:
            (record_mid if run in MID else record_run)(run, outdir)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            print(f"make_snapshots: {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
