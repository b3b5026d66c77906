#!/usr/bin/env python3
"""sharded_speed.py: the suite's data-parallel training step on N GPUs
(build/sharded_model --gpu: common/workload/sharded/sharded_gpu.h) beside
PyTorch's own (tests/torch/fsdp_reference.py under torchrun:
DistributedDataParallel, fully_shard(reshard_after_forward=False),
fully_shard), on the same GPUs in the same call, interleaved: for each
configuration and wrapper the suite runs, then PyTorch, then the suite
again, so that a clock or a neighbour that changes during the call shows
as a difference between the suite's two runs.

    python3 tests/torch/sharded_speed.py OUTDIR [--gpus N] [--steps K] [--only NAME,...]

Both idle 0.3 s after each step (fsdp_reference.py's pause, which lets
NCCL's watchdog free the step's tensors; the suite's --pause-ms 300), so
each step starts on a GPU that has idled as long.

Configurations: fsdp_reference.py's CONFIGS (C24's widths 1024 and 4096,
an odd width whose shards are padded, a large batch). The suite's first
run has --verify (every rank's parameters against one GPU trained on the
whole batch, and the loss's fall); its second does not.

OUTDIR gets, per configuration NAME and wrapper MODE:
  NAME_MODE.suite1.csv, NAME_MODE.suite2.csv   build/sharded_model --gpu's CSV
                  (rank,step,peak_allocated,allocated_end,model_peak,model_end,
                  step_time_s,loss,status)
  NAME_MODE.verify.txt                        its --verify line
  torch/NAME_MODE.rankR.csv                   fsdp_reference.py's per-rank CSV
  torch/meta.txt                              PyTorch's, NCCL's versions, the GPUs
and speed.tsv: one row per configuration and wrapper:
  name mode gpus suite_ms torch_ms ratio suite1_ms suite2_ms suite_peak torch_peak
  model_peak gpu_equals_model gpu_equals_torch verify suite_pause_ms
(step times: rank 0's median over the steps after the first two, the suite's
two runs pooled; peaks: rank 0's largest step peak after the first two;
gpu_equals_model: every rank's peak and end-of-step allocated at every step
of both suite runs equal the host model's; gpu_equals_torch: the first
run's equal PyTorch's, every rank and step; verify: the check's line;
suite_pause_ms: the suite's idle time after each step, from OUTDIR/run.txt,
0 where it has none: runs made before the suite could pause).
--summarize writes speed.tsv again from the files alone.

Exit: 0, 1 a run failed, 2 usage, 77 no torch or fewer GPUs than --gpus.
Standard library only here (torch in fsdp_reference.py's ranks)."""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fsdp_reference as ref  # noqa: E402  (CONFIGS, MODES)

PAUSE_MS = int(ref.REAP_S * 1000)  # the suite idles after each step as PyTorch's reference does
WARM = 2          # step 1 makes Adam's state, step 2 rebuilds DDP's buckets
TIMEOUT_S = 300


def suite(outdir, name, mode, flags, gpus, steps, tag, verify):
    """One build/sharded_model --gpu run; its CSV (and --verify's line) into
    OUTDIR. False where it wrote no CSV (exit 1, a figure off the model or a
    failed check, still leaves one)."""
    cmd = [os.path.join(ROOT, "build", "sharded_model"), "--gpu", "--mode", mode, "--world", str(gpus),
           "--steps", str(steps), "--pause-ms", str(PAUSE_MS)] + flags.split() + (["--verify"] if verify else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    base = os.path.join(outdir, "%s_%s" % (name, mode))
    with open(base + ".%s.csv" % tag, "w") as f:
        f.write(p.stdout)
    if verify:
        with open(base + ".verify.txt", "w") as f:
            f.write(p.stderr)
    if p.returncode not in (0, 1) or not p.stdout:
        print("sharded_speed: %s %s (%s) failed, exit %d: %s" % (name, mode, tag, p.returncode,
                                                                p.stderr.strip()[-300:]), file=sys.stderr)
        return False
    return True


def torch_run(outdir, name, mode, flags, gpus, steps):
    d = os.path.join(outdir, "torch")
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "%s_%s.conf" % (name, mode))
    with open(conf, "w") as f:
        f.write("%s_%s\t--mode %s %s\n" % (name, mode, mode, flags))
    cmd = [sys.executable, os.path.join(HERE, "fsdp_reference.py"), d, "--configs", conf, "--steps", str(steps),
           "--gpus", str(gpus)]
    rc = subprocess.run(cmd, timeout=TIMEOUT_S).returncode
    os.remove(conf)
    if rc != 0:
        print("sharded_speed: PyTorch %s %s failed, exit %d" % (name, mode, rc), file=sys.stderr)
    return rc == 0


