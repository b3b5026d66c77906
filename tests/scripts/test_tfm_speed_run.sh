#!/usr/bin/env bash
# The Transformer's speed configurations and their device-side runner,
# without a GPU:
# - tests/fixtures/transformer_speed/configs.txt: every line parses in
#   build/workload --model-only and in transformer_reference.py, the seeds'
#   flags are transformer/configs.txt's, and each configuration's peak
#   comment is the model's (within 2%) and far below an H100's memory;
# - scripts/tfm-speed-run over a stand-in build/workload (written here:
#   behaviour chosen by --seq) and tests/torch/stub's torch: the runs
#   interleaved per configuration (suite, PyTorch, suite again), a failure,
#   an out-of-memory step, a time-out and a PyTorch out-of-memory each
#   recorded in status while the rest go on, --only, --total, --profile with
#   and without the profiling tools, and bad usage (exit 2, one line).
#   tests/scripts/test_tfm_speed_run.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
no_model_checks
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 2
export PYTHONDONTWRITEBYTECODE=1
list=tests/fixtures/transformer_speed/configs.txt
runner=$root/scripts/tfm-speed-run

# ------------------------------------------------------------ the committed list
# Peaks a real configuration may reach: 56 GiB, 70% of an H100's 80 GB,
# leaves room for what the model does not count (the CUDA context, cuDNN's
# and cuBLAS's own buffers, PyTorch's differences of up to 5%).
fit_gib=56
grep -v '^#' "$list" | grep -v '^$' > "$tmp/list"
check_eq "the list: 12-14 configurations" "$(awk 'END { print (NR >= 12 && NR <= 14) }' "$tmp/list")" 1
check_eq "the list: each line NAME<TAB>flags ending in --steps 12" \
    "$(awk -F'\t' 'NF != 2 || $2 !~ / --steps 12$/' "$tmp/list")" ""
for seed in seed_t256_adam_fp32_accum4 seed_t512_bf_adam_fp16; do
    flags_of() { awk -F'\t' -v n="$seed" '$1 == n { sub(/ --steps [0-9]+$/, "", $2); print $2 }' "$1"; }
    check_eq "the list holds $seed with transformer/configs.txt's flags" "$(flags_of "$list")" \
        "$(flags_of tests/fixtures/transformer/configs.txt)"
done
while IFS=$'\t' read -r name flags; do
    # shellcheck disable=SC2086 # the flags are words
    "$build/workload" $flags --model-only --steps 2 > "$tmp/m.csv" 2> "$tmp/m.err"; rc=$?
    got=$(awk -F, 'NR > 1 { if ($2 > a) a = $2; if ($4 > r) r = $4 } END { printf "%.4f %.4f", a / 2^30, r / 2^30 }' "$tmp/m.csv")
    want=$(awk -v n="$name" '$1 == "#" && $2 == "peak" && $3 == n { print $4, $5 }' "$list")
    res=$(awk -v g="$got" -v w="$want" -v fit="$fit_gib" 'BEGIN {
        split(g, a, " "); split(w, b, " ")
        if (w == "") { print "no peak comment"; exit }
        for (i = 1; i <= 2; i++) if (a[i] < 0.98 * b[i] - 0.01 || a[i] > 1.02 * b[i] + 0.01) { print "model " g " GiB, comment " w; exit }
        if (a[2] > fit) { print "reserved " a[2] " GiB > " fit; exit }
        print "ok" }')
    check_eq "$name: --model-only runs (exit 0) and its peaks are the comment's ($want GiB), below $fit_gib GiB" "$rc $res" "0 ok"
done < "$tmp/list"
check_eq "every peak comment names a configuration of the list" \
    "$(awk '$1 == "#" && $2 == "peak" && $3 != "NAME" { print $3 }' "$list" | sort)" "$(cut -f1 "$tmp/list" | sort)"
python3 - "$list" > "$tmp/py.err" 2>&1 <<'EOF'
import sys
sys.path.insert(0, "tests/torch")
import transformer_reference as t
for line in open(sys.argv[1]):
    if line.strip() and not line.startswith("#"):
        name, flags = line.rstrip("\n").split("\t", 1)
        t.Cfg(flags, 6)
EOF
check_eq "transformer_reference.py's parser takes every configuration" "$?" 0

