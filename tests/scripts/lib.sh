# lib.sh: a minimal test harness for the shell tests. Source it, call
# `check "what" command...` or `check_that "what" <test expression result>`,
# and end with `summary`, which prints "N passed, N failed".
passed=0
failed=0
lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # tests/scripts

pass() { passed=$((passed + 1)); echo "PASS: $1"; }
failure() { failed=$((failed + 1)); echo "FAIL: $1"; [ -n "${2:-}" ] && echo "      $2"; }

# no_model_checks: for scripts that compare experiments' figures, not the
# allocator's internal state. Its invariant walk after every operation (on
# in the test build) costs seconds per Transformer run under ASan, and
# test_transformer_seq and the unit tests walk it over every configuration.
no_model_checks() { export MEMCLAIMS_MODEL_CHECKS=0; }

# check WHAT CMD...: passes when CMD exits 0.
check() {
    local what=$1; shift
    if "$@" >/dev/null 2>&1; then pass "$what"; else failure "$what" "command: $*"; fi
}

# check_eq WHAT GOT WANT
check_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else failure "$1" "got '$2', want '$3'"; fi
}

# step_col CSV N: column N of a per-step CSV (step first) as "step value" lines.
step_col() { awk -F, -v c="$2" 'NR > 1 { print $1, $c }' "$1"; }

# replay_steps REPLAY.csv: "step,peak_allocated,allocated_end" of each step
# of build/replay's output (a step runs from one reset_peak to the next, the
# last to the end; the set-up before the first is not a step).
replay_steps() {
    awk -F, 'BEGIN { print "step,peak_allocated,allocated_end" }
             NR > 1 { if ($2 == "reset_peak") { if (s) print s "," p "," a; s++ } p = $8; a = $6 }
             END { if (s) print s "," p "," a }' "$1"
}

# compare_steps WHAT OURS.csv THEIRS.csv COLUMN TOL: one check over every
# step both files have: passes when the largest relative difference of
# column COLUMN is at most TOL (a fraction); says where the worst step is.
compare_steps() {
    local what=$1 ours=$2 theirs=$3 c=$4 tol=$5 res
    res=$(join <(step_col "$ours" "$c" | sort -k1,1) <(step_col "$theirs" "$c" | sort -k1,1) |
          awk -v tol="$tol" '{ d = ($3 > 0) ? ($2 - $3) / $3 : ($2 != $3); if (d < 0) a = -d; else a = d;
                               n++; if (a > worst) { worst = a; ws = d; st = $1; o = $2; t = $3 } }
                             END { if (n == 0) { print "bad: no common steps"; exit }
                                   if (worst == 0) { printf "ok exact over %d steps", n; exit }
                                   printf "%s %+.4f%% at step %s (%s vs %s) over %d steps", (worst <= tol ? "ok" : "bad"),
                                          100 * ws, st, o, t, n }')
    case "$res" in
        ok*) pass "$what: ${res#ok } (limit $(awk -v t="$tol" 'BEGIN { print 100 * t }')%)" ;;
        *)   failure "$what: ${res#bad }" "limit $(awk -v t="$tol" 'BEGIN { print 100 * t }')%" ;;
    esac
}

summary() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

# same_steps A.csv B.csv [STEPS]: columns 2 and 3 equal on the first STEPS
# steps (all if not given) that both have.
same_steps() {
    local n=${3:-1000000}
    [ "$(awk -F, -v n="$n" 'NR > 1 && $1 <= n { print $1 "," $2 "," $3 }' "$1")" = \
      "$(awk -F, -v n="$n" 'NR > 1 && $1 <= n { print $1 "," $2 "," $3 }' "$2")" ]
}

# placement_only NAME FLAGS TRACE THEIRS.csv OURS.csv: 0 where a
# difference between PyTorch's figures (THEIRS.csv) and build/workload
# --model-only FLAGS's (OURS.csv) is the CUDA driver's segment placement
# alone, shown by PyTorch's trace of the run (TRACE: set-up and two steps):
# the model's requests equal PyTorch's, the trace replayed at PyTorch's
# addresses gives PyTorch's figures, and replayed with the model's placement
# rule (--no-addresses) gives the model's; else 1, why on stdout. The
# allocator picks the lowest address among equal-sized free blocks, so where
# the driver's addresses order the segments otherwise than the rule
# (alloc_host.h), a split lands elsewhere. Needs $build (workload, replay),
# $tmp (scratch) and optionally $sms.
placement_only() {
    local name=$1 flags=$2 trace=$3 theirs=$4 ours=$5 d
    # shellcheck disable=SC2086
    "$build/workload" --model-only $flags --steps 2 --sms "${sms:-132}" --trace "$tmp/$name.mt" > /dev/null 2>&1 ||
        { echo "the model's trace failed"; return 1; }
    d=$(bash "$lib_dir/test_mlp_fixtures.sh" --diff "$tmp/$name.mt" "$trace") ||
        { echo "requests differ from PyTorch's: $(printf '%s' "$d" | head -3 | tr '\n' ' ')"; return 1; }
    "$build/replay" "$trace" > "$tmp/$name.ra" 2> /dev/null || { echo "replay failed"; return 1; }
    replay_steps "$tmp/$name.ra" > "$tmp/$name.ra.csv"
    same_steps "$tmp/$name.ra.csv" "$theirs" 2 ||
        { echo "PyTorch's trace at its own addresses does not give its figures"; return 1; }
    "$build/replay" --no-addresses "$trace" > "$tmp/$name.rn" 2> /dev/null || { echo "replay failed"; return 1; }
    replay_steps "$tmp/$name.rn" > "$tmp/$name.rn.csv"
    same_steps "$tmp/$name.rn.csv" "$ours" 2 ||
        { echo "PyTorch's trace under the placement rule does not give the model's figures"; return 1; }
    return 0
}
