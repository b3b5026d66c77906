#!/usr/bin/env python3
"""activation_offload.py: C23's measurement with PyTorch: the peak memory and
step time of training with the saved activations kept on the GPU or
offloaded to pinned host memory by saved-tensor hooks, beside
build/c23_activation_offload on the same shapes.

Transformer: tests/torch/transformer_reference.py's Training of seed 000's
nn.Transformer(d_model=256) (8 heads, 6+6 layers, ff 2048, dropout 0.1) on
(seq 64, batch B, 256), MSE, Adam, fp32, at B = 25, 50, 100 (--quick: 100),
the model the suite's equals to the byte: keep (no hooks); offload, its
forward under torch.autograd.graph.saved_tensors_hooks that copy every saved
CUDA tensor that is not a parameter (or a view of one) into a pinned tensor
and back with .to(device, non_blocking=True): save_on_cpu(pin_memory=True)'s
hooks with parameters skipped, the suite's policy (as
tests/torch/offload_reference.py's "offload"); and save_on_cpu itself
(torch.autograd.graph.save_on_cpu(pin_memory=True), parameters offloaded
too: what a user writes; no suite variant stands beside it). --warmup steps
(at least 2), then --repeats timed steps (CUDA events), the first of them
step 3, whose peak allocated is the suite's steady step's.
MLP: the suite's own step in PyTorch: L = 8 bias-free Linear layers of width
H = 2048 (--layers, --width) with ReLU between, MSE, SGD(lr 1e-3), fp32,
TF32 off, at B = 256, 512, 1024, 2048, 4096, 8192 (--quick 512, 4096): keep,
and offload_serial, its forward under the same hooks on the compute stream
(the suite's offload_serial is "as save_on_cpu(pin_memory=True) does").
--warmup steps (at least 2), --repeats timed steps (CUDA events; the peak of
the last). After the timed steps of every point, one more under
torch.profiler for the GPU's idle share. The suite's offload (copies on a
side stream, overlapped, one layer ahead) has no PyTorch idiom: not
measured. Between points the model is dropped and the cache emptied. The
Transformer at seed 000's batch (100, the verdict row's) is measured
whatever --budget-s is; then, while it lasts, the MLP's largest batch,
then the others.

Rows (the suite's variants, param batch): step_time, peak_allocated
(peak_reserved for the MLP), pcie_bytes (the hooks' bytes per step, D2H +
H2D) for offloaded variants; and against keep peak_ratio, peak_reduction,
slowdown (medians); gpu_idle_share. Summaries: per variant the peak change
and slowdown beside the suite's, and where PyTorch's peak allocated equals
the suite's; the verdict row: the Transformer's offload at seed 000's
batch, peak change and slowdown, the suite's and PyTorch's, and the regime
of PyTorch's steps.
The interface and the output: beside.py. Standard library and torch only.
"""
import sys
import types

import beside as b

CLAIM, KEY = "C23", "activation_offload"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
SEED_BATCH = 100
TFM_BATCHES, QUICK_TFM_BATCHES = [25, 50, 100], [100]
BATCHES, QUICK_BATCHES = [256, 512, 1024, 2048, 4096, 8192], [512, 4096]
TFM_SEQ, STEADY_STEP = 64, 3
# Seed 000's model as the seed builds it (on the host, then .cuda()), as C23's is.
TFM_FLAGS = "--arch transformer --d-model 256 --seq %d --batch %d --optimizer adam --precision fp32 --build host"
LR = 1e-3                          # offload_mlp.cu's SGD learning rate
NAME = "beside/" + KEY
# variant -> (model, hooks): the suite's variants, and save_on_cpu beside them
VARIANTS = {"transformer_keep": ("transformer", None), "transformer_offload": ("transformer", "offload"),
            "transformer_save_on_cpu": ("transformer", "save_on_cpu"),
            "keep": ("mlp", None), "offload_serial": ("mlp", "offload")}
KEEP_OF = {"transformer_offload": "transformer_keep", "transformer_save_on_cpu": "transformer_keep",
           "offload_serial": "keep"}


