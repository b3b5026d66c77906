#!/usr/bin/env bash
# The data-parallel training step run on GPUs (build/sharded_model --gpu,
# common/workload/sharded/sharded_gpu.h) beside PyTorch's own, from the runs
# on H100s kept in tests/fixtures/sharded_gpu/ (its README says how each
# was made): two GPUs, four, and three of the four.
#
#   tests/scripts/test_sharded_gpu_fixtures.sh BUILD_DIR
#
# For each folder: speed.tsv is what tests/torch/sharded_speed.py
# --summarize makes of the runs' own files; on every rank and step the
# GPU run's peak and end-of-step allocated equal PyTorch's; every one-GPU
# check passed; every step took at most PyTorch's (rank 0's medians). Then
# the host model of today: it gives, rank by rank and step by step, the
# figures the runs recorded as the model's, and it equals PyTorch's except
# where the fixtures' README names a difference. The stopping: a rank out
# of memory and a rank that hangs. C24's own runs. sharded_model's
# refusals of its GPU flags, which need no GPU. And sharded_speed.py
# --model transformer on hand-made files (no GPU, no torch): its summary,
# the command lines it runs, its refusals.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
model=$build/sharded_model
fx=$root/tests/fixtures/sharded_gpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# NAME<TAB>network flags, fsdp_reference.py's configurations
python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import fsdp_reference as r; print("\n".join("%s\t%s" % c for c in r.CONFIGS))' \
    "$root/tests/torch" > "$tmp/configs" || failure "fsdp_reference.py's CONFIGS cannot be read"

