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
# of memory and a rank that hangs. C24's own runs. And sharded_model's
# refusals of its GPU flags, which need no GPU.
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
summary