def extra(ap):
    ap.add_argument("--layers", type=int, default=8, help="the MLP's Linear layers (default 8)")
    ap.add_argument("--width", type=int, default=2048, help="the MLP's width H (default 2048)")


def points(args):
    """[(variant, batch)], in the suite's order (else the lists'); save_on_cpu
    after each of the suite's transformer_offload points."""
    out = []
    if args.suite:
        for v, param, value in b.suite_points(args.suite, "peak_allocated"):
            if param == "batch" and v in VARIANTS:
                out.append((v, int(value)))
                if v == "transformer_offload":
                    out.append(("transformer_save_on_cpu", int(value)))
        return out
    for B in QUICK_TFM_BATCHES if args.quick else TFM_BATCHES:
        out += [("transformer_keep", B), ("transformer_offload", B), ("transformer_save_on_cpu", B)]
    for B in QUICK_BATCHES if args.quick else BATCHES:
        out += [("keep", B), ("offload_serial", B)]
    return out


class Offload:
    """The hooks of one model: save_on_cpu(pin_memory=True)'s pack and unpack,
    parameters (and views of them) left on the device unless all; bytes
    counts what went D2H and came back H2D."""

    def __init__(self, torch, params, all_tensors):
        self.torch, self.all = torch, all_tensors
        self.params = {p.untyped_storage().data_ptr() for p in params}
        self.bytes = 0

    def pack(self, t):
        if not t.is_cuda or (not self.all and t.untyped_storage().data_ptr() in self.params):
            return (None, t)
        packed = self.torch.empty(t.size(), dtype=t.dtype, layout=t.layout, pin_memory=True)
        packed.copy_(t)
        self.bytes += t.numel() * t.element_size()
        return (t.device, packed)

    def unpack(self, p):
        device, t = p
        if device is None:
            return t
        self.bytes += t.numel() * t.element_size()
        return t.to(device, non_blocking=True)

    def hooks(self):
        if self.all:
            return self.torch.autograd.graph.save_on_cpu(pin_memory=True)
        return self.torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


class MlpStep:
    """The suite's C23 MLP step in PyTorch, with Training's interface
    (cfg.accum, step(loss_host)) for beside.train: fresh x, y; the forward
    (under the hooks, if any); MSE; backward; SGD; zero_grad(set_to_none)."""

    def __init__(self, torch, L, H, B, dev, hooks):
        import torch.nn.functional as F
        from torch import nn
        self.torch, self.F, self.B, self.H, self.dev = torch, F, B, H, dev
        mods = []
        for i in range(L):
            mods.append(nn.Linear(H, H, bias=False, device=dev))
            if i < L - 1:
                mods.append(nn.ReLU())
        self.model = nn.Sequential(*mods)
        self.opt = torch.optim.SGD(list(self.model.parameters()), lr=LR)
        self.cfg = types.SimpleNamespace(accum=1)
        self.off = Offload(torch, self.model.parameters(), False) if hooks else None

    def step(self, loss_host):
        torch = self.torch
        x = torch.randn(self.B, self.H, device=self.dev)
        y = torch.randn(self.B, self.H, device=self.dev)
        if self.off is None:
            out = self.model(x)
        else:
            with self.off.hooks():
                out = self.model(x)
        loss = self.F.mse_loss(out, y)
        loss.backward()
        loss_host[0].copy_(loss.detach(), non_blocking=True)
        del x, y, out, loss
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def transformer(torch, B, hooks, dev):
    """The reference Training of seed 000's Transformer at batch B, its
    forward under the hooks of `hooks` (None, "offload", "save_on_cpu")."""
    ref = b.reference_module("transformer_reference")
    tr = ref.Training(torch, ref.Cfg(TFM_FLAGS % (TFM_SEQ, B), 1), dev)
    tr.off = None
    if hooks:
        tr.off = Offload(torch, tr.model.parameters(), hooks == "save_on_cpu")
        plain = tr.forward

        def forward(src, tgt):
            with tr.off.hooks():
                return plain(src, tgt)
        tr.forward = forward
    return tr