# ------------------------------------------------------------ the runner
# A stand-in for build/workload: per-step CSVs of 12 ms steps (the first two
# 100 ms). --seq 97: a CUDA error (exit 3); 98: hangs; 99: an out-of-memory
# step. --help mentions --profile when STUB_WL_PROFILE is set, and
# --profile-csv FILE writes a kind,ms,share CSV there (build/workload's flag).
cat > "$tmp/workload" <<'EOF'
#!/usr/bin/env bash
seq="" steps=10 prof="" verify=0
while [ $# -gt 0 ]; do
    case $1 in
        --help) echo "usage: workload"; [ -z "${STUB_WL_PROFILE:-}" ] || echo "  --profile-csv FILE"; exit 0 ;;
        --seq) seq=$2; shift ;;
        --steps) steps=$2; shift ;;
        --profile-csv) prof=$2; shift ;;
        --verify) verify=1 ;;
    esac
    shift
done
[ $verify -eq 0 ] || { echo "verify: tfm 3 checks, 0 failed"; exit 0; }
case $seq in
    97) echo "workload: CUDA error: an illegal memory access" >&2; exit 3 ;;
    98) sleep 60 ;;
esac
echo "step,peak_allocated,allocated_end,peak_reserved,reserved_end,step_time_s,loss,loss_scale,skipped,status"
for ((i = 1; i <= steps; i++)); do
    t=0.012 st=ok
    [ $i -le 2 ] && t=0.1
    [ "$seq" = 99 ] && [ $i -eq 3 ] && st=oom
    echo "$i,1000,900,2097152,2097152,$t,1.5,1,0,$st"
done
[ -z "$prof" ] || printf 'kind,ms,share\ngemm,6,0.5\nattention,6,0.5\ntotal,12,1\n' > "$prof"
EOF
chmod +x "$tmp/workload"
tiny="--arch encoder --d-model 64 --heads 4 --enc-layers 2 --ff 128 --batch 8 --optimizer sgd --precision fp32 --steps 6"
printf '# a comment\n\nok_a\t%s\nfail_b\t%s\noom_c\t%s\nhang_d\t%s\n' \
    "$tiny --seq 32" "$tiny --seq 97" "$tiny --seq 99" "$tiny --seq 98" > "$tmp/configs.txt"
export PYTHONPATH=$root/tests/torch/stub
run() { "$runner" --workload "$tmp/workload" "$@"; }

run --limit 5 "$tmp/configs.txt" "$tmp/out" 2> "$tmp/err"; rc=$?
o=$tmp/out
check_eq "a run with failures: exit 1 after all configurations" "$rc" 1
check_eq "each configuration's folder" "$(cd "$o" && ls -d */ | tr -d / | tr '\n' ' ')" "fail_b hang_d ok_a oom_c "
check_eq "ok_a: suite, PyTorch, suite again, in that order, each ok" "$(cut -d' ' -f1,2 "$o/ok_a/status" | tr '\n' ,)" \
    "suite ok,pytorch ok,suite2 ok,"
check "ok_a: suite.csv, pytorch.csv, pytorch.meta, suite2.csv" \
    test -s "$o/ok_a/suite.csv" -a -s "$o/ok_a/pytorch.csv" -a -s "$o/ok_a/pytorch.meta" -a -s "$o/ok_a/suite2.csv"
check_eq "ok_a: PyTorch's CSV has the flags' 6 steps (transformer_reference.py through the stub torch)" \
    "$(($(wc -l < "$o/ok_a/pytorch.csv") - 1))" 6
check_eq "ok_a: no temporary file left" "$(ls -A "$o/ok_a" | grep -c '^\.')" 0
check "fail_b: the CUDA error recorded with its exit and last line" \
    grep -q '^suite failed [0-9.]* exit 3: workload: CUDA error: an illegal memory access$' "$o/fail_b/status"
check "fail_b: PyTorch still ran after the suite failed" grep -q '^pytorch ok ' "$o/fail_b/status"
check "fail_b: no suite.csv" test ! -e "$o/fail_b/suite.csv"
check "oom_c: an out-of-memory step recorded" grep -q "^suite oom [0-9.]* a step's status is not ok$" "$o/oom_c/status"
check "oom_c: its CSV kept as suite.failed.csv, not as suite.csv" test -s "$o/oom_c/suite.failed.csv" -a ! -e "$o/oom_c/suite.csv"
check "hang_d: the time-out recorded" grep -q '^suite timeout [0-9.]* after [0-9]* s$' "$o/hang_d/status"
check_eq "hang_d: the runs after it skipped (no time left of --limit)" "$(cut -d' ' -f1,2 "$o/hang_d/status" | tail -2 | tr '\n' ,)" \
    "pytorch skipped,suite2 skipped,"
