#!/usr/bin/env bash
# scripts/tfm-speed without a GPU, on synthetic per-step CSVs whose medians
# are known: warm-up rows dropped (default 2, --warmup), steps not ok left
# out, medians of odd and even counts, the ratio and its verdict (ok at
# exactly 1.0x, slower above, --limit), the CSV on stdout or written with
# --csv, the --dir layout, and bad input (missing file, no data rows, no
# timed step, a step time that is not a number, a model-only CSV, wrong
# arguments) refused with exit 2, one line and nothing written.
#   tests/scripts/test_tfm_speed.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
speed=$root/scripts/tfm-speed
header="step,peak_allocated,allocated_end,peak_reserved,reserved_end,step_time_s,loss,loss_scale,skipped,status,peak_weights,peak_casts,peak_grads,peak_optimizer,peak_activations,peak_workspace,peak_other"

# steps FILE TIME...: a per-step CSV with those step times (a time
# "oom:T" is a step with status oom).
steps() {
    local f=$1 i=0 t st
    shift
    echo "$header" > "$f"
    for t in "$@"; do
        i=$((i + 1)) st=ok
        case $t in oom:*) st=oom; t=${t#oom:} ;; esac
        echo "$i,1000,900,2097152,2097152,$t,1.5,1,0,$st,,,,,,," >> "$f"
    done
}
# field CSV NAME COLUMN: a column of a configuration's row of the table.
field() { awk -F, -v n="$2" -v c="$3" '$1 == n { print $c }' "$1"; }

# Suite faster: warm-up 3.0 and 2.5 s dropped; medians 0.010 (odd count) and
# 0.020 (even: 0.018 and 0.022).
steps "$tmp/fast_s.csv" 3.0 2.5 0.012 0.010 0.009
steps "$tmp/fast_p.csv" 4.0 0.5 0.025 0.018 0.022 0.001
# Suite slower, 1.5x; an out-of-memory step (not timed) in the suite's.
steps "$tmp/slow_s.csv" 1 1 0.03 oom:0.0001 0.03 0.03
steps "$tmp/slow_p.csv" 1 1 0.02 0.02 0.02
# Exactly equal medians: 1.0x is ok. Times in exponent notation.
steps "$tmp/eq_s.csv" 1 1 5e-3 5.0e-03
steps "$tmp/eq_p.csv" 1 1 0.005 5E-3

out=$("$speed" fast "$tmp/fast_s.csv" "$tmp/fast_p.csv" slow "$tmp/slow_s.csv" "$tmp/slow_p.csv" \
      equal "$tmp/eq_s.csv" "$tmp/eq_p.csv" 2>"$tmp/summary"); rc=$?
printf '%s\n' "$out" > "$tmp/table.csv"
check_eq "three configurations: exit 0" "$rc" 0
check_eq "the table's header" "$(head -1 "$tmp/table.csv")" \
    "name,suite_median_s,pytorch_median_s,ratio,verdict,suite_n,suite_min_s,suite_max_s,pytorch_n,pytorch_min_s,pytorch_max_s,suite_runs,suite1_median_s,suite2_median_s"
check_eq "one row per configuration, in order" "$(cut -d, -f1 "$tmp/table.csv" | tail -n +2 | tr '\n' ' ')" "fast slow equal "
check_eq "suite median of an odd count after 2 warm-up rows" "$(field "$tmp/table.csv" fast 2)" 0.01
check_eq "pytorch median of an even count: the mean of the middle two" "$(field "$tmp/table.csv" fast 3)" 0.02
check_eq "ratio suite/pytorch" "$(field "$tmp/table.csv" fast 4)" 0.5000
check_eq "faster: ok" "$(field "$tmp/table.csv" fast 5)" ok
check_eq "steps counted after the warm-up" "$(field "$tmp/table.csv" fast 6),$(field "$tmp/table.csv" fast 9)" 3,4
check_eq "spread: suite min and max" "$(field "$tmp/table.csv" fast 7),$(field "$tmp/table.csv" fast 8)" 0.009,0.012
check_eq "spread: pytorch min and max" "$(field "$tmp/table.csv" fast 10),$(field "$tmp/table.csv" fast 11)" 0.001,0.025
check_eq "1.5x slower" "$(field "$tmp/table.csv" slow 4),$(field "$tmp/table.csv" slow 5)" 1.5000,slower
check_eq "an out-of-memory step is not timed" "$(field "$tmp/table.csv" slow 6),$(field "$tmp/table.csv" slow 7)" 3,0.03
check_eq "exactly 1.0x is ok (at most 1.0x)" "$(field "$tmp/table.csv" equal 4),$(field "$tmp/table.csv" equal 5)" 1.0000,ok
check "the summary names each configuration in milliseconds" \
    grep -Eq '^fast +10\.000 +20\.000 +0\.500x  ok' "$tmp/summary"
check "the summary counts the verdicts and names the slowest" \
    grep -q "^2 of 3 configurations at most 1x PyTorch eager's median step time (first 2 steps dropped); slowest: slow at 1.500x$" "$tmp/summary"