def measure(torch, variant, B, args, dev):
    """(step times, peak allocated, peak reserved, bytes per step through the hooks or None, record)."""
    model, hooks = VARIANTS[variant]
    warm = max(args.warmup, STEADY_STEP - 1)
    key, make = training(torch, variant, B, args, dev)
    # Only a variant with hooks has bytes through them to read: keep asks
    # for no extra, so seed 000's Transformer at batch 100, which C07 and
    # C08 measured (profiled) in this process, is reused, not made again.
    rec = b.record(torch, key, make, warm, args.repeats, CLAIM,
                   profile=(variant, B) == ("transformer_keep", SEED_BATCH),
                   extra=(lambda tr: (tr.off.bytes, tr.off.all) if getattr(tr, "off", None) else None)
                   if hooks else None)
    n = len(rec["times"])
    pcie = rec["extra"][0] / float(n) if rec["extra"] and not rec["extra"][1] else None
    if model == "transformer":  # step 3's, the suite's steady step
        peak, reserved = rec["peaks"][STEADY_STEP - 1], rec["reserved"][STEADY_STEP - 1]
    else:
        peak, reserved = rec["peaks"][-1], rec["reserved"][-1]
    return b.timed(rec), peak, reserved, pcie, rec


def training(torch, variant, B, args, dev):
    """(the record's key, a maker of this point's training)."""
    model, hooks = VARIANTS[variant]
    if model == "transformer":
        ref = b.reference_module("transformer_reference")
        cfg = ref.Cfg(TFM_FLAGS % (TFM_SEQ, B), 1)
        key = (ref.__name__, tuple(sorted(vars(cfg).items()))) + ((hooks,) if hooks else ())
        return key, lambda: transformer(torch, B, hooks, dev)
    return ("c23_mlp", args.layers, args.width, B, hooks), lambda: MlpStep(torch, args.layers, args.width, B, dev,
                                                                           hooks)


def is_first(variant, B):
    """Seed 000's batch (the verdict row's): measured whatever the budget."""
    return VARIANTS[variant][0] == "transformer" and B == SEED_BATCH