check_eq "configs.txt: the configurations of the run" "$(grep -v '^#' "$o/configs.txt" | cut -f1 | tr '\n' ' ')" "ok_a fail_b oom_c hang_d "
check "gpu.txt and run.txt written" test -s "$o/gpu.txt" -a -s "$o/run.txt"
check "run.txt: the limit and the end" grep -q '^limit_s=5$' "$o/run.txt"
check "run.txt: which kernels ran fp16/bf16 attention (empty: the stand-in has no build/meta beside it)" \
    grep -q '^half_attention=' "$o/run.txt"
check "speed.csv: ok_a measured" grep -Eq '^ok_a,0\.012,[0-9.e-]+,[0-9.]+,(ok|slower),' "$o/speed.csv"
check_eq "speed.csv: the others not measured" "$(grep -c ',not-measured,' "$o/speed.csv")" 3
check "progress: [i/n] NAME: RUN RESULT" grep -q '^tfm-speed-run: \[1/4\] ok_a: suite ok ' "$tmp/err"
check "progress: the configuration's ratio" grep -q '^tfm-speed-run: \[1/4\] ok_a: suite 12.000 ms, PyTorch ' "$tmp/err"
check "progress: [4/4] last" grep -q '^tfm-speed-run: \[4/4\] hang_d: suite timeout' "$tmp/err"

# PyTorch out of memory (a Python that says so and fails), --only's order.
printf '#!/bin/sh\necho "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2\nexit 1\n' > "$tmp/oompy"
chmod +x "$tmp/oompy"
run --python "$tmp/oompy" --only oom_c,ok_a "$tmp/configs.txt" "$tmp/out2" 2> "$tmp/err2"; rc=$?
check_eq "--only: just those, in its order" "$(grep -o '^tfm-speed-run: \[[0-9]/[0-9]\] [a-z_]*' "$tmp/err2" | awk '!seen[$0]++ { print $3 }' | tr '\n' ' ')" "oom_c ok_a "
check_eq "--only: configs.txt names the two (the last in the list not run)" "$(grep -v '^#' "$tmp/out2/configs.txt" | cut -f1 | tr '\n' ' ')" "ok_a oom_c "
check_eq "no temporary file left in OUTDIR" "$(ls -A "$tmp/out2" | grep -c '^\.')" 0
check "PyTorch out of memory recorded as oom" grep -q '^pytorch oom [0-9.]* exit 1$' "$tmp/out2/ok_a/status"
check_eq "PyTorch out of memory: exit 1" "$rc" 1
printf '#!/bin/sh\necho "transformer_reference: ok_a: timed out after 300 s" >&2\nexit 1\n' > "$tmp/slowpy"
chmod +x "$tmp/slowpy"
run --python "$tmp/slowpy" --only ok_a "$tmp/configs.txt" "$tmp/out2" 2>/dev/null
check "transformer_reference.py's own time-out recorded as timeout" \
    grep -q '^pytorch timeout [0-9.]* exit 1: transformer_reference: ok_a: timed out after 300 s$' "$tmp/out2/ok_a/status"

# --total: configurations after it are skipped; an earlier call's result
# stays (ok_a's, copied in), one never run gets a status saying so (oom_c).
mkdir -p "$tmp/out3" && cp -r "$o/ok_a" "$tmp/out3/"
run --limit 2 --total 1 --only hang_d,ok_a,oom_c "$tmp/configs.txt" "$tmp/out3" 2> "$tmp/err3"; rc=$?
check_eq "--total: exit 1 (runs skipped)" "$rc" 1
check "--total: the configuration after it skipped" grep -q '^tfm-speed-run: \[2/3\] ok_a: skipped (--total 1 s reached)$' "$tmp/err3"
check "--total: an earlier call's result for it stays" test -s "$tmp/out3/ok_a/suite2.csv"
check "--total: a configuration never run gets a status saying so" grep -q '^all skipped 0 --total 1 s reached$' "$tmp/out3/oom_c/status"
check_eq "--total: configs.txt names all three" "$(grep -v '^#' "$tmp/out3/configs.txt" | cut -f1 | tr '\n' ' ')" "ok_a oom_c hang_d "

