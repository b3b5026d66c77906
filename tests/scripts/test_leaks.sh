#!/usr/bin/env bash
# test_leaks.sh: each tool under LeakSanitizer, on its normal paths and on
# each kind of bad input (usage error, unreadable or malformed input, a
# refused setting, an OOM in the model). make test's other shell suites start
# these tools hundreds of times to compare figures and run with leak checks
# off (scripts/test: LeakSanitizer's exit scan costs about 40 ms a process
# there); the cmocka units and test_experiments.sh keep them on too.
#   tests/scripts/test_leaks.sh BUILD_DIR     (make test: build/san)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CUDA_VISIBLE_DEVICES=""
# exitcode 23: a leak report, told apart from the tools' own exit codes.
export ASAN_OPTIONS=detect_leaks=1:exitcode=23:abort_on_error=0
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}
export LSAN_OPTIONS="$LSAN_OPTIONS:exitcode=23"

case $(ASAN_OPTIONS=detect_leaks=1 "$build/replay" --help 2>&1 >/dev/null; echo "rc=$?") in
    *rc=0) ;;
    *) echo "SKIP: $build is not a sanitizer build"; summary; exit ;;
esac

# leakfree WHAT WANT_RC TOOL ARGS...: the tool exits WANT_RC and LeakSanitizer reports nothing.
leakfree() {
    local what=$1 want=$2; shift 2
    "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
    local rc=$?
    if grep -q "LeakSanitizer" "$tmp/err" || [ "$rc" -eq 23 ]; then
        failure "$what: leaks" "$(grep -m1 -A3 'ERROR: LeakSanitizer' "$tmp/err" | tr '\n' ' ')"
    elif [ "$rc" -ne "$want" ]; then
        failure "$what: exit $rc, want $want" "$(head -2 "$tmp/err" | tr '\n' ' ')"
    else
        pass "$what: no leak (exit $rc)"
    fi
}

traces=$root/tests/fixtures/traces
printf '# memclaims-trace v1\nalloc 1 100 0x0\nbogus line\n' > "$tmp/bad.trace"
printf '# memclaims-trace v1\nalloc 1 4096\nalloc 2 3145728\nfree 1\n' > "$tmp/ok.trace"
r=$build/replay
leakfree "replay a PyTorch trace (CSV)" 0 "$r" "$traces/mixed.trace"
leakfree "replay --summary under expandable_segments with a limit" 0 "$r" --summary --conf expandable_segments:True --limit 64Mi "$traces/limit.trace"
leakfree "replay --conf max_split_size_mb, roundup list, gc threshold" 0 "$r" --summary \
    --conf "max_split_size_mb:64,roundup_power2_divisions:[256:1,512:2,>:4],garbage_collection_threshold:0.6" "$traces/churn.trace"
leakfree "replay under a limit it runs out of memory at" 0 "$r" --summary --limit 1Mi "$tmp/ok.trace"
leakfree "replay --time from stdin" 0 sh -c "'$r' --time - < '$traces/small.trace'"
leakfree "replay a malformed trace" 2 "$r" "$tmp/bad.trace"
leakfree "replay a missing file" 2 "$r" "$tmp/none.trace"
leakfree "replay an unknown --conf key" 2 "$r" --conf bogus:1 "$tmp/ok.trace"
leakfree "replay a bad --limit" 2 "$r" --limit 12Q "$tmp/ok.trace"

w=$build/workload
leakfree "workload MLP --model-only with a trace" 0 "$w" --layers 3 --in 64 --width 64 --out 64 --batch 8 \
    --optimizer adam --precision fp16 --accum 2 --checkpoint --steps 2 --model-only --trace "$tmp/w.trace"
leakfree "workload MLP --model-only out of memory" 0 "$w" --layers 4 --in 1024 --width 1024 --out 1024 --batch 512 --steps 2 --model-only --limit 16M
leakfree "workload Transformer --model-only" 0 "$w" --arch transformer --d-model 32 --heads 4 --enc-layers 1 --dec-layers 1 \
    --ff 64 --seq 8 --batch 4 --optimizer adamw --precision bf16 --checkpoint --steps 2 --model-only
leakfree "workload encoder --model-only, causal, --conf" 0 "$w" --arch encoder --d-model 32 --heads 4 --enc-layers 2 --ff 64 \
    --seq 8 --batch 4 --causal --steps 2 --model-only --conf expandable_segments:True
leakfree "workload bad flag" 2 "$w" --layers 3 --bogus
leakfree "workload bad --conf" 2 "$w" --layers 3 --in 8 --width 8 --out 8 --batch 2 --model-only --conf max_split_size_mb:x

s=$build/sharded_model
leakfree "sharded_model fsdp rank 1 of 2" 0 "$s" --mode fsdp --world 2 --rank 1 --layers 3 --in 64 --width 64 --out 64 --batch 8 --steps 2
leakfree "sharded_model bad mode" 2 "$s" --mode bogus --world 2

g=$build/gen_trace
leakfree "gen_trace with streams and a limit" 0 "$g" --ops 2000 --seed 5 --streams 3 --limit 67108864
leakfree "gen_trace bad option" 2 "$g" --ops x

runs=$root/tests/fixtures/results
cp -r "$runs/labels-a" "$tmp/a" && cp -r "$runs/labels-b" "$tmp/b"
leakfree "results_json writes a run's document" 0 "$build/results_json" "$tmp/a"
leakfree "results_json --csv reads it back" 0 "$build/results_json" --csv label_cases "$tmp/a/results.json"
mkdir -p "$tmp/back"
leakfree "results_json --csv-dir writes every experiment back" 0 "$build/results_json" --csv-dir "$tmp/back" "$tmp/a/results.json"
leakfree "results_json on a folder that is not a run" 2 "$build/results_json" "$tmp"
leakfree "compare two runs with a TSV" 0 "$build/compare" --tsv "$tmp/c.tsv" "$tmp/a" "$runs/labels-b"
leakfree "compare a run with a newer schema" 2 "$build/compare" "$tmp/a" "$runs/newer-schema"
leakfree "compare a folder that is not a run" 2 "$build/compare" "$tmp/a" "$tmp"
leakfree "report writes a run's REPORT.md" 0 "$build/report" "$tmp/b"
cp -r "$runs/labels-b" "$tmp/bad" && echo 'C90,label_cases,x' >> "$tmp/bad/label_cases.csv"
leakfree "report on a run with a malformed CSV" 2 "$build/report" "$tmp/bad"
leakfree "report on a folder that is not a run" 2 "$build/report" "$tmp"
leakfree "meta --slug without a GPU" 0 "$build/meta" --slug
leakfree "meta --out without a GPU" 0 "$build/meta" --out "$tmp/m"
leakfree "meta bad option" 2 "$build/meta" --bogus

summary