for d in "$fx"/h100x2 "$fx"/h100x4 "$fx"/h100x4_3gpus; do
    n=$(basename "$d")
    cp -r "$d" "$tmp/$n"
    rm -f "$tmp/$n/speed.tsv"
    python3 "$root/tests/torch/sharded_speed.py" "$tmp/$n" --summarize
    check_eq "$n: speed.tsv is the summary of its runs' files" "$(cat "$tmp/$n/speed.tsv")" "$(cat "$d/speed.tsv")"
    rows=$(awk 'NR > 1' "$d/speed.tsv" | wc -l)
    check "$n: six rows or more (each configuration under DDP, ZeRO-2 and FSDP2)" test "$rows" -ge 6
    check_eq "$n: every configuration has all three wrappers" \
        "$(awk -F'\t' 'NR > 1 { c[$1]++ } END { for (k in c) if (c[k] != 3) print k }' "$d/speed.tsv")" ""
    check_eq "$n: on every rank and step, the GPU run's peak and end-of-step allocated equal PyTorch's" \
        "$(awk -F'\t' 'NR > 1 && $13 != "yes" { print $1, $2 }' "$d/speed.tsv")" ""
    check_eq "$n: every one-GPU check passed (parameters within 1e-5, the loss falls)" \
        "$(awk -F'\t' 'NR > 1 && $14 != "passed" { print $1, $2 }' "$d/speed.tsv")" ""
    check_eq "$n: every step at most PyTorch's (rank 0's medians)" \
        "$(awk -F'\t' 'NR > 1 && $6 > 1 { print $1, $2, $6 }' "$d/speed.tsv")" ""
    # The host model now, rank by rank, against the runs' model columns and PyTorch.
    : > "$tmp/$n.model_off"; : > "$tmp/$n.torch_off"
    for csv in "$d"/*.suite1.csv; do
        cfg=$(basename "$csv" .suite1.csv); mode=${cfg##*_}; name=${cfg%_*}
        flags=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$tmp/configs")
        world=$(awk -F, 'NR > 1 { if ($1 + 1 > w) w = $1 + 1 } END { print w + 0 }' "$csv")
        steps=$(awk -F, 'NR > 1 { if ($2 > s) s = $2 } END { print s + 0 }' "$csv")
        for ((q = 0; q < world; q++)); do
            # shellcheck disable=SC2086
            "$model" --mode "$mode" --world "$world" --rank "$q" $flags --steps "$steps" > "$tmp/m.csv" 2>&1 ||
                echo "$cfg rank $q: sharded_model failed" >> "$tmp/$n.model_off"
            awk -F, -v q="$q" -v what="$cfg rank $q" 'NR == FNR { if (FNR > 1) m[$1] = $2 "," $3; next }
                FNR > 1 && $1 == q && m[$2] != $5 "," $6 { print what, "step", $2; exit }' \
                "$tmp/m.csv" "$csv" >> "$tmp/$n.model_off"
            awk -F, -v what="$cfg rank $q" 'NR == FNR { if (FNR > 1) m[$1] = $2 "," $3; next }
                FNR > 1 && m[$1] != $2 "," $3 { print what; exit }' \
                "$tmp/m.csv" "$d/torch/${cfg}.rank$q.csv" >> "$tmp/$n.torch_off"
        done
    done
    check_eq "$n: the host model today gives every figure the runs recorded as its own" "$(cat "$tmp/$n.model_off")" ""
    known=""
    [ "$n" = h100x4_3gpus ] && known=$(printf 'w1024_adam_fsdp rank 2\nw1024_adam_zero2 rank 2')
    check_eq "$n: the host model equals PyTorch on every rank and step${known:+, but for the difference the README names}" \
        "$(sort "$tmp/$n.torch_off")" "$known"
done

# The Transformer under FSDP2 (tests/fixtures/sharded_gpu_tfm/): the summary
# is its files', every GPU figure equals the model's (placed where the GPU's
# segments went), and the suite's step is no slower than PyTorch's.
for d in "$root"/tests/fixtures/sharded_gpu_tfm/w*; do
    [ -f "$d/speed.tsv" ] || continue
    n=tfm_$(basename "$d")
    rm -rf "${tmp:?}/$n" && cp -r "$d" "$tmp/$n" && rm -f "$tmp/$n/speed.tsv"
    python3 "$root/tests/torch/sharded_speed.py" "$tmp/$n" --model transformer --summarize > /dev/null 2>&1
    check_eq "$n: speed.tsv is the summary of its runs' files" "$(cat "$tmp/$n/speed.tsv")" "$(cat "$d/speed.tsv")"
    check_eq "$n: every row of both wrappers (zero2, fsdp)" \
        "$(awk -F'\t' 'NR > 1 { c[$1]++ } END { for (k in c) if (c[k] != 2) print k }' "$d/speed.tsv")" ""
    check_eq "$n: every rank's GPU figures equal its model's at every step (gpu_equals_model)" \
        "$(awk -F'\t' 'NR > 1 && $12 != "yes" { print $1, $2 }' "$d/speed.tsv")" ""
    check_eq "$n: the suite's step at most PyTorch's (ratio <= 1)" \
        "$(awk -F'\t' 'NR > 1 && $6 > 1 { print $1, $2, $6 }' "$d/speed.tsv")" ""
done

# ---- the stopping -------------------------------------------------------------
f=$fx/h100x4/fault_oom.txt
check_eq "h100x4: rank 1 out of memory at step 3 (injected): its row says so" \
    "$(awk -F, '$9 == "oom" { print $1, $2 }' "$f")" "1 3"
check_eq "... no rank reports a step after 2" "$(awk -F, 'NR > 1 && $9 == "ok" && $2 > 2' "$f")" ""
check_eq "... every rank's first two steps stand, equal to the model" \
    "$(awk -F, 'NR > 1 && $9 == "ok" { n++; if ($3 != $5 || $4 != $6) bad++ } END { print n + 0, bad + 0 }' "$f")" "8 0"
for n in h100x2 h100x4; do
    check_eq "$n: a rank that hangs: one line names the rank that stopped queueing, within the 5 s deadline" \
        "$(cat "$fx/$n/fault_hang.txt")" \
        "sharded_model: rank 0: step 3 not done after 5 s (rank 1 stopped queueing at the start of step 3)"
done

# ---- ranks as processes (h100x4_procs/) ---------------------------------------
pr=$fx/h100x4_procs
for m in ddp zero2 fsdp threads w3; do
    g=4; [ "$m" = w3 ] && g=3
    check_eq "processes: $m: every rank's 4 steps, each equal to its model, and the check passed" \
        "$(awk -F, '$9 == "ok" { n++; if ($3 != $5 || $4 != $6) bad++ } END { print n + 0, bad + 0 }' "$pr/$m.log") $(grep -c '^sharded_model: --verify passed' "$pr/$m.log")" \
        "$((4 * g)) 0 1"
done
check_eq "processes: rank 1 out of memory at step 2 is a result: its row, the others' first step" \
    "$(awk -F, '$9 == "oom" { print $1, $2 } $9 == "ok" && $2 > 1 { print "late", $1 }' "$pr/oom.log")" "1 2"
check "processes: a rank that hangs: the first to give up names its step, the hung one where it was" \
    grep -q 'rank 1: stopped at the start of step 2: another rank ended' "$pr/hang.log"
check "processes: a rank killed at step 3 is named, with how soon the others stopped and where each was" \
    grep -q '^sharded_model: rank 1: killed by signal 9 (Killed); the others stopped within [0-9.]* s (grace 10 s): rank 0: stopped at' "$pr/kill.log"
check_eq "... and the others' finished steps stand (the killed rank's are lost with it)" \
    "$(awk -F, '$9 == "ok" { print $1 "," $2 }' "$pr/kill.log" | tr '\n' ' ')" "0,1 0,2 2,1 2,2 3,1 3,2 "
check "processes: a rank that never joins: rank 0 names who is missing at the deadline" \
    grep -q '^sharded_model: rank 0: wait for ranks on port [0-9]*: timed out after 5 s (0 of 1 connected; missing 1)$' "$pr/nojoin.log"
check_eq "... exit codes and seconds: oom 0; a hang, a kill and a missing rank: exit 3 within 10 s" \
    "$(awk '{ split($2, r, "="); t = $3; sub(/s$/, "", t); if ($1 ~ /^(hang|kill|nojoin)$/) print $1, r[2], (t + 0 <= 10) ? "in time" : "late"; if ($1 == "oom") print $1, r[2] }' "$pr/summary.txt" | tr '\n' ';')" \
    "oom 0;hang 3 in time;kill 3 in time;nojoin 3 in time;"
check_eq "torchrun, two launches of two GPUs: rank 0 merged 4 ranks' 4 steps into one ranks.csv, each equal to its model" \
    "$(awk -F, 'NR > 1 && $9 == "ok" { n++; r[$1] = 1; if ($3 != $5 || $4 != $6) bad++ } END { print n + 0, length(r), bad + 0 }' "$pr/torchrun/ranks.csv")" "16 4 0"
check_eq "... and every rank's check passed" "$(grep -c '^--verify passed' "$pr/torchrun/verify.txt")" 4

# ---- C24 on the GPUs ----------------------------------------------------------
for n in h100x2 h100x4; do
    c=$fx/$n/c24.csv g=${n#h100x}
    check_eq "$n: C24 measured every wrapper on every rank: peak, end of step and step time" \
        "$(grep -c "^C24,sharded_training,\(ddp\|zero2\|fsdp\)_rank[0-9],ranks,$g,\(peak_allocated\|allocated_end\|step_time\)," "$c")" \
        "$((9 * g))"
    check_eq "$n: ... every rank's figures equal the host model's at every step" \
        "$(grep ',peak_allocated,' "$c" | grep -vc 'the host model equals it at every step')" 0
    check_eq "$n: ... no verification failed" "$(grep -c ',verification,' "$c")" 0
    check_eq "$n: ... PyTorch's per-rank peaks (beside) equal the suite's" \
        "$(awk -F, 'NR == FNR { if ($6 == "peak_allocated") s[$3] = $9; next }
                    $6 == "peak_allocated" { v = $3; sub(/^pytorch:/, "", v); if (s[v] != $9) print v }' "$c" "$fx/$n/c24_pytorch.csv")" ""
done

# ---- sharded_model's GPU flags, refused before any GPU work -----------------------
net="--mode ddp --world 2 --layers 2 --in 8 --width 8 --out 8 --batch 2"
refused() { # WHAT WANT_EXIT ARGS...: that exit, one line on stderr, nothing on stdout
    local what=$1 want=$2 rc; shift 2
    "$model" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
    check_eq "$what" "$rc:$(wc -l < "$tmp/err"):$(wc -c < "$tmp/out")" "$want:1:0"
}
refused_under() { # WHAT "VAR=V ..." ARGS...: a launcher's variables set, exit 2 as refused
    local what=$1 vars=$2 rc; shift 2
    # shellcheck disable=SC2086
    env $vars "$model" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
    check_eq "$what" "$rc:$(wc -l < "$tmp/err"):$(wc -c < "$tmp/out")" "2:1:0"
}
# shellcheck disable=SC2086
{
refused "sharded_model --verify without --gpu: exit 2, one line" 2 $net --verify
refused "... --pause-ms without --gpu" 2 $net --pause-ms 10
refused "... --inject of an unknown fault" 2 $net --gpu --inject boom:1:1
refused "... --inject with a trailing word" 2 $net --gpu --inject oom:1:1x
refused "... --deadline 0" 2 $net --gpu --deadline 0
refused "... --pause-ms past a minute" 2 $net --gpu --pause-ms 70000
refused "... --gpu over 17 GPUs" 2 --mode ddp --world 17 --layers 2 --in 8 --width 8 --out 8 --batch 2 --gpu
refused "... --gpu with --trace" 2 $net --gpu --trace "$tmp/t"
refused_under "... under a launcher that set RANK and WORLD_SIZE but not LOCAL_RANK" "RANK=0 WORLD_SIZE=2" $net --gpu
refused_under "... under torchrun with 3 ranks for --world 2" \
    "RANK=0 WORLD_SIZE=3 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500" $net --gpu
refused "... --threads without --gpu" 2 $net --threads
refused "... --ranks-out without --gpu" 2 $net --ranks-out "$tmp"
refused "... --ranks-out with no launcher" 2 $net --gpu --ranks-out "$tmp"
refused "... --inject kill with --threads (it would kill every rank)" 2 $net --gpu --threads --inject kill:1:1
refused "... --inject kill past --world" 2 $net --gpu --inject kill:2:1
refused_under "... --threads under torchrun" \
    "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500" $net --gpu --threads
refused_under "... --ranks-out that is not a folder" \
    "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500" $net --gpu --ranks-out "$tmp/none"
touch "$tmp/rank1.csv"
refused_under "... --ranks-out that holds this rank's figures already (never overwritten)" \
    "RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500" $net --gpu --ranks-out "$tmp"
}
check_eq "... which left the figures there as they were" "$(wc -c < "$tmp/rank1.csv")" 0
check "... which wrote no trace" test ! -e "$tmp/t"

# ---- sharded_speed.py --model transformer, on hand-made files -----------------
# Two ranks, four steps; rank 0's step times at steps 3 and 4 (the ones
# summarised, after WARM = 2) chosen so that the medians are plain numbers.
speed=$root/tests/torch/sharded_speed.py
tfm_suite() { # FILE T3 T4 [STEP: rank 1's model_peak off there]
    awk -v t3="$2" -v t4="$3" -v bad="${4:-0}" 'BEGIN {
        print "rank,step,peak_allocated,allocated_end,model_peak,model_end,step_time_s,loss,status"
        for (q = 0; q < 2; q++) for (s = 1; s <= 4; s++) {
            p = (s == 1) ? 1000 : 1100 + 8 * q
            t = (q == 0 && s == 3) ? t3 : (q == 0 && s == 4) ? t4 : (s == 1 ? 0.5 : 0.015)
            printf "%d,%d,%d,600,%d,600,%s,%.2f,ok\n", q, s, p, p + (q == 1 && s == bad ? 512 : 0), t, 1 - s / 10
        } }' > "$1"
}
tfm_torch() { # FILE RANK T3 T4 [STEP: peak off there]
    awk -v q="$2" -v t3="$3" -v t4="$4" -v bad="${5:-0}" 'BEGIN {
        print "step,peak_allocated,allocated_end,peak_reserved,status,step_time_s"
        for (s = 1; s <= 4; s++)
            printf "%d,%d,600,2097152,ok,%s\n", s, ((s == 1) ? 1000 : 1100 + 8 * q) + (s == bad ? 512 : 0),
                   s == 3 ? t3 : s == 4 ? t4 : 0.5 }' > "$1"
}
o=$tmp/tfm
mkdir -p "$o/torch"
printf 'pause_ms=300\nsteps=4\ngpus=2\nmodel=transformer\n' > "$o/run.txt"
tfm_suite "$o/tfm768_zero2.suite1.csv" 0.010 0.012
tfm_suite "$o/tfm768_zero2.suite2.csv" 0.011 0.013
echo "sharded_model: --verify passed: parameters within 1e-07 of one GPU's" > "$o/tfm768_zero2.verify.txt"
tfm_torch "$o/torch/tfm768_zero2.rank0.csv" 0 0.020 0.022
tfm_torch "$o/torch/tfm768_zero2.rank1.csv" 1 0.5 0.5
# fsdp: rank 1's step 4 peak off PyTorch's, a model figure off in the second run, the check failed
tfm_suite "$o/tfm768_fsdp.suite1.csv" 0.020 0.024
tfm_suite "$o/tfm768_fsdp.suite2.csv" 0.025 0.027 3
echo "sharded_model: --verify FAILED: rank 1, parameter 3" > "$o/tfm768_fsdp.verify.txt"
tfm_torch "$o/torch/tfm768_fsdp.rank0.csv" 0 0.040 0.044
tfm_torch "$o/torch/tfm768_fsdp.rank1.csv" 1 0.5 0.5 4
want=$(printf '%s\n' \
    "name	mode	gpus	suite_ms	torch_ms	ratio	suite1_ms	suite2_ms	suite_peak	torch_peak	model_peak	gpu_equals_model	gpu_equals_torch	verify	suite_pause_ms" \
    "tfm768	zero2	2	11.500000	21.000000	0.5476	11.000000	12.000000	1100	1100	1100	yes	yes	passed	300" \
    "tfm768	fsdp	2	24.500000	42.000000	0.5833	22.000000	26.000000	1100	1100	1100	no	no	FAILED	300")
python3 "$speed" "$o" --model transformer --summarize > "$tmp/out" 2>&1; rc=$?
check_eq "sharded_speed --model transformer --summarize: exit 0, zero2 then fsdp (no ddp), every column" \
    "$rc:$(cat "$o/speed.tsv")" "0:$want"
python3 "$speed" "$o" --model transformer --only tfm768 --steps 3 --gpus 4 --summarize > /dev/null 2>&1; rc=$?
check_eq "... the same with --only tfm768, --steps and --gpus (ignored when summarising)" "$rc:$(cat "$o/speed.tsv")" "0:$want"
python3 "$speed" "$o" --model transformer --only tfm1024 --summarize > /dev/null 2>&1; rc=$?
check_eq "... --only a configuration with no files: exit 0, the header alone" "$rc:$(cat "$o/speed.tsv")" "0:${want%%$'\n'*}"
python3 "$speed" "$o" --summarize > "$tmp/out" 2>&1; rc=$?
check_eq "... without --model transformer over its run: exit 2, speed.tsv left as it was" \
    "$rc:$(grep -c 'holds a --model transformer run' "$tmp/out"):$(wc -l < "$o/speed.tsv")" "2:1:1"
python3 "$speed" "$o" --model transformer --only w1024_adam --summarize > "$tmp/out" 2>&1; rc=$?
check_eq "... --only an MLP configuration with --model transformer: exit 2, naming the transformer's" \
    "$rc:$(grep -c 'tfm768,tfm1024' "$tmp/out")" "2:1"
mv "$o/torch/tfm768_fsdp.rank1.csv" "$tmp/r1.csv"
: > "$o/tfm768_zero2.suite2.csv" # a run that printed nothing
python3 "$speed" "$o" --model transformer --summarize > "$tmp/out" 2>&1; rc=$?
check_eq "... a rank's PyTorch figures missing, a suite run empty: exit 1, no row for either, no traceback" \
    "$rc:$(awk 'NR > 1' "$o/speed.tsv" | wc -l):$(grep -c Traceback "$tmp/out")" "1:0:0"

# The run without GPUs: subprocess.run stubbed, the command lines and
# PyTorch's configuration file recorded (ROOT, PY: the repository, python3).
stub_run() { # SUITE_EXIT PYTORCH_EXIT ARGS...: sharded_speed's main with every command recorded
    python3 - "$root" "$@" <<'EOF'
import os, sys
root, suite_rc, torch_rc, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, os.path.join(root, "tests", "torch"))
import sharded_speed as s

class Done:
    def __init__(self, rc, out=""):
        self.returncode, self.stdout, self.stderr = rc, out, ""

def run(cmd, **kw):
    line = " ".join(cmd).replace(sys.executable, "PY").replace(root, "ROOT")
    if "--configs" in cmd:
        with open(cmd[cmd.index("--configs") + 1]) as f:
            line += "  [" + f.read().strip().replace("\t", " | ") + "]"
    print(line.replace(out, "OUT"))
    return Done(torch_rc if "--configs" in cmd else suite_rc)

s.subprocess.run = run
sys.argv = ["sharded_speed.py"] + sys.argv[4:]
sys.stderr = open(os.devnull, "w")
print("exit", s.main())
EOF
}
net768=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sharded_speed as s; print(dict(s.TFM_CONFIGS)["tfm768"])' "$root/tests/torch")
check_eq "the brief's tfm768 is among the transformer's configurations" "$net768" \
    "--d-model 768 --heads 12 --enc-layers 6 --ff 3072 --dropout 0 --activation gelu --seq 512 --batch 8 --optimizer adam"
got=$(stub_run 0 0 "$tmp/run" --model transformer --gpus 4 --steps 3 --only tfm768)
s1="ROOT/build/sharded_model --model transformer --gpu"
t1="PY ROOT/tests/torch/fsdp_transformer_reference.py OUT/torch --configs"
check_eq "--model transformer: suite with --verify, PyTorch (--no-history, its one line), suite; zero2 then fsdp" "$got" \
    "$(printf '%s\n' \
    "$s1 --mode zero2 --world 4 --steps 3 --pause-ms 300 $net768 --verify" \
    "$t1 OUT/torch/tfm768_zero2.conf --no-history --steps 3 --gpus 4  [tfm768_zero2 | --mode zero2 $net768]" \
    "$s1 --mode zero2 --world 4 --steps 3 --pause-ms 300 $net768" \
    "$s1 --mode fsdp --world 4 --steps 3 --pause-ms 300 $net768 --verify" \
    "$t1 OUT/torch/tfm768_fsdp.conf --no-history --steps 3 --gpus 4  [tfm768_fsdp | --mode fsdp $net768]" \
    "$s1 --mode fsdp --world 4 --steps 3 --pause-ms 300 $net768" \
    "exit 1")"
check_eq "... its run.txt says which model it ran" "$(cat "$tmp/run/run.txt")" "$(printf 'pause_ms=300\nsteps=3\ngpus=4\nmodel=transformer')"
net=$(awk -F'\t' '$1 == "odd_momentum" { print $2 }' "$tmp/configs")
check_eq "--model mlp (the default): the MLP's runs as before, ddp first, no --model flag, no model= in run.txt" \
    "$(stub_run 0 0 "$tmp/mlp" --only odd_momentum | head -2)$(grep -c model= "$tmp/mlp/run.txt")" \
    "$(printf '%s\n' \
    "ROOT/build/sharded_model --gpu --mode ddp --world 2 --steps 8 --pause-ms 300 $net --verify" \
    "PY ROOT/tests/torch/fsdp_reference.py OUT/torch --configs OUT/torch/odd_momentum_ddp.conf --steps 8 --gpus 2  [odd_momentum_ddp | --mode ddp $net]")0"
first_words() { awk '{ printf "%s%s", (NR > 1 ? " " : ""), ($1 == "exit" ? $0 : $1) }'; }
check_eq "PyTorch's reference waived (exit 77): sharded_speed stops there with 77" \
    "$(stub_run 0 77 "$tmp/w" --model transformer --only tfm1024 | first_words)" "ROOT/build/sharded_model PY exit 77"
check_eq "the suite waived (no NCCL, too few GPUs): 77 before PyTorch is started" \
    "$(stub_run 77 0 "$tmp/w" --model transformer --only tfm1024 | first_words)" "ROOT/build/sharded_model exit 77"

# Without torch: both scripts' --help; the reference refuses --trace with --no-history.
check "sharded_speed.py --help names the transformer's configurations" \
    sh -c "python3 '$speed' --help | tr -s ' \n' '  ' | grep -q 'transformer: tfm768,tfm1024'"
check "fsdp_transformer_reference.py --help offers --no-history" \
    sh -c "python3 '$root/tests/torch/fsdp_transformer_reference.py' --help | grep -q -- '--no-history'"
python3 "$root/tests/torch/fsdp_transformer_reference.py" "$tmp/x" --trace --no-history > /dev/null 2>&1; rc=$?
check_eq "fsdp_transformer_reference.py --trace --no-history: exit 2 (the trace is the history)" "$rc" 2
summary
