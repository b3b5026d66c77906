#!/usr/bin/env python3
"""no_grad_eval.py: C27's measurement with PyTorch: one forward pass of each
workload in train() with autograd, train() under no_grad, eval() under
no_grad and eval() under inference_mode; its peak allocated, what is left
when the model returns and after, and its time, beside build/c27_no_grad_eval
on the same models and batches.

The models, inputs and modes are tests/torch/no_grad_reference.py's own
(imported: build, inputs_of, counting): the MLP (L=8, in = width = out =
1024; grad and no_grad only) at B = 256, 1024, 4096, 16384, seed 000's
nn.Transformer(d_model=256) (src, tgt of (64, B, 256)) at B = 25, 100 and the
batch_first encoder (4 layers of d_model 512, src (B, 128, 512)) at B = 16,
64 (--quick: 256, 4096; 100; 16; the suite's points when its CSV is given).
Per point a fresh model (torch.manual_seed(0)), as no_grad_reference.py
makes it, and its first forward, as it measures it (peak reset before the
inputs; max_memory_allocated over the inputs' randn and the forward;
memory_allocated before, when the model returns and after del out and the
inputs; the output's bytes; the fast paths' calls); then --warmup and
--repeats forwards, each alone: CUDA events around the inputs' randn ...
model(...), as the suite times them; then one more under torch.profiler for
the GPU's idle share. Between points the model is dropped and the cache
emptied (no_grad_reference.py runs each in a fresh process: its cuBLAS
workspaces are made by its first GEMM, here by an earlier point's, so the
peaks here can be short of its by the workspaces: the note of the peaks row
says how many bytes PyTorch's allocator held before the inputs).
Each workload's largest batch is measured first; with --budget-s the others
only while it lasts.

Rows (variant pytorch:<workload>/<mode>, param batch): peak_allocated,
allocated_before, allocated_out, allocated_end, output_bytes,
fast_path_layers, fast_path_mha, peak_reserved, forward_time (the timed
forwards), gpu_idle_share; for pytorch:<workload>/<mode>_vs_grad peak_ratio
and peak_saving (1 - peak / grad's). Summaries: per workload the
evaluation's saving (the MLP's no_grad, the others' eval() under no_grad,
the suite's verdict's) beside the suite's, and where PyTorch's peak
allocated equals the suite's; the verdict row: the saving at each
workload's largest batch, the suite's and PyTorch's. The interface and the
output: beside.py. Standard library and torch only.
"""
import contextlib
import sys

import beside as b

CLAIM, KEY = "C27", "no_grad_eval"
REPEATS, WARMUP = b.REPEATS, b.WARMUP
QUICK = {"mlp": [256, 4096], "transformer": [100], "encoder": [16]}
EVALUATION = {"mlp": "no_grad", "transformer": "eval_no_grad", "encoder": "eval_no_grad"}
NAME = "beside/" + KEY


def points(args, ngr):
    """[(workload, batch, [modes])], in the suite's order (else the lists')."""
    out = []
    if args.suite:
        for variant, param, value in b.suite_points(args.suite, "peak_allocated"):
            wl, _, mode = variant.partition("/")
            if param != "batch" or wl not in EVALUATION or mode not in ngr.MODES:
                continue
            if not out or out[-1][:2] != (wl, int(value)):
                out.append((wl, int(value), []))
            out[-1][2].append(mode)
        return out
    for wl, _, batches, modes in ngr.WORKLOADS:
        for B in QUICK[wl] if args.quick else batches:
            out.append((wl, B, list(modes)))
    return out


def context(torch, mode):
    return {"grad": contextlib.nullcontext, "no_grad": torch.no_grad, "eval_no_grad": torch.no_grad,
            "inference_mode": torch.inference_mode}[mode]()


def measure(torch, ngr, wl, B, mode, args, dev, profile=False):
    """The first forward's figures, the timed forwards' times, the idle
    share (None unless profile: the verdict row's forward)."""
    torch.manual_seed(0)
    model = ngr.build(torch, wl, dev)
    model.train() if mode in ("grad", "no_grad") else model.eval()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    try:
        torch.cuda.synchronize()
        fig = {"allocated_before": torch.cuda.memory_allocated()}
        torch.cuda.reset_peak_memory_stats()
        counts = {}
        with ngr.counting(torch, counts):
            with context(torch, mode):
                inputs = ngr.inputs_of(torch, wl, B, dev)
                out = model(*inputs)
            torch.cuda.synchronize()
        fig.update(allocated_out=torch.cuda.memory_allocated(), peak_allocated=torch.cuda.max_memory_allocated(),
                   peak_reserved=torch.cuda.max_memory_reserved(), output_bytes=out.numel() * out.element_size(),
                   has_graph=out.grad_fn is not None, **counts)
        del out, inputs
        torch.cuda.synchronize()
        fig["allocated_end"] = torch.cuda.memory_allocated()
        if fig["has_graph"] != (mode == "grad"):
            raise RuntimeError("the output %s a graph" % ("has" if fig["has_graph"] else "has no"))

        def forward():
            with context(torch, mode):
                x = ngr.inputs_of(torch, wl, B, dev)
                y = model(*x)
            del x, y
        times = []
        for i in range(args.warmup + args.repeats):
            start.record()
            forward()
            stop.record()
            stop.synchronize()
            if i >= args.warmup:
                times.append(start.elapsed_time(stop) * 1e-3)
        idle = b.idle_share(torch, forward, step_times=times) if profile else None
    finally:
        del model
    return fig, times, idle


