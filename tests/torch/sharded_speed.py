#!/usr/bin/env python3
"""sharded_speed.py: the suite's data-parallel training step on N GPUs
(build/sharded_model --gpu: common/workload/sharded/sharded_gpu.h) beside
PyTorch's own (tests/torch/fsdp_reference.py, or for the transformer
fsdp_transformer_reference.py, under torchrun: DistributedDataParallel,
fully_shard(reshard_after_forward=False), fully_shard), on the same GPUs
in the same call, interleaved: for each
configuration and wrapper the suite runs, then PyTorch, then the suite
again, so that a clock or a neighbour that changes during the call shows
as a difference between the suite's two runs.

    python3 tests/torch/sharded_speed.py OUTDIR [--model mlp|transformer] [--gpus N] [--steps K] [--only NAME,...]
    python3 tests/torch/sharded_speed.py OUTDIR [--model mlp|transformer] [--only NAME,...] --summarize

Both idle 0.3 s after each step (fsdp_reference.py's pause, which lets
NCCL's watchdog free the step's tensors; the suite's --pause-ms 300), so
each step starts on a GPU that has idled as long.

--model mlp (the default): the MLP of C24. Configurations:
fsdp_reference.py's CONFIGS (C24's widths 1024 and 4096, an odd width
whose shards are padded, a large batch); wrappers ddp, zero2, fsdp. Each
run: `build/sharded_model --gpu --mode M --world N --steps K --pause-ms 300
<network flags> [--verify]` beside fsdp_reference.py --configs (one
configuration and wrapper) --steps K --gpus N.

--model transformer: nn.TransformerEncoder under FSDP2, fully_shard on
each layer then the whole (build/sharded_model --model transformer; in
PyTorch tests/torch/fsdp_transformer_reference.py). Configurations:
TFM_CONFIGS below, of real sizes (fsdp_transformer_reference.py's own are
small random draws for the memory figures); wrappers zero2, fsdp (no
ddp). Each run: `build/sharded_model --model transformer --gpu --mode M
--world N --steps K --pause-ms 300 <network flags> [--verify]` beside
fsdp_transformer_reference.py --configs (one configuration and wrapper)
--no-history --steps K --gpus N (no memory history: it costs host time at
every allocation, and is kept on the host, so the device's figures do not
depend on it).

The suite's first run has --verify (every rank's parameters against one
GPU trained on the whole batch, and the loss's fall); its second does not.

OUTDIR gets, per configuration NAME and wrapper MODE:
  NAME_MODE.suite1.csv, NAME_MODE.suite2.csv   build/sharded_model --gpu's CSV
                  (rank,step,peak_allocated,allocated_end,model_peak,model_end,
                  step_time_s,loss,status)
  NAME_MODE.verify.txt                        its --verify line
  torch/NAME_MODE.rankR.csv                   the reference's per-rank CSV
                  (step,peak_allocated,allocated_end,peak_reserved,status,
                  step_time_s; also its NAME_MODE.rankR.init)
  torch/meta.txt                              PyTorch's, NCCL's versions, the GPUs
  run.txt         pause_ms, steps, gpus (and model=transformer for that model)
and speed.tsv: one row per configuration and wrapper:
  name mode gpus suite_ms torch_ms ratio suite1_ms suite2_ms suite_peak torch_peak
  model_peak gpu_equals_model gpu_equals_torch verify suite_pause_ms
(step times: rank 0's median over the steps after the first two, the suite's
two runs pooled; peaks: rank 0's largest step peak after the first two;
gpu_equals_model: every rank's peak and end-of-step allocated at every step
of both suite runs equal the host model's; gpu_equals_torch: the first
run's equal PyTorch's, every rank and step; verify: the check's line;
suite_pause_ms: the suite's idle time after each step, from OUTDIR/run.txt,
0 where it has none: runs made before the suite could pause). Rows in the
order of the model's configurations, then wrappers; a configuration whose
first wrapper left no suite1.csv is left out.
--summarize writes speed.tsv again from the files alone (give the run's
--model: OUTDIR/run.txt's model must match it).

Exit: 0; 1 a run failed or a row could not be made; 2 usage; 77 no torch,
fewer GPUs than --gpus, or a suite built without NCCL (said by either side).
Standard library only here (torch in the references' ranks)."""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fsdp_reference as ref  # noqa: E402  (CONFIGS, MODES)
import fsdp_transformer_reference as tref  # noqa: E402  (Cfg, MODES)