# --reindex: configs.txt from the folders alone, nothing run.
rm "$tmp/out3/configs.txt"; cp "$tmp/out3/run.txt" "$tmp/run.keep"
run --reindex "$tmp/configs.txt" "$tmp/out3" 2>/dev/null; rc=$?
check_eq "--reindex: exit 0, configs.txt in the list's order" "$rc $(grep -v '^#' "$tmp/out3/configs.txt" | cut -f1 | tr '\n' ' ')" "0 ok_a oom_c hang_d "
check "--reindex: nothing run (run.txt as it was)" cmp -s "$tmp/run.keep" "$tmp/out3/run.txt"

# --profile: each tool this tree lacks is said once, and recorded.
run --profile --only ok_a "$tmp/configs.txt" "$tmp/out4" 2> "$tmp/err4"
check_eq "--profile without build/workload --profile: one line" "$(grep -c 'has no --profile option' "$tmp/err4")" 1
check "--profile without it: status says missing" grep -q '^suite_profile missing 0 ' "$tmp/out4/ok_a/status"
STUB_WL_PROFILE=1 run --profile --only ok_a "$tmp/configs.txt" "$tmp/out5" 2> "$tmp/err5"
check "--profile: the suite's profile CSV" grep -q '^attention,6,0.5$' "$tmp/out5/ok_a/suite_profile.csv"
check "--profile: its status ok" grep -q '^suite_profile ok ' "$tmp/out5/ok_a/status"
if [ -f tests/torch/profile_reference.py ]; then
    check "--profile: PyTorch's profile run recorded" grep -q '^pytorch_profile ' "$tmp/out5/ok_a/status"
else
    check_eq "--profile without profile_reference.py: one line" "$(grep -c 'no tests/torch/profile_reference.py' "$tmp/err5")" 1
    check "--profile without it: status says missing" grep -q '^pytorch_profile missing 0 ' "$tmp/out5/ok_a/status"
fi
run --verify --only ok_a "$tmp/configs.txt" "$tmp/out6" 2>/dev/null
check "--verify: verify.txt" grep -q '^verify: tfm 3 checks, 0 failed$' "$tmp/out6/verify.txt"

# ------------------------------------------------------------ bad usage
# refused WHAT ARGS...: exit 2, exactly one line on stderr.
refused() {
    local what=$1 rc
    shift
    "$runner" "$@" > /dev/null 2> "$tmp/bad.err"; rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l < "$tmp/bad.err")" -eq 1 ] && grep -q '^tfm-speed-run: ' "$tmp/bad.err"; then
        pass "bad usage refused: $what ($(cat "$tmp/bad.err"))"
    else
        failure "bad usage refused: $what" "exit $rc: $(cat "$tmp/bad.err")"
    fi
}
refused "no arguments"
refused "one argument" "$tmp/configs.txt"
refused "a missing list" --workload "$tmp/workload" "$tmp/none.txt" "$tmp/o"
refused "--only naming no configuration" --workload "$tmp/workload" --only zz "$tmp/configs.txt" "$tmp/o"
refused "--limit 0" --limit 0 "$tmp/configs.txt" "$tmp/o"
refused "an unknown option" --fast "$tmp/configs.txt" "$tmp/o"
refused "no workload program" --workload "$tmp/none" "$tmp/configs.txt" "$tmp/o"
printf 'a b\n' > "$tmp/notab.txt"
refused "a line without a tab" --workload "$tmp/workload" "$tmp/notab.txt" "$tmp/o"
printf 'a\t--seq 1\na\t--seq 2\n' > "$tmp/twice.txt"
refused "a name twice" --workload "$tmp/workload" "$tmp/twice.txt" "$tmp/o"
refused "--reindex of no folder" --reindex "$tmp/configs.txt" "$tmp/o"
check_eq "bad usage writes no output folder" "$(ls "$tmp" | grep -c '^o$')" 0
"$runner" --help > "$tmp/help"; rc=$?
check_eq "--help: exit 0" "$rc" 0
check "--help: the usage line" grep -q 'scripts/tfm-speed-run \[options\] CONFIGS OUTDIR' "$tmp/help"

summary