def is_next(variant, B):
    """The MLP's largest batch: measured next, while the budget lasts."""
    return VARIANTS[variant][0] != "transformer" and B == max(BATCHES)


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, extra, argv)
    if not 2 <= args.layers <= 64 or not 64 <= args.width <= 16384:
        print("%s: --layers must be from 2 to 64 and --width from 64 to 16384" % NAME, file=sys.stderr)
        return 2
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    torch.backends.cuda.matmul.allow_tf32 = False  # the suite's cuBLAS without TF32
    dev = torch.device("cuda", args.device)
    pts = points(args)
    got = {}     # (variant, B) -> (median step time, peak allocated, record)
    peaks = []   # (what, PyTorch's peak, the suite's)
    order = sorted(pts, key=lambda p: 0 if is_first(*p) else 1 if is_next(*p) else 2)
    for variant, B in order:
        what = "%s B=%d" % (variant, B)
        if not args.budget.allows(first=is_first(variant, B)):
            out.skipped(variant, "batch", B, "peak_allocated", "bytes", what, args.budget.why())
            continue
        res = None
        try:
            res = measure(torch, variant, B, args, dev)
        except Exception as e:  # one point's failure is its row; the others go on
            out.failed(torch, variant, "batch", B, "peak_allocated", "bytes", what, e)
        if res is None:
            b.release(torch)
            continue
        times, peak, reserved, pcie, rec = res
        tfm = VARIANTS[variant][0] == "transformer"
        out.emit(variant, "batch", B, "step_time", "s", times, "ok",
                 b.shared_note(rec, "CUDA events around the step, after the warm-up"))
        out.value(variant, "batch", B, "peak_allocated", "bytes", peak,
                  "torch.cuda.max_memory_allocated of step 3" if tfm
                  else "torch.cuda.max_memory_allocated of the last measured step")
        if not tfm:
            out.value(variant, "batch", B, "peak_reserved", "bytes", reserved, "torch.cuda.max_memory_reserved")
        if pcie is not None:
            out.value(variant, "batch", B, "pcie_bytes", "bytes", pcie,
                      "bytes the hooks copied D2H + H2D per step (parameters left on the device)")
        out.idle(variant, "batch", B, rec)
        t = b.stats(times)["median"]
        got[(variant, B)] = (t, peak, rec)
        if variant != "transformer_save_on_cpu":
            peaks.append((what, peak, b.suite_median(args.suite, variant, "batch", B, "peak_allocated")))
        b.log(NAME, "%s: step %.3f ms, peak %d bytes", what, t * 1e3, peak)
        keep = got.get((KEEP_OF.get(variant), B))
        if keep:
            out.value(variant, "batch", B, "peak_ratio", "ratio", peak / keep[1], "steady peak allocated / keep's")
            out.value(variant, "batch", B, "peak_reduction", "bytes", keep[1] - peak, "keep's steady peak - this one's")
            out.value(variant, "batch", B, "slowdown", "ratio", t / keep[0], "median step time / keep's")
        out.flush()

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    descs = {"transformer_offload": "nn.Transformer(d_model=256) Adam fp32 seq 64, offload (parameters kept)",
             "transformer_save_on_cpu": "nn.Transformer(d_model=256), save_on_cpu(pin_memory=True) itself",
             "offload_serial": "MLP L=%d H=%d SGD fp32, offload_serial" % (args.layers, args.width)}
    for variant, desc in descs.items():
        Bs = [B for v, B in pts if v == variant and (v, B) in got and (KEEP_OF[v], B) in got]
        if not Bs:
            continue
        chg = [got[(variant, B)][1] / got[(KEEP_OF[variant], B)][1] - 1.0 for B in Bs]
        slow = [got[(variant, B)][0] / got[(KEEP_OF[variant], B)][0] for B in Bs]
        sv = "transformer_offload" if variant == "transformer_save_on_cpu" else variant
        s_chg = [b.suite_median(args.suite, sv, "batch", B, "peak_ratio") for B in Bs]
        s_chg = [None if x is None else x - 1.0 for x in s_chg]
        s_slow = [b.suite_median(args.suite, sv, "batch", B, "slowdown") for B in Bs]
        versus = "" if sv == variant else " (suite: its offload)"
        out.summary(head + "%s at B = %s%s: %s; %s" % (
            desc, ", ".join(str(B) for B in Bs), versus,
            b.beside("peak vs keep", chg, s_chg, b.signed_pct, have),
            b.beside("slowdown", slow, s_slow, b.ratio, have)))
        head = ""
    out.peaks(peaks)
    keep, off = got.get(("transformer_keep", SEED_BATCH)), got.get(("transformer_offload", SEED_BATCH))
    if keep and off:
        s_ratio = b.suite_median(args.suite, "transformer_offload", "batch", SEED_BATCH, "peak_ratio")
        s_slow = b.suite_median(args.suite, "transformer_offload", "batch", SEED_BATCH, "slowdown")
        slow, lo, hi, _, _, how = b.compare_steps(
            torch, NAME, training(torch, "transformer_offload", SEED_BATCH, args, dev)[1],
            training(torch, "transformer_keep", SEED_BATCH, args, dev)[1], max(args.warmup, STEADY_STEP - 1),
            off[2], keep[2])
        text = "Transformer offload at B=%d: peak %s, slowdown %s (%s)" % (
            SEED_BATCH,
            ("%+.0f%% suite, %+.0f%% PyTorch" % (100 * (s_ratio - 1), 100 * (off[1] / keep[1] - 1)))
            if s_ratio is not None else "%+.0f%% PyTorch" % (100 * (off[1] / keep[1] - 1)),
            ("%.2fx suite, %s PyTorch" % (s_slow, b.with_spread(slow, lo, hi, lambda x: "%.2fx" % x))) if s_slow is not None
            else "%s PyTorch" % b.with_spread(slow, lo, hi, lambda x: "%.2fx" % x), how)
        clause = b.regime_clause(keep[2].get("idle"), "PyTorch's step without offload")
        out.verdict(text + ("; " + clause if clause else "") + ".")
    out.close(len(pts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