PAUSE_MS = int(ref.REAP_S * 1000)  # the suite idles after each step as PyTorch's reference does
WARM = 2          # step 1 makes Adam's state, step 2 rebuilds DDP's buckets
TIMEOUT_S = 300
EXIT_WAIVED = 77

# nn.TransformerEncoder at real sizes: build/sharded_model --model
# transformer's network flags (fp32, dropout 0: the FSDP2 model's terms).
# Per rank: tfm768 is BERT-base's layer (42.5 M parameters in 6 layers,
# 4096 tokens a rank); tfm1024 pre-norm, batch-first, 4 layers (50.4 M),
# sequences of 1024; tfm2048 wide layers (201 M parameters, 805 MB of
# fp32 weights to gather and reduce each step).
TFM_CONFIGS = [
    ("tfm768", "--d-model 768 --heads 12 --enc-layers 6 --ff 3072 --dropout 0 --activation gelu "
               "--seq 512 --batch 8 --optimizer adam"),
    ("tfm1024", "--d-model 1024 --heads 16 --enc-layers 4 --ff 4096 --dropout 0 --activation relu "
                "--seq 1024 --batch 4 --optimizer adam --norm-first --batch-first"),
    ("tfm2048", "--d-model 2048 --heads 16 --enc-layers 4 --ff 8192 --dropout 0 --activation gelu "
                "--seq 512 --batch 4 --optimizer adam"),
]

# A model: its configurations, wrappers (speed.tsv's order), PyTorch's
# reference script, and what each side is given besides the network flags.
MODELS = {
    "mlp": {"configs": ref.CONFIGS, "modes": ref.MODES, "reference": "fsdp_reference.py",
            "suite_flags": [], "torch_flags": []},
    "transformer": {"configs": TFM_CONFIGS, "modes": tuple(m for m in ref.MODES if m in tref.MODES),
                    "reference": "fsdp_transformer_reference.py",
                    "suite_flags": ["--model", "transformer"], "torch_flags": ["--no-history"]},
}


def text(out):
    """A TimeoutExpired's captured output (bytes even under text=True) as text."""
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


def suite(outdir, model, name, mode, flags, gpus, steps, tag, verify):
    """One build/sharded_model --gpu run; its CSV (and --verify's line) into
    OUTDIR. Its exit status (-1: not started, or killed after TIMEOUT_S); a
    failure is said on stderr where it wrote no CSV or exited other than 0
    or 1 (exit 1, a figure off the model or a failed check, still leaves
    one)."""
    cmd = ([os.path.join(ROOT, "build", "sharded_model")] + MODELS[model]["suite_flags"] +
           ["--gpu", "--mode", mode, "--world", str(gpus), "--steps", str(steps), "--pause-ms", str(PAUSE_MS)] +
           flags.split() + (["--verify"] if verify else []))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = -1, text(e.stdout), text(e.stderr) + "\nkilled after %d s\n" % TIMEOUT_S
    except OSError as e:  # not built
        rc, out, err = -1, "", "cannot start %s: %s\n" % (cmd[0], e)
    base = os.path.join(outdir, "%s_%s" % (name, mode))
    with open(base + ".%s.csv" % tag, "w") as f:
        f.write(out)
    if verify:
        with open(base + ".verify.txt", "w") as f:
            f.write(err)
    if rc not in (0, 1) or not out:
        print("sharded_speed: %s %s (%s) failed, exit %d: %s" % (name, mode, tag, rc, err.strip()[-300:]),
              file=sys.stderr)
    return rc