check_eq "the summary goes to stderr, not into the table" "$(grep -c configurations "$tmp/table.csv")" 0

# --warmup 0 keeps the warm-up rows; --limit moves the verdict.
"$speed" --warmup 0 fast "$tmp/fast_s.csv" "$tmp/fast_p.csv" > "$tmp/w0.csv" 2>/dev/null
check_eq "--warmup 0: every row timed" "$(field "$tmp/w0.csv" fast 6),$(field "$tmp/w0.csv" fast 2)" 5,0.012
"$speed" --warmup 4 fast "$tmp/fast_s.csv" "$tmp/fast_p.csv" > "$tmp/w4.csv" 2>/dev/null
check_eq "--warmup 4: the last row only" "$(field "$tmp/w4.csv" fast 6),$(field "$tmp/w4.csv" fast 2)" 1,0.009
"$speed" --limit 1.6 slow "$tmp/slow_s.csv" "$tmp/slow_p.csv" > "$tmp/l.csv" 2>/dev/null
check_eq "--limit 1.6: 1.5x is ok" "$(field "$tmp/l.csv" slow 5)" ok

# --csv writes the file and prints the summary on stdout.
sum=$("$speed" --csv "$tmp/out.csv" fast "$tmp/fast_s.csv" "$tmp/fast_p.csv" 2>&1); rc=$?
check_eq "--csv: exit 0" "$rc" 0
check_eq "--csv writes the same table" "$(cat "$tmp/out.csv")" "$(head -2 "$tmp/table.csv")"
check "--csv: the summary on stdout" grep -q "^1 of 1 configurations" <<<"$sum"
check_eq "--csv leaves no temporary file" "$(ls "$tmp" | grep -c 'out.csv.tmp')" 0

# --dir DIR: DIR/NAME/suite.csv and DIR/NAME/pytorch.csv, names in order.
mkdir -p "$tmp/run/b_slow" "$tmp/run/a_fast"
cp "$tmp/slow_s.csv" "$tmp/run/b_slow/suite.csv"; cp "$tmp/slow_p.csv" "$tmp/run/b_slow/pytorch.csv"
cp "$tmp/fast_s.csv" "$tmp/run/a_fast/suite.csv"; cp "$tmp/fast_p.csv" "$tmp/run/a_fast/pytorch.csv"
echo "not a configuration" > "$tmp/run/notes.txt"
"$speed" --dir "$tmp/run" > "$tmp/dir.csv" 2>/dev/null; rc=$?
check_eq "--dir: exit 0" "$rc" 0
check_eq "--dir: one row per folder, sorted, files ignored" "$(cut -d, -f1,4,5 "$tmp/dir.csv" | tail -n +2 | tr '\n' ' ')" \
    "a_fast,0.5000,ok b_slow,1.5000,slower "
check_eq "--dir without suite2.csv: one suite run" "$(field "$tmp/dir.csv" a_fast 12),$(field "$tmp/dir.csv" a_fast 13),$(field "$tmp/dir.csv" a_fast 14)" "1,0.01,"

# suite2.csv: the suite's median over both runs' timed steps (0.010 0.012
# 0.009 and 0.030 0.031 0.032 0.033: pooled median 0.030), each run's own
# median kept (0.010, 0.0315).
steps "$tmp/run/a_fast/suite2.csv" 9 9 0.030 0.031 0.032 0.033
# A configuration the runner marked failed: a status file, no pytorch.csv.
mkdir -p "$tmp/run/c_oom"
cp "$tmp/fast_s.csv" "$tmp/run/c_oom/suite.csv"
printf 'suite ok 3.1\npytorch oom 9.0 torch.OutOfMemoryError\n' > "$tmp/run/c_oom/status"
"$speed" --dir "$tmp/run" > "$tmp/dir2.csv" 2>"$tmp/dir2.sum"; rc=$?
check_eq "--dir with suite2.csv and a failed folder: exit 0" "$rc" 0
check_eq "suite2: pooled median, steps, min and max of both runs" \
    "$(field "$tmp/dir2.csv" a_fast 2),$(field "$tmp/dir2.csv" a_fast 6),$(field "$tmp/dir2.csv" a_fast 7),$(field "$tmp/dir2.csv" a_fast 8)" \
    "0.03,7,0.009,0.033"
check_eq "suite2: ratio of the pooled median" "$(field "$tmp/dir2.csv" a_fast 4),$(field "$tmp/dir2.csv" a_fast 5)" "1.5000,slower"
check_eq "suite2: two runs, each run's median" \
    "$(field "$tmp/dir2.csv" a_fast 12),$(field "$tmp/dir2.csv" a_fast 13),$(field "$tmp/dir2.csv" a_fast 14)" "2,0.01,0.0315"
check_eq "a folder with a status and no pytorch.csv: not measured, no figures" \
    "$(grep '^c_oom,' "$tmp/dir2.csv")" "c_oom,,,,not-measured,0,,,0,,,0,,"
