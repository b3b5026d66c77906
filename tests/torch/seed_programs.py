#!/usr/bin/env python3
"""seed_programs.py: seed 000's two memory programs run as the seed writes
them (issue 32, item 4), so that REPORT.md can set three figures side by
side: what the seed printed, what PyTorch prints for the same code on this
GPU, and the suite's model of the same program. Run it on the GPU machine
(PyTorch 2.11, CUDA):

    python3 tests/torch/seed_programs.py OUTDIR
    python3 tests/torch/seed_programs.py OUTDIR --only c01|c07   (one program, untraced:
                                              what tests/torch/beside/ runs beside the suite)
    ... --only c01|c07 --go-file F   (torch imported first, then the program once F exists:
                                      run-all's PyTorch runner starts it with the suite)

then copy OUTDIR's files into tests/fixtures/seed_programs/.

The code below (C01_CODE, C07_CODE) is the seed's, character for character
but for the indentation of the strings, quirks kept: large_batch() never
calls zero_grad(), so its gradients are still alive when
gradient_accumulation() resets the peak; zero_grad() (set_to_none) runs
only there; nn.Transformer's batch_first is False, so the (64, 100, 256)
tensors are sequence 64 x batch 100, and the "batch 16" micro-steps are
sequence 16 x batch 100. Each program runs in a fresh process
(torch.manual_seed(0) first; figures do not depend on the numbers drawn),
once more both in one process, as a notebook would run the seed's cells.
The functions are wrapped, not edited: the wrapper marks the memory
history and reads memory_allocated() after the call.

It writes into OUTDIR:

  c01.out, c07.out    what the program printed, verbatim
  c01.txt, c07.txt    key=value: each function's returned bytes and
                      memory_allocated() after it, in call order
  notebook.out        both programs' prints from one process
  c07.trace           memclaims-trace v1 of the whole C07 program: set-up
                      (model.cuda(), Adam), then each function (a
                      reset_peak where the seed resets the peak)
  meta.txt            torch, CUDA, GPU

Exit: 0 ok, 1 a program failed, 2 usage, 77 no CUDA device. Standard
library and torch only.
"""
import argparse
import contextlib
import io
import os
import subprocess
import sys
import time

from reference_output import torch_or_waive, write_trace

# Seed 000, "内存优化思路1：及时释放变量" (C01), verbatim.
C01_CODE = '''
import torch

# 未优化版本：变量累积
def unoptimized():
    tensors = []
    for _ in range(100):
        tensors.append(torch.randn(1000, 1000).cuda())
    return torch.cuda.max_memory_allocated()

# 优化版本：及时释放
def optimized():
    max_mem = 0
    for _ in range(100):
        tensor = torch.randn(1000, 1000).cuda()
        max_mem = max(max_mem, torch.cuda.memory_allocated())
        del tensor 
        torch.cuda.empty_cache()
    return max_mem
'''
C01_PRINTS = '''
print(f"未优化内存: {unoptimized()/1024**2:.2f} MB")
print(f"优化后内存: {optimized()/1024**2:.2f} MB")
'''
C01_FUNCS = ("unoptimized", "optimized")

# Seed 000, "内存优化思路2：梯度累加" (C07), verbatim (its cell has no
# import: the notebook's first cell imported torch).
C07_CODE = '''
model = torch.nn.Transformer(d_model=256).cuda()
optimizer = torch.optim.Adam(model.parameters())

# 直接大批次训练 (batch_size=64)
def large_batch():
    torch.cuda.reset_peak_memory_stats()
    inputs = torch.randn(64, 100, 256).cuda()
    targets = torch.randn(64, 100, 256).cuda()
    
    outputs = model(inputs, targets)
    loss = torch.nn.MSELoss()(outputs, targets)
    loss.backward()
    optimizer.step()
    return torch.cuda.max_memory_allocated()

# 梯度累加 (等效batch_size=64)
def gradient_accumulation():
    torch.cuda.reset_peak_memory_stats()
    accum_steps = 4
    optimizer.zero_grad()
    
    for i in range(accum_steps):
        inputs = torch.randn(16, 100, 256).cuda()  # 实际batch_size=16
        targets = torch.randn(16, 100, 256).cuda()
        
        outputs = model(inputs, targets)
        loss = torch.nn.MSELoss()(outputs, targets) / accum_steps
        loss.backward()
    
    optimizer.step()
    return torch.cuda.max_memory_allocated()
'''
C07_PRINTS = '''
print(f"大批次内存: {large_batch()/1024**2:.2f} MB")
print(f"梯度累加内存: {gradient_accumulation()/1024**2:.2f} MB")
'''
C07_FUNCS = ("large_batch", "gradient_accumulation")