def torch_run(outdir, model, name, mode, flags, gpus, steps):
    """The model's PyTorch reference on this one configuration and wrapper
    (torch/NAME_MODE.rankR.csv); its exit status (-1: killed after TIMEOUT_S)."""
    d = os.path.join(outdir, "torch")
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "%s_%s.conf" % (name, mode))
    with open(conf, "w") as f:
        f.write("%s_%s\t--mode %s %s\n" % (name, mode, mode, flags))
    cmd = [sys.executable, os.path.join(HERE, MODELS[model]["reference"]), d, "--configs", conf] + \
        MODELS[model]["torch_flags"] + ["--steps", str(steps), "--gpus", str(gpus)]
    try:
        rc = subprocess.run(cmd, timeout=TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        rc = -1
    os.remove(conf)
    if rc != 0:
        print("sharded_speed: PyTorch %s %s failed, exit %d" % (name, mode, rc), file=sys.stderr)
    return rc


def read_csv(path):
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines:
        raise ValueError("%s is empty" % path)
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


def summarize(outdir, model, names):
    """speed.tsv from the runs' files, in the model's order (the
    configurations whose first wrapper OUTDIR has a suite1.csv of); the
    count of rows it could not make."""
    modes = MODELS[model]["modes"]
    names = [n for n in names if os.path.exists(os.path.join(outdir, "%s_%s.suite1.csv" % (n, modes[0])))]
    rows = [summary_row(outdir, n, m) for n in names for m in modes]
    with open(os.path.join(outdir, "speed.tsv"), "w") as f:
        f.write(HEADER + "\n" + "".join(r + "\n" for r in rows if r))
    return sum(r is None for r in rows)


def run_model(outdir):
    """The model OUTDIR/run.txt names: mlp where it names none or is missing."""
    try:
        with open(os.path.join(outdir, "run.txt")) as f:
            return dict(x.split("=", 1) for x in f.read().split()).get("model", "mlp")
    except (OSError, ValueError):
        return "mlp"


def waived(who):
    print("sharded_speed: waived: %s has not the GPUs, NCCL or torch it needs (exit %d)" % (who, EXIT_WAIVED),
          file=sys.stderr)
    return EXIT_WAIVED


def main():
    names_of = lambda m: ",".join(n for n, _ in MODELS[m]["configs"])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Configurations: mlp: %s; transformer: %s. Details: the module's "
                                        "docstring." % (names_of("mlp"), names_of("transformer")))
    ap.add_argument("outdir")
    ap.add_argument("--model", choices=sorted(MODELS), default="mlp",
                    help="mlp (default: fsdp_reference.py; ddp, zero2, fsdp) or transformer "
                         "(fsdp_transformer_reference.py --no-history; zero2, fsdp)")
    ap.add_argument("--gpus", type=int, default=2, help="the world size: GPUs 0..N-1 (default 2)")
    ap.add_argument("--steps", type=int, default=8, help="steps a run, more than %d (default 8)" % WARM)
    ap.add_argument("--only", default="", help="comma-separated names of the model's configurations")
    ap.add_argument("--summarize", action="store_true",
                    help="only write speed.tsv again from OUTDIR's files (as the tests do)")
    a = ap.parse_args()
    if a.gpus < 1 or a.steps <= WARM:
        ap.error("--gpus >= 1 and --steps > %d" % WARM)
    m = MODELS[a.model]
    only = [s for s in a.only.split(",") if s]
    unknown = [s for s in only if s not in dict(m["configs"])]
    if unknown:
        ap.error("--only: no %s configuration %s (these are: %s)" % (a.model, ",".join(unknown), names_of(a.model)))
    configs = [c for c in m["configs"] if not only or c[0] in only]
    names = [n for n, _ in configs]
    for n, flags in configs if a.model == "transformer" else []:
        try:
            tref.Cfg(flags)  # what the reference would refuse, refused before any GPU is used
        except ValueError as e:
            ap.error("TFM_CONFIGS %s: %s" % (n, e))
    if a.summarize:
        if run_model(a.outdir) != a.model:
            ap.error("%s holds a --model %s run (its run.txt), not %s" % (a.outdir, run_model(a.outdir), a.model))
        return 1 if summarize(a.outdir, a.model, names) else 0
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "run.txt"), "w") as f:
        f.write("pause_ms=%d\nsteps=%d\ngpus=%d\n" % (PAUSE_MS, a.steps, a.gpus) +
                ("model=%s\n" % a.model if a.model != "mlp" else ""))
    for name, flags in configs:
        for mode in m["modes"]:
            if suite(a.outdir, a.model, name, mode, flags, a.gpus, a.steps, "suite1", True) == EXIT_WAIVED:
                return waived("the suite")
            if torch_run(a.outdir, a.model, name, mode, flags, a.gpus, a.steps) == EXIT_WAIVED:
                return waived("PyTorch's reference")
            suite(a.outdir, a.model, name, mode, flags, a.gpus, a.steps, "suite2", False)
            row = summary_row(a.outdir, name, mode)
            print("sharded_speed: %s" % (row.replace("\t", " ") if row else "%s %s failed" % (name, mode)),
                  file=sys.stderr)
    return 1 if summarize(a.outdir, a.model, names) else 0


if __name__ == "__main__":
    sys.exit(main())