check "the summary names the configuration not measured" grep -q '^not measured (see DIR/NAME/status): c_oom$' "$tmp/dir2.sum"
check "the summary counts only the measured ones" grep -q '^0 of 2 configurations at most 1x' "$tmp/dir2.sum"
check "the summary gives both suite runs" grep -Eq '^a_fast .*suite runs 10\.000 and 31\.500 ms\)$' "$tmp/dir2.sum"
rm -r "$tmp/run/c_oom" "$tmp/run/a_fast/suite2.csv"

# ------------------------------------------------------------ bad input
# refused WHAT ARGS...: exit 2, exactly one line on stderr, nothing on stdout.
refused() {
    local what=$1 err rc
    shift
    "$speed" "$@" > "$tmp/bad.out" 2> "$tmp/bad.err"; rc=$?
    err=$(cat "$tmp/bad.err")
    if [ "$rc" -eq 2 ] && [ "$(wc -l < "$tmp/bad.err")" -eq 1 ] && [ ! -s "$tmp/bad.out" ] \
       && [[ $err == tfm-speed:* ]]; then
        pass "bad input refused: $what ($err)"
    else
        failure "bad input refused: $what" "exit $rc, stdout $(wc -c < "$tmp/bad.out") bytes, stderr: $err"
    fi
}
echo "$header" > "$tmp/header_only.csv"
: > "$tmp/empty.csv"
steps "$tmp/short.csv" 1 1
steps "$tmp/all_oom.csv" 1 1 oom:1 oom:1
steps "$tmp/nan.csv" 1 1 0.01 abc
steps "$tmp/zero.csv" 1 1 0.01 0
steps "$tmp/neg.csv" 1 1 0.01 -0.01
steps "$tmp/model_only.csv" "" "" "" ""
echo "step,peak_allocated,status" > "$tmp/no_time.csv"; echo "1,5,ok" >> "$tmp/no_time.csv"
refused "missing suite file" a "$tmp/none.csv" "$tmp/fast_p.csv"
refused "missing pytorch file" a "$tmp/fast_s.csv" "$tmp/none.csv"
refused "header, no data rows" a "$tmp/header_only.csv" "$tmp/fast_p.csv"
refused "empty file" a "$tmp/fast_s.csv" "$tmp/empty.csv"
refused "only warm-up rows" a "$tmp/short.csv" "$tmp/fast_p.csv"
refused "no step ok after the warm-up" a "$tmp/all_oom.csv" "$tmp/fast_p.csv"
refused "a step time that is not a number" a "$tmp/fast_s.csv" "$tmp/nan.csv"
refused "a step time of zero" a "$tmp/zero.csv" "$tmp/fast_p.csv"
refused "a negative step time" a "$tmp/neg.csv" "$tmp/fast_p.csv"
refused "a --model-only CSV (no step times)" a "$tmp/model_only.csv" "$tmp/fast_p.csv"
refused "no step_time_s column" a "$tmp/no_time.csv" "$tmp/fast_p.csv"
refused "a bad file after a good configuration" a "$tmp/fast_s.csv" "$tmp/fast_p.csv" b "$tmp/nan.csv" "$tmp/fast_p.csv"
refused "arguments not in triples" a "$tmp/fast_s.csv"
refused "no arguments"
refused "a name given twice" a "$tmp/fast_s.csv" "$tmp/fast_p.csv" a "$tmp/fast_s.csv" "$tmp/fast_p.csv"
refused "a name with a comma" "a,b" "$tmp/fast_s.csv" "$tmp/fast_p.csv"
refused "--warmup not a number" --warmup x a "$tmp/fast_s.csv" "$tmp/fast_p.csv"
refused "--limit 0" --limit 0 a "$tmp/fast_s.csv" "$tmp/fast_p.csv"
refused "an unknown option" --fast a "$tmp/fast_s.csv" "$tmp/fast_p.csv"
refused "--dir that does not exist" --dir "$tmp/nowhere"
mkdir -p "$tmp/emptyrun" "$tmp/halfrun/x"
cp "$tmp/fast_s.csv" "$tmp/halfrun/x/suite.csv"
refused "--dir with no configuration folder" --dir "$tmp/emptyrun"
refused "--dir with a folder lacking pytorch.csv (no status file)" --dir "$tmp/halfrun"
mkdir -p "$tmp/badrun2/x"
cp "$tmp/fast_s.csv" "$tmp/badrun2/x/suite.csv"; cp "$tmp/fast_p.csv" "$tmp/badrun2/x/pytorch.csv"
cp "$tmp/nan.csv" "$tmp/badrun2/x/suite2.csv"
refused "--dir with a malformed suite2.csv" --dir "$tmp/badrun2"
refused "--dir with triples as well" --dir "$tmp/run" a "$tmp/fast_s.csv" "$tmp/fast_p.csv"
"$speed" --csv "$tmp/badout.csv" a "$tmp/fast_s.csv" "$tmp/nan.csv" 2>/dev/null
check_eq "bad input with --csv writes nothing" "$(ls "$tmp" | grep -c badout)" 0

summary