PROGRAMS = {"c01": (C01_CODE, C01_PRINTS, C01_FUNCS), "c07": (C07_CODE, C07_PRINTS, C07_FUNCS)}


def run_program(torch, name, ns, record, marks, traced):
    """Defines the seed's functions in ns, wraps each (a history mark, the
    bytes it returns, memory_allocated() after it), then runs the seed's
    print lines; returns what they printed."""
    code, prints, funcs = PROGRAMS[name]
    if traced:
        marks.append((len(torch.cuda.memory._snapshot()["device_traces"][0]),
                      "set-up: %s's definitions (model.cuda(), Adam)" % name, False))
    exec(compile(code, "seed000_%s" % name, "exec"), ns)
    for fn in funcs:
        def wrapped(f=ns[fn], fn=fn):
            if traced:
                marks.append((len(torch.cuda.memory._snapshot()["device_traces"][0]), fn, True))
            v = f()
            torch.cuda.synchronize()
            record.append((fn, int(v), torch.cuda.memory_allocated()))
            return v
        ns[fn] = wrapped
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(prints, "seed000_%s_prints" % name, "exec"), ns)
    return buf.getvalue()


def wait_for(go_file, which):
    """torch imported (no CUDA call), then back once go_file exists: the
    import overlaps run-all's experiments, the program runs after them.
    C07's program also gets torch._dynamo imported first: its Adam(...)
    imports it, which took 4.4 s of 5.3 s when the program's steps were
    timed one by one on an H200's host; an import makes no CUDA call and
    allocates nothing, so the program's figures are the same.
    Where the process that started this one ends first (run-all stopped
    while its experiments ran), exits 1 without running: the starter's pid
    comes in MEMCLAIMS_SEED_PARENT (read here, it could already be gone)."""
    starter = int(os.environ.get("MEMCLAIMS_SEED_PARENT") or os.getppid())
    try:
        import torch  # noqa: F401
        if which == "c07":
            import torch._dynamo  # noqa: F401
    except ImportError:
        pass  # torch_or_waive says so
    while not os.path.exists(go_file):
        if os.getppid() != starter:
            sys.exit("seed_programs: the process that started it ended before %s was written: not run" % go_file)
        time.sleep(0.05)


def child(outdir, which, trace=True, go_file=None):
    if go_file:
        wait_for(go_file, which)
    torch = torch_or_waive("seed_programs")
    if torch is None:
        return 77
    torch.manual_seed(0)
    ns = {"torch": torch}
    if which == "notebook":
        out = "".join(run_program(torch, n, ns, [], [], False) for n in ("c01", "c07"))
        with open(os.path.join(outdir, "notebook.out"), "w") as f:
            f.write(out)
        return 0
    traced = which == "c07" and trace
    marks, record = [], []
    if traced:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=1000000)
    out = run_program(torch, which, ns, record, marks, traced)
    if traced:
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        write_trace(os.path.join(outdir, "c07.trace"), snap["device_traces"][0], marks,
                    os.path.basename(__file__))
    with open(os.path.join(outdir, which + ".out"), "w") as f:
        f.write(out)
    with open(os.path.join(outdir, which + ".txt"), "w") as f:
        for fn, v, alloc in record:
            f.write("%s.returned=%d\n%s.allocated_after=%d\n" % (fn, v, fn, alloc))
    sys.stderr.write("seed_programs %s:\n%s" % (which, out))
    if which == "c01":
        p = torch.cuda.get_device_properties(0)
        with open(os.path.join(outdir, "meta.txt"), "w") as f:
            f.write("torch=%s\ncuda=%s\ngpu=%s\n" % (torch.__version__, torch.version.cuda, p.name))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--child", choices=("c01", "c07", "notebook"), help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=("c01", "c07"),
                    help="run that program alone, untraced, into OUTDIR/NAME.out and NAME.txt "
                         "(tests/torch/beside/: PyTorch's figures beside the suite's)")
    ap.add_argument("--go-file", help="with --only: import torch, then wait until this file exists "
                                       "(run-all's PyTorch runner starts it early)")
    a = ap.parse_args()
    if a.go_file and not a.only:
        ap.error("--go-file goes with --only")
    if a.child:
        return child(a.outdir, a.child)
    if a.only:
        os.makedirs(a.outdir, exist_ok=True)
        return child(a.outdir, a.only, trace=False, go_file=a.go_file)
    os.makedirs(a.outdir, exist_ok=True)
    rc = 0
    for which in ("c01", "c07", "notebook"):
        r = subprocess.call([sys.executable, os.path.abspath(__file__), a.outdir, "--child", which])
        if r == 77:
            return 77
        if r != 0:
            print("seed_programs: %s failed (exit %d)" % (which, r), file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