def main(argv=None):
    args = b.parse_args(__doc__, REPEATS, WARMUP, None, argv)
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    dev = torch.device("cuda", args.device)
    ngr = b.reference_module("no_grad_reference")
    pts = points(args, ngr)
    top = {}
    for wl, B, _ in pts:
        top[wl] = max(top.get(wl, 0), B)
    order = [p for p in pts if top[p[0]] == p[1]] + [p for p in pts if top[p[0]] != p[1]]
    got = {}     # (wl, B, mode) -> (figures, median forward time, idle)
    peaks = []   # (what, PyTorch's peak, the suite's)
    npoints = 0
    for wl, B, modes in order:
        go = args.budget.allows(first=top[wl] == B)
        for mode in modes:
            npoints += 1
            var, what = "%s/%s" % (wl, mode), "%s B=%d %s" % (wl, B, mode)
            if not go:
                out.skipped(var, "batch", B, "peak_allocated", "bytes", what, args.budget.why())
                continue
            res = None
            try:
                res = measure(torch, ngr, wl, B, mode, args, dev,
                              profile=(wl, mode) == ("transformer", "eval_no_grad") and B == top[wl])
            except Exception as e:  # one point's failure is its row; the others go on
                out.failed(torch, var, "batch", B, "peak_allocated", "bytes", what, e)
            b.release(torch)
            if res is None:
                continue
            fig, times, idle = res
            out.value(var, "batch", B, "peak_allocated", "bytes", fig["peak_allocated"],
                      "max_memory_allocated() over the inputs' randn and the first forward of a fresh model")
            out.value(var, "batch", B, "allocated_before", "bytes", fig["allocated_before"],
                      "memory_allocated() before the inputs: the weights (and workspaces an earlier point made)")
            out.value(var, "batch", B, "allocated_out", "bytes", fig["allocated_out"],
                      "memory_allocated() when the model returns")
            out.value(var, "batch", B, "allocated_end", "bytes", fig["allocated_end"],
                      "memory_allocated() after del out and the inputs")
            out.value(var, "batch", B, "output_bytes", "bytes", fig["output_bytes"], "out.numel() * out.element_size()")
            out.value(var, "batch", B, "fast_path_layers", "count", fig.get("fast_path_layers", 0),
                      "calls of torch._transformer_encoder_layer_fwd")
            out.value(var, "batch", B, "fast_path_mha", "count", fig.get("fast_path_mha", 0),
                      "calls of torch._native_multi_head_attention from Python")
            out.value(var, "batch", B, "peak_reserved", "bytes", fig["peak_reserved"], "max_memory_reserved()")
            out.emit(var, "batch", B, "forward_time", "s", times, "ok",
                     "CUDA events around the inputs' randn ... model(...), after the warm-up")
            out.idle(var, "batch", B, {"idle": idle})
            t = b.stats(times)["median"]
            got[(wl, B, mode)] = (fig, t, idle)
            peaks.append((what, fig["peak_allocated"], b.suite_median(args.suite, var, "batch", B, "peak_allocated")))
            b.log(NAME, "%s: peak %d bytes, forward %.3f ms", what, fig["peak_allocated"], t * 1e3)
            g = got.get((wl, B, "grad"))
            if mode != "grad" and g:
                ratio = fig["peak_allocated"] / float(g[0]["peak_allocated"])
                out.value(var + "_vs_grad", "batch", B, "peak_ratio", "ratio", ratio,
                          "peak allocated without autograd / with it")
                out.value(var + "_vs_grad", "batch", B, "peak_saving", "fraction", 1 - ratio,
                          "1 - peak ratio: the share of the peak this mode saves")
            out.flush()

    head = b.describe_torch(torch, args.device) + ": "
    have = bool(args.suite)
    for wl in dict.fromkeys(p[0] for p in pts):
        ev = EVALUATION[wl]
        Bs = [B for w, B, _ in pts if w == wl and (wl, B, "grad") in got and (wl, B, ev) in got]
        if not Bs:
            continue
        sav = [saving(got, wl, B) for B in Bs]
        s_sav = [b.suite_median(args.suite, "%s/%s_vs_grad" % (wl, ev), "batch", B, "peak_saving") for B in Bs]
        tg = [got[(wl, B, "grad")][1] for B in Bs]
        te = [got[(wl, B, ev)][1] for B in Bs]
        out.summary(head + "%s, %s vs grad at B = %s: %s; forward time grad %s, %s %s" % (
            wl, ev, ", ".join(str(B) for B in Bs), b.beside("peak saving", sav, s_sav, b.pct, have),
            b.fig_list(tg, b.seconds), ev, b.fig_list(te, b.seconds)))
        head = ""
    out.peaks(peaks)
    parts = []
    for wl, B in top.items():
        if (wl, B, "grad") in got and (wl, B, EVALUATION[wl]) in got:
            s = b.suite_median(args.suite, "%s/%s_vs_grad" % (wl, EVALUATION[wl]), "batch", B, "peak_saving")
            parts.append("%s B=%d %s%.0f%%" % (wl, B, "" if s is None else "%.0f%%/" % (100 * s),
                                                100 * saving(got, wl, B)))
    if parts:
        text = "Evaluation's peak saving (MLP no_grad, others eval() + no_grad), %s: %s" % (
            "suite/PyTorch" if args.suite else "PyTorch", "; ".join(parts))
        tf = [k for k in got if k[0] == "transformer" and k[2] == "eval_no_grad"]
        if tf:
            clause = b.regime_clause(got[max(tf)][2], "PyTorch's Transformer eval forward", "forward")
            if clause:
                text += "; " + clause
        out.verdict(text + ".")
    out.close(npoints)
    return 0


def saving(got, wl, B):
    return 1 - got[(wl, B, EVALUATION[wl])][0]["peak_allocated"] / float(got[(wl, B, "grad")][0]["peak_allocated"])


if __name__ == "__main__":
    sys.exit(main())