def read_csv(path):
    with open(path) as f:
        lines = f.read().splitlines()
    return [dict(zip(lines[0].split(","), x.split(","))) for x in lines[1:]]


def summary_row(outdir, name, mode):
    """speed.tsv's row of NAME_MODE from the runs' files in OUTDIR, or None
    where one is missing."""
    base = os.path.join(outdir, "%s_%s" % (name, mode))
    try:
        s1, s2 = read_csv(base + ".suite1.csv"), read_csv(base + ".suite2.csv")
        with open(base + ".verify.txt") as f:
            verify = "passed" if "--verify passed" in f.read() else "FAILED"
        gpus = 1 + max(int(r["rank"]) for r in s1)
        torch = [read_csv(os.path.join(outdir, "torch", "%s_%s.rank%d.csv" % (name, mode, q))) for q in range(gpus)]
    except (OSError, ValueError, KeyError):
        return None
    try:
        with open(os.path.join(outdir, "run.txt")) as f:
            pause = int(dict(x.split("=", 1) for x in f.read().split()).get("pause_ms", "0"))
    except OSError:
        pause = 0  # runs before the suite paused
    t0 = lambda rows: [float(r["step_time_s"]) for r in rows if r.get("rank", "0") == "0" and int(r["step"]) > WARM]
    sm1, sm2, tm = t0(s1), t0(s2), t0(torch[0])
    if not (sm1 and sm2 and tm):
        return None
    eq_model = all(r["peak_allocated"] == r["model_peak"] and r["allocated_end"] == r["model_end"] for r in s1 + s2)
    mine = {(int(r["rank"]), int(r["step"])): (r["peak_allocated"], r["allocated_end"]) for r in s1}
    theirs = {(q, int(r["step"])): (r["peak_allocated"], r["allocated_end"]) for q in range(gpus) for r in torch[q]}
    eq_torch = mine == theirs
    sm, t = statistics.median(sm1 + sm2), statistics.median(tm)
    peak = lambda rows, key: max(int(r[key]) for r in rows if r.get("rank", "0") == "0" and int(r["step"]) > WARM)
    return "%s\t%s\t%d\t%.6f\t%.6f\t%.4f\t%.6f\t%.6f\t%d\t%d\t%d\t%s\t%s\t%s\t%d" % (
        name, mode, gpus, sm * 1e3, t * 1e3, sm / t, statistics.median(sm1) * 1e3, statistics.median(sm2) * 1e3,
        peak(s1, "peak_allocated"), peak(torch[0], "peak_allocated"), peak(s1, "model_peak"),
        "yes" if eq_model else "no", "yes" if eq_torch else "no", verify, pause)


HEADER = ("name\tmode\tgpus\tsuite_ms\ttorch_ms\tratio\tsuite1_ms\tsuite2_ms\tsuite_peak\ttorch_peak\tmodel_peak"
          "\tgpu_equals_model\tgpu_equals_torch\tverify\tsuite_pause_ms")


def summarize(outdir, names):
    """speed.tsv from the runs' files, in fsdp_reference.py's order (the
    configurations OUTDIR has files of); the count of rows it could not make."""
    names = [n for n in names if os.path.exists(os.path.join(outdir, "%s_ddp.suite1.csv" % n))]
    rows = [summary_row(outdir, n, m) for n in names for m in ref.MODES]
    with open(os.path.join(outdir, "speed.tsv"), "w") as f:
        f.write(HEADER + "\n" + "".join(r + "\n" for r in rows if r))
    return sum(r is None for r in rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--only", default="")
    ap.add_argument("--summarize", action="store_true",
                    help="only write speed.tsv again from OUTDIR's files (as the tests do)")
    a = ap.parse_args()
    if a.gpus < 1 or a.steps <= WARM:
        ap.error("--gpus >= 1 and --steps > %d" % WARM)
    configs = [c for c in ref.CONFIGS if not a.only or c[0] in a.only.split(",")]
    names = [n for n, _ in configs]
    if a.summarize:
        return 1 if summarize(a.outdir, names) else 0
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "run.txt"), "w") as f:
        f.write("pause_ms=%d\nsteps=%d\ngpus=%d\n" % (PAUSE_MS, a.steps, a.gpus))
    for name, flags in configs:
        for mode in ref.MODES:
            suite(a.outdir, name, mode, flags, a.gpus, a.steps, "suite1", True)
            torch_run(a.outdir, name, mode, flags, a.gpus, a.steps)
            suite(a.outdir, name, mode, flags, a.gpus, a.steps, "suite2", False)
            row = summary_row(a.outdir, name, mode)
            print("sharded_speed: %s" % (row.replace("\t", " ") if row else "%s %s failed" % (name, mode)),
                  file=sys.stderr)
    return 1 if summarize(a.outdir, names) else 0


if __name__ == "__main__":
    sys.exit(main())
