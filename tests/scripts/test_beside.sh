#!/usr/bin/env bash
# PyTorch beside the suite (scripts/run-all, on by default; tests/torch/beside/)
# without torch or a GPU, over the stand-in torch (tests/torch/stub/torch.py):
# each counterpart prints rows of its experiment's CSV (variant pytorch:...,
# never a verdict; one verdict-beside row; gpu_idle_share rows where it
# times steps), on the experiment's own points (its lists, or the points of
# the suite's CSV it is given), waives without torch or CUDA, refuses a
# foreign header, records a point that fails as a row, and one it skips for
# the time budget as a row. run_many.py runs them in one process. run-all
# appends those rows to the CSV before the report without changing a verdict
# or the suite's rows; without torch it says so in one line and writes what
# it writes with --no-pytorch; a counterpart that crashes, hangs or prints
# what is not a row of its experiment adds a failed row and the others go
# on with the same exit code; make compare matches PyTorch's rows like others.
# C24's (sharded_training.py), which runs tests/torch/fsdp_reference.py
# under torchrun, over a stand-in for that script and the per-rank CSVs of
# tests/fixtures/fsdp/: waived without a GPU point, two GPUs or NCCL; its
# rows from those CSVs; a run out of memory or past its limit a row; its
# whole process tree stopped on a timeout, run_many.py's watchdog, SIGTERM.
#   tests/scripts/test_beside.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
case $build in /*) ;; *) build=$root/$build ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 2
export PYTHONDONTWRITEBYTECODE=1 CUDA_VISIBLE_DEVICES=""
no_model_checks
noleak="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
stub=$root/tests/torch/stub
fixtures=$root/tests/fixtures/results
beside=tests/torch/beside
header=$(head -1 "$fixtures/sync_vs_async_timing.csv")
rows_awk() { # PROGRAM FILE...: an awk program over CSV files, with csv.awk's csv_split
    local prog=$1
    shift
    printf '%s\n' "$prog" > "$tmp/prog.awk"
    awk -f scripts/lib/csv.awk -f "$tmp/prog.awk" "$@"
}
# The lines of FILE that run-all would drop (not PyTorch rows of CLAIM KEY).
dropped() { # CLAIM KEY FILE
    awk -v claim="$1" -v key="$2" -v dropped="$tmp/d" -v failed="$tmp/f" \
        -f scripts/lib/csv.awk -f scripts/lib/beside_rows.awk "$3" > /dev/null
    cat "$tmp/d"
}
# (variant without pytorch:, param, value) of the rows of METRIC in CSV, one
# a line; CSV with or without its header.
points_of() { # CSV METRIC
    rows_awk '!/^claim,experiment,/ { csv_split($0, f); if (f[6] == "'"$2"'") { sub(/^pytorch:/, "", f[3]); print f[3] "," f[4] "," f[5] } }' "$1"
}
# same_points WHAT CSV_A CSV_B METRIC [SKIP]: the points of both are the same
# (in any order: a counterpart measures the points its verdict row names
# first), and not none; points whose line matches the extended regex SKIP
# left out of both (the suite's variants a counterpart cannot measure, its
# own extras).
same_points() {
    points_of "$2" "$4" | grep -Ev "${5:-^\$}" | sort > "$tmp/pa"
    points_of "$3" "$4" | grep -Ev "${5:-^\$}" | sort > "$tmp/pb"
    if [ -s "$tmp/pb" ] && cmp -s "$tmp/pa" "$tmp/pb"; then pass "$1 ($(wc -l < "$tmp/pb") points)"
    else failure "$1" "$(diff "$tmp/pa" "$tmp/pb" | head -5 | tr '\n' ' ')"; fi
}
# The count of temporary files in the folders given.
tmp_files() { local d n=0; for d in "$@"; do n=$((n + $(ls -A "$d" | grep -c tmp))); done; echo "$n"; }
# A torch that is the stand-in plus the lines of stdin (overrides), in DIR.
wrap_torch() { # DIR
    mkdir -p "$1"
    { printf 'exec(open(%s).read())\n' "'$stub/torch.py'"; cat; } > "$1/torch.py"
}

# ------------------------------------------------------------ the regime and the spreads
# A regime is named only where the spread of the median idle share lies on
# one side of an edge (0.2, 0.5); a spread over an edge is "mixed".
regime() { PYTHONPATH=$beside python3 -c "import beside as b, sys; print(b.regime(b.idle_of([float(x) for x in sys.argv[1:]])))" "$@"; }
check_eq "five profiled steps all idle 60%: launch-bound" "$(regime .6 .62 .58 .61 .59)" launch-bound
check_eq "all idle about 10%: GPU-bound" "$(regime .1 .12 .08 .11 .09)" GPU-bound
check_eq "all between the edges: partly launch-bound" "$(regime .3 .32 .28 .31 .35)" "partly launch-bound"
check_eq "a median of 13% whose steps reach 54% (run to run, the issue's C08): mixed, not GPU-bound" \
    "$(regime .13 .54 .12 .50 .14)" mixed
check_eq "steps over the 50% edge: mixed, not launch-bound" "$(regime .45 .55 .48 .6 .52)" mixed
check_eq "the clause says mixed with the spread" \
    "$(PYTHONPATH=$beside python3 -c "import beside as b; print(b.regime_clause(b.idle_of([.13, .54, .12, .50, .14])))")" \
    "PyTorch's step is mixed (neither launch- nor GPU-bound for certain): its GPU is idle 14% (13%-50%) of the step (GPU busy over 5 profiled steps against the timed ones)"
# The idle share is of the unprofiled step: the profiled steps' GPU busy time
# (the stand-in's 735 us a step, between its marker kernels) against the
# timed steps' median, read alike from Kineto's list and the chrome trace.
idle_by() {
    PYTHONPATH=$stub:$beside python3 -c "
import torch, beside as b
$1
r = b.idle_share(torch, lambda: None, 5, $2)
print('%.4f %.4f %.4f %d' % (r['share'], r['lo'], r['hi'], len(r['shares'])) if r['share'] is not None else r['why'])"
}
check_eq "idle share = 1 - profiled busy / timed step: 735 us of 1 ms, 5 steps after one left out" \
    "$(idle_by "" "[0.001] * 5")" "0.2650 0.2650 0.2650 5"
check_eq "... the same from the chrome trace, where torch has no Kineto list" \
    "$(idle_by "import beside_idle; beside_idle.gpu_activities_of_kineto = lambda torch, prof: None" "[0.001] * 5")" "0.2650 0.2650 0.2650 5"
check_eq "... a step timed faster than its GPU work (busy 735 us, step 0.7 ms): 0, not negative" \
    "$(idle_by "" "[0.0007] * 5")" "0.0000 0.0000 0.0000 5"
check_eq "... the timed steps' spread widens the share's (steps of 1 and 2 ms)" \
    "$(idle_by "" "[0.001, 0.002, 0.001, 0.002, 0.0015]")" "0.5100 0.2650 0.6325 5"
check_eq "... without the marker kernels: no share, and why" \
    "$(idle_by "torch.cuda._sleep = lambda c: None" "[0.001] * 5")" "the profiler did not record the marker kernels between steps"
spread() { PYTHONPATH=$beside python3 -c "import beside as b, sys; print(*('%.4g' % x for x in b.$1))"; }
check_eq "the median's bootstrap spread of 1..5: 2 .. 4 (resampled medians' 10th, 90th percentile)" \
    "$(spread 'median_spread([1, 2, 3, 4, 5])')" "2 4"
check_eq "... the same samples, the same spread (a fixed seed)" "$(spread 'median_spread([5, 1, 4, 2, 3])')" "2 4"
check_eq "... one sample: no spread" "$(spread 'median_spread([7])')" "7 7"
check_eq "a ratio of medians with its spread (a resampled median is below 2 only where 3 of 5 draws are 1.9: 6%)" \
    "$(spread 'ratio_spread([2, 2.1, 1.9, 2, 2.05], [1, 1, 1, 1, 1])')" "2 2 2.05"
# Two trainings timed in turn (paired): a host that slows both alike from
# one round to the next moves neither their ratio nor its spread, which
# resamples whole rounds; a ratio that moved between rounds widens it.
check_eq "paired rounds: a drift that slows both alike leaves the ratio 2 and its spread 2 .. 2" \
    "$(spread 'paired_ratio({"a": [[2, 2], [4, 4], [2, 2], [4, 4]], "b": [[1, 1], [2, 2], [1, 1], [2, 2]]})')" "2 2 2"
check_eq "... a ratio that moved between rounds (2, then 3) widens the spread to both" \
    "$(spread 'paired_ratio({"a": [[2, 2], [3, 3], [2, 2], [3, 3]], "b": [[1, 1], [1, 1], [1, 1], [1, 1]]})')" "2.5 2 3"
check_eq "... no rounds: nothing" "$(PYTHONPATH=$beside python3 -c 'import beside as b; print(b.paired_ratio({"a": [], "b": []}))')" \
    "(None, None, None)"
check_eq "... paired leaves no training alive (one in a reference cycle too: C23's leaked 200 MiB), nor a failed try" \
    "$(PYTHONPATH=$stub:$beside python3 "$here/beside_paired_frees.py" 2>/dev/null)" "0 10 10 0 one after the other"
check_eq "rounds_spread: C14's overlap resampled by whole rounds (serial 10 or 12, double-buffered 5): 1 .. 1.4" \
    "$(spread 'rounds_spread(lambda i: (__import__("statistics").median([10, 12, 10, 12][k] for k in i) - 5) / 5, 4)')" "1 1.4"
check_eq "... rounds that agree: no spread" "$(spread 'rounds_spread(lambda i: 1.0, 4)')" "1 1"
for k in pinned_vs_pageable sync_vs_async_timing; do
    check "$k.py: its verdict row gives PyTorch's figure with its spread" \
        bash -c "PYTHONPATH='$stub' python3 '$beside/$k.py' --quick 2>/dev/null | grep -q ',pytorch,verdict,.*[0-9]x* ([0-9.]*x*-[0-9.]*x*) '"
done
# Kineto leaves CUPTI attached after a profile unless TEARDOWN_CUPTI=1; the
# steps timed after it read ~35% slow (an H200): beside.py sets it before
# torch's import, a user's own value stands.
check_eq "beside.py tears CUPTI down after each profile (TEARDOWN_CUPTI=1), a user's setting kept" \
    "$(env -u TEARDOWN_CUPTI PYTHONPATH=$beside python3 -c 'import beside, os; print(os.environ["TEARDOWN_CUPTI"])') $(TEARDOWN_CUPTI=0 PYTHONPATH=$beside python3 -c 'import beside, os; print(os.environ["TEARDOWN_CUPTI"])')" "1 0"
check "figures of several samples note the median's spread" \
    bash -c "PYTHONPATH='$stub' python3 '$beside/checkpointing.py' --quick 2>/dev/null | grep -q 'step_time,s,5,.*median spread (bootstrap 10-90%): '"

# ------------------------------------------------------------ the counterparts alone
counterparts="pinned_vs_pageable sync_vs_async_timing mixed_precision grad_accumulation checkpointing optimizer_state
    nonblocking_copy prefetch_overlap activation_offload compile_fusion no_grad_eval"
declare -A claim=([pinned_vs_pageable]=C03 [sync_vs_async_timing]=C04 [mixed_precision]=C05 [grad_accumulation]=C07
    [checkpointing]=C08 [optimizer_state]=C09 [nonblocking_copy]=C13 [prefetch_overlap]=C14
    [activation_offload]=C23 [compile_fusion]=C25 [no_grad_eval]=C27)
# Those that time training steps or forwards: a gpu_idle_share row for the
# step the verdict row's regime names, and none for the others (a profile
# costs 0.2-2 s a point); C07's k=1 step too, the training C08's and C23's
# regimes read.
profiled="mixed_precision grad_accumulation checkpointing optimizer_state activation_offload compile_fusion no_grad_eval"
declare -A idle_at=([mixed_precision]="pytorch:transformer_fp16,batch,32"
    [grad_accumulation]="pytorch:transformer seq=64 B=100,accum_steps,1 pytorch:transformer seq=64 B=100,accum_steps,4"
    [checkpointing]="pytorch:transformer plain,seq,64" [optimizer_state]="pytorch:adam,width,2048"
    [activation_offload]="pytorch:transformer_keep,batch,100"
    [compile_fusion]="pytorch:seed_t512_bf_adam_fp16/eager,batch,32"
    [no_grad_eval]="pytorch:transformer/eval_no_grad,batch,100")
# The metric whose rows name every point the experiment measured.
declare -A metric=([pinned_vs_pageable]=h2d_bandwidth_host_clock [sync_vs_async_timing]=time_cuda_events
    [mixed_precision]=peak_allocated [grad_accumulation]=peak_allocated [checkpointing]=peak_allocated
    [optimizer_state]=peak_allocated [nonblocking_copy]=h2d_return_time_host_clock
    [prefetch_overlap]=copy_time_events [activation_offload]=peak_allocated [compile_fusion]=peak_allocated
    [no_grad_eval]=peak_allocated)
# Points left out of the comparison: C23's side-stream offload (no PyTorch
# idiom) and PyTorch's save_on_cpu beside it; C25's recorded PyTorch rows.
declare -A skip=([activation_offload]='^(offload|transformer_save_on_cpu),' [compile_fusion]='/pytorch_(eager|compile),')
for key in $counterparts; do
    id=${claim[$key]}
    PYTHONPATH=$stub python3 "$beside/$key.py" --quick > "$tmp/$key.out" 2> "$tmp/$key.err"; rc=$?
    check_eq "$key.py --quick over the stand-in: exit 0" "$rc" 0
    check_eq "... the suite's header first (by hand, no --csv-header)" "$(head -1 "$tmp/$key.out")" "$header"
    tail -n +2 "$tmp/$key.out" > "$tmp/$key.rows"
    check_eq "... every line a PyTorch row of $id that run-all keeps" "$(dropped "$id" "$key" "$tmp/$key.rows")" 0
    check "... figure rows of variant pytorch:..." grep -q "^$id,$key,pytorch:" "$tmp/$key.rows"
    check "... and summary rows (pytorch_beside)" grep -q "^$id,$key,pytorch,,,pytorch_beside,,0,,,,,,ok," "$tmp/$key.rows"
    check_eq "... no verdict, finding or verification row" \
        "$(rows_awk '{ csv_split($0, f); if (f[6] ~ /^(verdict|finding|verification)$/) n++ } END { print n + 0 }' "$tmp/$key.rows")" 0
    check_eq "... one verdict-beside row: param verdict, one line under 300 characters" \
        "$(rows_awk '{ csv_split($0, f); if (f[4] == "verdict" && f[3] == "pytorch" && f[6] == "pytorch_beside" && f[14] == "ok" && length(f[15]) > 20 && length(f[15]) < 300) n++ } END { print n + 0 }' "$tmp/$key.rows")" 1
    if [[ " $profiled " == *" $key "* ]]; then
        check_eq "... gpu_idle_share rows (ratio) for the regime's step alone, from the stand-in's profile (1 - 735 us busy / 1 ms timed = 0.265)" \
            "$(rows_awk '{ csv_split($0, f); if (f[6] == "gpu_idle_share" && f[7] == "ratio" && f[9] + 0 > 0.264 && f[9] + 0 < 0.266) printf "%s%s,%s,%s", n++ ? " " : "", f[3], f[4], f[5] }' "$tmp/$key.rows")" \
            "${idle_at[$key]}"
        check_eq "... and more timed points than that: the others are not profiled" \
            "$(rows_awk '{ csv_split($0, f); if (f[6] ~ /^(step|forward)_time$/ && f[14] == "ok") t++; if (f[6] == "gpu_idle_share") g++ } END { print (g > 0 && t > g) ? "yes" : t " timed, " g " idle" }' "$tmp/$key.rows")" yes
        [ "$key" = no_grad_eval ] || [ "$key" = optimizer_state ] ||
            check "... the verdict row's time ratio from the two trainings' steps in turn (interleaved)" \
                grep -q "^$id,$key,pytorch,verdict,,pytorch_beside,.*interleaved)" "$tmp/$key.rows"
        check "... the verdict row names the regime with the idle share: the profiled steps' GPU busy against the timed" \
            grep -q "^$id,$key,pytorch,verdict,,pytorch_beside,.*is partly launch-bound: its GPU is idle 2[67]% of the [a-z]* (GPU busy over 5 profiled [a-z]*s against the timed ones)" "$tmp/$key.rows"
    fi
    # Given the suite's CSV: its points, and its figures in the summaries.
    PYTHONPATH=$stub python3 "$beside/$key.py" --suite-csv "$fixtures/$key.csv" --csv-header "$header" \
        > "$tmp/$key.suite" 2>/dev/null; rc=$?
    check_eq "$key.py --suite-csv: exit 0, no header line" "$rc:$(grep -c '^claim,' "$tmp/$key.suite")" 0:0
    same_points "... the points are the suite's" "$tmp/$key.suite" "$fixtures/$key.csv" "${metric[$key]}" "${skip[$key]:-}"
    check "... the summaries give the suite's figures" grep -q 'PyTorch .* (suite [-0-9]' "$tmp/$key.suite"
    out=$(PYTHONPATH=$stub python3 "$beside/$key.py" --csv-header "claim,variant" 2>"$tmp/err"); rc=$?
    check_eq "$key.py refuses a header it does not write: exit 2, nothing on stdout" "$rc:$out" 2:
    STUB_NO_CUDA=1 PYTHONPATH=$stub python3 "$beside/$key.py" --quick > "$tmp/out" 2>"$tmp/err"; rc=$?
    check_eq "$key.py without a CUDA device: waived (77), one line, no rows" "$rc:$(wc -l < "$tmp/err"):$(wc -c < "$tmp/out")" 77:1:0
done
mkdir -p "$tmp/notorch"
echo 'raise ImportError("no torch here")' > "$tmp/notorch/torch.py"
PYTHONPATH=$tmp/notorch python3 "$beside/checkpointing.py" > "$tmp/out" 2>"$tmp/err"; rc=$?
check_eq "without torch: waived (77), one line" "$rc:$(wc -l < "$tmp/err")" 77:1

# Their own lists are the experiments': the points of those that run on the
# model, full and --quick, are what the experiment measures there; those of
# the GPU-only ones what the committed H100 run (results/reference-h100)
# measured (C04's: the fixture's).
for key in mixed_precision grad_accumulation checkpointing optimizer_state activation_offload compile_fusion no_grad_eval; do
    exe=$(ls "$build"/c[0-9][0-9]_"$key")
    ASAN_OPTIONS=$noleak "$exe" --model-only --quick > "$tmp/$key.model.csv" 2>/dev/null
    same_points "$key.py --quick measures the points of $(basename "$exe") --model-only --quick" \
        "$tmp/$key.out" "$tmp/$key.model.csv" peak_allocated "${skip[$key]:-}"
    ASAN_OPTIONS=$noleak "$exe" --model-only > "$tmp/$key.model.csv" 2>/dev/null
    PYTHONPATH=$stub python3 "$beside/$key.py" > "$tmp/$key.full" 2>/dev/null
    same_points "$key.py measures the points of $(basename "$exe") --model-only" \
        "$tmp/$key.full" "$tmp/$key.model.csv" peak_allocated "${skip[$key]:-}"
done
check "grad_accumulation.py measures C07's floor (B=1) too" grep -q '^C07,grad_accumulation,pytorch:B=1,,,floor,bytes,1,' "$tmp/grad_accumulation.full"
PYTHONPATH=$stub python3 "$beside/sync_vs_async_timing.py" > "$tmp/c04.full" 2>/dev/null
same_points "sync_vs_async_timing.py measures the points of C04's GPU run" \
    "$tmp/c04.full" "$fixtures/sync_vs_async_timing.csv" time_cuda_events
# (the H100 run's own rows: its PyTorch rows, run-all's, left out)
for key in pinned_vs_pageable nonblocking_copy prefetch_overlap; do
    grep -v ',pytorch[,:]' "$root/results/reference-h100/$key.csv" > "$tmp/$key.h100.csv"
    PYTHONPATH=$stub python3 "$beside/$key.py" > "$tmp/$key.full" 2>/dev/null
    same_points "$key.py measures the points of ${claim[$key]}'s H100 run" \
        "$tmp/$key.full" "$tmp/$key.h100.csv" "${metric[$key]}"
done
same_points "... and the H100 run's variants of C14" "$tmp/prefetch_overlap.full" \
    "$tmp/prefetch_overlap.h100.csv" total_time_events
check "... as many batches (the suite's note)" grep -q '^C14,prefetch_overlap,pytorch:serial_pinned,bytes,33554432,total_time_events,s,[0-9]*,.*,ok,"16 batches, first copy' "$tmp/prefetch_overlap.full"
check "nonblocking_copy.py queues the experiment's 10 ms kernel" grep -q '^C13,nonblocking_copy,pytorch:pinned,bytes,4096,h2d_return_time_host_clock,s,[0-9]*,.*,ok,"after a 10 ms kernel on the stream' "$tmp/nonblocking_copy.full"

# A point that runs out of memory is a row (status oom), the others go on.
wrap_torch "$tmp/oom" <<'EOF'
_randn = randn
def randn(*shape, **kw):
    t = _randn(*shape, **kw)
    t.shape = shape
    return t
def mm(a, b, out=None):
    if a.shape[0] >= 1024:
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 256.00 MiB")
    return out
EOF
PYTHONPATH=$tmp/oom python3 "$beside/sync_vs_async_timing.py" --quick --warmup 0 --repeats 1 > "$tmp/oom.out" 2>/dev/null; rc=$?
check_eq "a point out of memory: exit 0" "$rc" 0
check "... its row has status oom and the reason" grep -q '^C04,sync_vs_async_timing,pytorch:sgemm,n,1024,time_cuda_events,s,0,,,,,,oom,OutOfMemoryError: CUDA out of memory' "$tmp/oom.out"
check "... the other points were measured" grep -q '^C04,sync_vs_async_timing,pytorch:busy_kernel,set_duration_s,0.01,time_cuda_events,s,1,' "$tmp/oom.out"
check "... and a failed summary names it" grep -q '^C04,sync_vs_async_timing,pytorch,,,pytorch_beside,,0,,,,,,failed,1 of 4 points failed: sgemm n=1024: OutOfMemoryError' "$tmp/oom.out"

# The same in each other counterpart: a point that fails (out of memory, an
# error, something this torch lacks) is its row, the others are measured.
fails() { # KEY TORCH_DIR ROW MEASURED SUMMARY [VAR=VALUE...]: rows that begin so
    local key=$1 dir=$2 row=$3 measured=$4 sum=$5 id=${claim[$1]}
    shift 5
    env "$@" PYTHONPATH="$dir" python3 "$beside/$key.py" --quick --warmup 0 --repeats 1 2>/dev/null | tail -n +2 \
        > "$tmp/$key.fail"; rc=${PIPESTATUS[0]}
    check_eq "$key.py with a point that fails: exit 0" "$rc" 0
    check "... its row: status oom or failed, the reason" grep -q "^$id,$key,pytorch:$row" "$tmp/$key.fail"
    check "... the points beside it measured" grep -q "^$id,$key,pytorch:$measured" "$tmp/$key.fail"
    check "... a failed summary names it" grep -q "^$id,$key,pytorch,,,pytorch_beside,,0,,,,,,failed,$sum" "$tmp/$key.fail"
    check_eq "... every line a PyTorch row of $id that run-all keeps" "$(dropped "$id" "$key" "$tmp/$key.fail")" 0
}
wrap_torch "$tmp/f07" <<'EOF'
_randn = randn
def randn(*shape, **kw):
    if shape and shape[0] == 4096:
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 MiB")
    return _randn(*shape, **kw)
EOF
fails grad_accumulation "$tmp/f07" 'B=4096,accum_steps,1,peak_allocated,bytes,0,,,,,,oom,OutOfMemoryError: CUDA out of memory' \
    'B=4096,accum_steps,4,peak_allocated,bytes,1,' '1 of 7 points failed: B=4096 k=1: OutOfMemoryError'
wrap_torch "$tmp/f09" <<'EOF'
def _no_adam(*args, **kwargs):
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 MiB")
optim.Adam = _no_adam
EOF
fails optimizer_state "$tmp/f09" 'adam,width,1024,peak_allocated,bytes,0,,,,,,oom,OutOfMemoryError' \
    'momentum,width,2048,peak_allocated,bytes,1,' '2 of 6 points failed: H=2048 adam: OutOfMemoryError'
wrap_torch "$tmp/f13" <<'EOF'
def _slice(self, i):  # a slice that knows its length
    t = Tensor(0, self.value)
    t.n = i.stop if isinstance(i, slice) else None
    return t
Tensor.__getitem__ = _slice
_copy = Tensor.copy_
def _copy_1mib(self, other, non_blocking=False):
    if non_blocking and 1048576 in (getattr(self, "n", None), getattr(other, "n", None)):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return _copy(self, other, non_blocking)
Tensor.copy_ = _copy_1mib
EOF
fails nonblocking_copy "$tmp/f13" \
    'pinned,bytes,1048576,h2d_return_time_host_clock,s,0,,,,,,failed,RuntimeError: CUDA error: an illegal memory access' \
    'pinned,bytes,4194304,d2h_return_time_host_clock,s,' '4 of 24 points failed: h2d pageable 1 MiB: RuntimeError'
wrap_torch "$tmp/f23" <<'EOF'
def _no_hooks(pack, unpack):
    raise RuntimeError("saved_tensors_hooks: not here")
autograd.graph.saved_tensors_hooks = _no_hooks
EOF
fails activation_offload "$tmp/f23" 'offload_serial,batch,512,peak_allocated,bytes,0,,,,,,failed,RuntimeError: saved_tensors_hooks: not here' \
    'transformer_save_on_cpu,batch,100,peak_allocated,bytes,1,' '3 of 7 points failed: transformer_offload B=100: RuntimeError'
fails compile_fusion "$stub" \
    "enc_adamw_fp32/fused,batch,16,peak_allocated,bytes,0,,,,,,failed,RuntimeError: backend='inductor' raised: | RuntimeError: stub compile failure" \
    'enc_adamw_fp32/eager,batch,16,peak_allocated,bytes,1,' '2 of 4 points failed: seed_t512_bf_adam_fp16 B=32 fused: RuntimeError' \
    STUB_COMPILE_FAIL=1
wrap_torch "$tmp/f03" <<'EOF'
def _no_cudart():
    raise AttributeError("module 'torch.cuda' has no attribute 'cudart'")
cuda.cudart = _no_cudart
EOF
fails pinned_vs_pageable "$tmp/f03" "registered,bytes,4096,h2d_bandwidth_host_clock,B/s,0,,,,,,failed,AttributeError: module 'torch.cuda'" \
    'pinned_over_pageable,bytes,4194304,d2h_ratio_host_clock,ratio,1,' '12 of 36 points failed: h2d registered 4 KiB: AttributeError'
wrap_torch "$tmp/f14" <<'EOF'
def _to_oom(self, *args, **kwargs):
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 MiB")
Tensor.to = _to_oom
EOF
fails prefetch_overlap "$tmp/f14" 'pool_seed_no_record_stream,bytes,8388608,total_time_events,s,0,,,,,,oom,OutOfMemoryError' \
    'pinned,bytes,8388608,overlap_fraction,ratio,1,' "1 of 2 points failed: seed 002's loader: OutOfMemoryError"

# ------------------------------------------------------------ run-all --pytorch on fake experiments
fake=$tmp/fake-build
mkdir -p "$fake"
cp "$build/meta" "$build/results_json" "$build/report" "$fake/"
# A fake experiment: --list (mode gpu); --out DIR gets a fixture CSV (a GPU run's).
make_fake() { # NAME CLAIM FIXTURE_CSV
    cat > "$fake/$1" <<FAKE
#!/usr/bin/env bash
[ "\$1" = --list ] && { printf '$2\t${1#c[0-9][0-9]_}\tfake\tseed says $2\tmethod\trule\tgpu\n'; exit 0; }
out=.; while [ \$# -gt 0 ]; do [ "\$1" = --out ] && out=\$2; shift; done
cp "$3" "\$out/.${1#c[0-9][0-9]_}.csv.tmp.\$\$" && mv "\$out/.${1#c[0-9][0-9]_}.csv.tmp.\$\$" "\$out/${1#c[0-9][0-9]_}.csv"
FAKE
    chmod +x "$fake/$1"
}
make_fake c04_sync_vs_async_timing C04 "$fixtures/sync_vs_async_timing.csv"
make_fake c05_mixed_precision C05 "$fixtures/mixed_precision.csv"
make_fake c08_checkpointing C08 "$fixtures/checkpointing.csv"
make_fake c18_randn_bytes C18 "$fixtures/randn_bytes.csv"
keys="sync_vs_async_timing mixed_precision checkpointing randn_bytes"
run_all() { # RESULTS [ARGS...]: run-all on the fakes; sets out, rc, r (the run)
    local res=$1
    shift
    out=$(ASAN_OPTIONS=$noleak GNUPLOT=/nonexistent "$root/scripts/run-all" --build "$fake" --results "$res" "$@" 2>&1); rc=$?
    r=$res/$(readlink "$res/latest")
}
# The console without its timings, for comparing two runs' lines.
untimed() { sed -E 's/[0-9]+\.[0-9] s/T s/g; s/[0-9]{8}T[0-9]{6}Z/TIME/g' <<<"$1"; }

run_all "$tmp/plain" --no-pytorch
plain_out=$out plain=$r
check_eq "--no-pytorch: exit 0" "$rc" 0
check_eq "... no PyTorch line" "$(grep -c PyTorch <<<"$out")" 0
bad=""
for k in $keys; do cmp -s "$plain/$k.csv" "$fixtures/$k.csv" || bad="$bad $k"; done
check_eq "... every CSV is the experiment's, byte for byte" "$bad" ""

PYTHONPATH=$stub run_all "$tmp/with"
with=$r
with_out=$out
check_eq "by default, over the stand-in: exit 0" "$rc" 0
check "... says up front which claims PyTorch measures" grep -q '^PyTorch beside: torch 0.0-stub; C04, C05, C08 measured again with PyTorch after the suite, in one process' <<<"$out"
check_eq "... after the last experiment, one line per claim, in order" \
    "$(grep -A3 '^\[4/4\]' <<<"$out" | tail -3 | sed -E 's/^PyTorch beside: (C[0-9]+) ([a-z_]+) [0-9.]+ s, [0-9]+ rows$/\1 \2/' | tr '\n' ' ')" \
    "C04 sync_vs_async_timing C05 mixed_precision C08 checkpointing "
check_eq "... the runner said nothing on its own (logs/pytorch-runner.log not left)" \
    "$([ -e "$r/logs/pytorch-runner.log" ] && echo left)" ""
check_eq "... each CSV has its verdict-beside row" \
    "$(cat "$with/sync_vs_async_timing.csv" "$with/mixed_precision.csv" "$with/checkpointing.csv" | grep -c ',pytorch,verdict,,pytorch_beside,,0,,,,,,ok,')" 3
check_eq "... and no gpu_idle_share row: the fixtures C05 and C08 measure are the MLP's points alone, without the Transformer step their regime sentences name (the counterparts' own tests above profile it)" \
    "$(cat "$with/checkpointing.csv" "$with/mixed_precision.csv" | grep -c ',gpu_idle_share,')" 0
PYTHONPATH=$stub run_all "$tmp/with-flag" --pytorch
check_eq "--pytorch is still accepted and changes nothing: exit 0, the same console" \
    "$rc:$(untimed "$out" | sed "s|$tmp/with-flag|R|g")" "0:$(untimed "$with_out" | sed "s|$tmp/with|R|g")"
bad=""
for k in sync_vs_async_timing mixed_precision checkpointing; do
    n=$(wc -l < "$fixtures/$k.csv")
    cmp -s <(head -n "$n" "$with/$k.csv") "$fixtures/$k.csv" || bad="$bad $k(suite rows)"
    [ "$(tail -n +$((n + 1)) "$with/$k.csv" | grep -vc ',pytorch[,:]')" = 0 ] || bad="$bad $k(other rows)"
    [ "$(tail -n +$((n + 1)) "$with/$k.csv" | wc -l)" -gt 3 ] || bad="$bad $k(no rows)"
done
check_eq "... each CSV is the suite's rows, then PyTorch's" "$bad" ""
check "... C18, without a counterpart, is untouched" cmp "$with/randn_bytes.csv" "$fixtures/randn_bytes.csv"
check_eq "... leaves no temporary file" "$(tmp_files "$with" "$with/logs")" 0
# The same four columns; the run with PyTorch adds a fifth, its sentence.
check_eq "... the verdict table is the one without --pytorch" \
    "$(grep '^| C' "$with/REPORT.md" | sed 's/ [^|]* |$//')" "$(grep '^| C' "$plain/REPORT.md")"
check_eq "... the console's experiment lines too" "$(untimed "$(grep '^\[' <<<"$out")")" "$(untimed "$(grep '^\[' <<<"$plain_out")")"
check "... REPORT.md gives PyTorch's figure beside the suite's under C04" \
    bash -c "sed -n '/^### C04 /,/^### /p' '$with/REPORT.md' | grep -q '^- PyTorch beside: PyTorch 0.0-stub on stub GPU: SGEMM n = 256, 1024, 4096, 8192: .* (suite '"
check_eq "... and under C05 and C08 (no line under C18)" \
    "$(awk '/^### / { c = $2 } /^- PyTorch beside: / { n[c]++ } END { printf "%d %d %d", (n["C05"] > 0), (n["C08"] > 0), n["C18"] + 0 }' "$with/REPORT.md")" "1 1 0"
check "... and says once where the figures come from" grep -q '^PyTorch measured the same points of C04, C05, C08 (`scripts/run-all --pytorch`' "$with/REPORT.md"
check_eq "... results.json holds PyTorch's rows" "$(grep -c '"variant":	"pytorch:' "$with/results.json")" \
    "$(cat "$with"/*.csv | grep -c ',pytorch:')"
mkdir -p "$tmp/back"
"$build/results_json" --csv-dir "$tmp/back" "$with/results.json" 2>/dev/null
bad=""
for k in sync_vs_async_timing mixed_precision checkpointing; do
    cmp -s <(grep ',pytorch[,:]' "$with/$k.csv") <(grep ',pytorch[,:]' "$tmp/back/$k.csv") || bad="$bad $k"
done
check_eq "... and gives them back byte for byte (the counterparts write numbers as the suite does)" "$bad" ""
check_eq "... logs/pytorch.tsv: one line each, ran" "$(cut -f1,2,3 "$with/logs/pytorch.tsv" | tr '\t\n' ': ')" \
    "sync_vs_async_timing:ran:0 mixed_precision:ran:0 checkpointing:ran:0 "

# The runner alone: every counterpart of a run folder in one process.
mkdir -p "$tmp/many"
PYTHONPATH=$stub python3 "$beside/run_many.py" --run "$plain" --out "$tmp/many" > "$tmp/many.out" 2>&1; rc=$?
check_eq "run_many.py over a run folder: exit 0, nothing on its own stdout" "$rc:$(wc -c < "$tmp/many.out")" 0:0
check_eq "... every counterpart with a CSV there, in the suite's order, ran" \
    "$(grep -v start "$tmp/many/progress.tsv" | cut -f1,2,3 | tr '\t\n' ': ')" \
    "sync_vs_async_timing:ran:0 mixed_precision:ran:0 checkpointing:ran:0 "
check_eq "... each one's rows in KEY.rows, all kept by run-all" \
    "$(for k in sync_vs_async_timing mixed_precision checkpointing; do dropped "${claim[$k]}" "$k" "$tmp/many/$k.rows"; done | tr '\n' ' ')" "0 0 0 "
PYTHONPATH=$stub python3 "$beside/run_many.py" --run "$plain" --out "$tmp/many" bogus > /dev/null 2>&1; rc=$?
check_eq "run_many.py with an unknown key: exit 2" "$rc" 2
STUB_NO_CUDA=1 PYTHONPATH=$stub python3 "$beside/run_many.py" --run "$plain" --out "$tmp/many" > /dev/null 2>"$tmp/err"; rc=$?
check_eq "run_many.py without CUDA: exit 77, one line" "$rc:$(wc -l < "$tmp/err")" 77:1
# Its last key done, it ends at once, past the interpreter's exit handlers
# (Inductor's joins its idle compile pool after C25's torch.compile: 4.3 s
# on the H200), with every key's rows complete.
mkdir -p "$tmp/slowexit" "$tmp/many2"
printf 'import atexit\natexit.register(lambda: open("%s", "w").write("ran"))\n' "$tmp/slowexit/ran" \
    > "$tmp/slowexit/sitecustomize.py"
PYTHONPATH=$tmp/slowexit:$stub python3 "$beside/run_many.py" --run "$plain" --out "$tmp/many2" > /dev/null 2>&1; rc=$?
check_eq "run_many.py ends without the interpreter's exit handlers: exit 0, none ran, every key's rows as many" \
    "$rc $([ -e "$tmp/slowexit/ran" ] && echo ran || echo none) $(for k in sync_vs_async_timing mixed_precision checkpointing; do
        [ "$(wc -l < "$tmp/many/$k.rows")" = "$(wc -l < "$tmp/many2/$k.rows")" ] && echo same; done | tr '\n' ' ')" \
    "0 none same same same "
check_eq "... C25's counterpart, which leaves the pool, is the last key of its order" \
    "$(cd "$beside" && python3 -c 'import run_many as m; print(m.ORDER[-1])')" compile_fusion

# torch.compile's caches: kept under the user's cache folder, where the
# next run finds them; a folder the user named stands.
check_eq "run_many.py keeps torch.compile's caches in ~/.cache/memclaims (XDG_CACHE_HOME), or where the user says" \
    "$(cd "$beside" && python3 -c '
import run_many as m
a = {"HOME": "/h", "XDG_CACHE_HOME": "/x"}; m.keep_compile_caches(a)
b = {"TORCHINDUCTOR_CACHE_DIR": "/mine"}; m.keep_compile_caches(b)
print(a["TORCHINDUCTOR_CACHE_DIR"], b["TORCHINDUCTOR_CACHE_DIR"])')" "/x/memclaims/torchinductor /mine"

# A training two counterparts share is measured once; one that needs what
# the first did not read (extra) measures it again (C05's MLP at H=4096 was
# C09's H=4096 Adam on the H200, where C05 had the time for it).
check_eq "a shared record: reused as it is; measured again where the second needs its extra" \
    "$(PYTHONPATH=$stub:$beside python3 -c '
import torch, beside as b
ref = b.reference_module("mlp_reference")
cfg = ref.Cfg("--layers 4 --in 64 --width 64 --out 64 --batch 8 --optimizer adam --precision fp32 --accum 1", 1)
key = (ref.__name__, tuple(sorted(vars(cfg).items())))
make = lambda: ref.Training(torch, cfg, torch.device("cuda", 0))
a = b.record(torch, key, make, 2, 3, "C05")
c = b.record(torch, key, make, 2, 3, "C07")
d = b.record(torch, key, make, 2, 3, "C09", extra=lambda tr: 42)
e = b.record(torch, key, make, 2, 3, "C13", extra=lambda tr: 7)
print(a["again"], c["again"], c["by"], d["again"], d["extra"], d["by"], e["again"], e["extra"])' 2>&1 |
       grep -v ': idle share: [0-9]* GPU activities, profile read in \|: built in [0-9.]* s, [0-9]* steps in ')" \
    "False True C05 False 42 C09 True 42"

# A model made on the host (--build host, as the seeds build theirs) is made
# once an architecture in the counterparts' process and deep-copied for the
# builds after it (transformer_reference's HOST_MODELS); each build moves a
# model of its own; a batch or precision of its own shares it; the
# reference script run alone makes every one.
check_eq "counterparts: seed 000's host-made Transformer made once for three builds, each a model of its own" \
    "$(PYTHONPATH=$stub:$beside python3 -c '
import torch, beside as b
made = []
real = torch.nn.Transformer
torch.nn.Transformer = lambda *a, **k: made.append(1) or real(*a, **k)
ref = b.reference_module("transformer_reference")
dev = torch.device("cuda", 0)
flags = "--arch transformer --d-model 256 --seq 64 --batch %d --optimizer adam --precision %s --build host"
t = [ref.Training(torch, ref.Cfg(flags % (B, p), 1), dev) for B, p in ((100, "fp32"), (100, "fp32"), (25, "fp16"))]
d = ref.Cfg(flags.replace("host", "device") % (100, "fp32"), 1)
ref.Training(torch, d, dev)
print(len(made), len({id(x.model) for x in t}), len({id(p) for x in t for p in x.model.parameters()}) == 3 * len(t[0].model.params))')" \
    "2 3 True"
check_eq "... transformer_reference.py by itself keeps none" \
    "$(cd tests/torch && PYTHONPATH=$stub python3 -c 'import transformer_reference as r; print(r.HOST_MODELS)')" None

# Seed 000's Transformer at sequence 64 x batch 100 is one training for C07
# (k=1), C08 (plain) and C23 (keep): in one process C23's keep reuses C07's
# record (its idle share included), since keep asks for no hook bytes.
check_eq "C23's keep at batch 100 after C07 in one process: C07's record, not made again" \
    "$(cd "$beside" && PYTHONPATH=$stub:. python3 -c '
import grad_accumulation, activation_offload
for m in (grad_accumulation, activation_offload):
    m.main(["--quick"])' 2>/dev/null | grep -c '^C23,activation_offload,pytorch:transformer_keep,batch,100,step_time,.*measured once in this run, for C07 (the same training)')" 1

# Between points, cuBLAS's workspaces go too (PyTorch keeps one a stream for
# the process's life), so a point starts with what the suite's fresh model
# has; a torch without the call (older, or not CUDA's) is left as it is.
check_eq "release(): cuBLAS's workspaces cleared once, then the cache; without the call, nothing breaks" \
    "$(PYTHONPATH=$stub:$beside python3 -c '
import torch, beside as b
b.release(torch)
n = torch._cleared["workspaces"]
del torch._C
b.release(torch)
print(n, torch._cleared["workspaces"])' 2>&1)" "1 1"

# The time budget: the points a counterpart ranks first, then skipped rows.
PYTHONPATH=$stub python3 "$beside/mixed_precision.py" --budget-s 0.000001 > "$tmp/budget.out" 2>/dev/null; rc=$?
check_eq "a counterpart past its --budget-s: exit 0" "$rc" 0
check_eq "... seed 000's point alone measured (the verdict row's: 3 precisions)" \
    "$(grep -c '^C05,mixed_precision,pytorch:[a-z_0-9]*,batch,[0-9]*,peak_allocated,bytes,1,' "$tmp/budget.out"):$(grep -c '^C05,mixed_precision,pytorch:transformer_[a-z0-9]*,batch,32,peak_allocated,bytes,1,' "$tmp/budget.out")" 3:3
check_eq "... every other point a skipped row saying why" \
    "$(grep -c '^C05,mixed_precision,pytorch:[a-z_0-9]*,batch,[0-9]*,peak_allocated,bytes,0,,,,,,skipped,"not measured: run-all.s time budget' "$tmp/budget.out")" 42
check "... and a summary counting them" grep -q '^C05,mixed_precision,pytorch,,,pytorch_beside,,0,,,,,,ok,"42 of 45 points not measured' "$tmp/budget.out"
check "... its verdict row still made (seed 000's point was measured)" grep -q '^C05,mixed_precision,pytorch,verdict,' "$tmp/budget.out"
PYTHONPATH=$stub python3 "$beside/compile_fusion.py" --budget-s 0.000001 > "$tmp/budget.out" 2>/dev/null
check "compile_fusion.py past its budget: seed 000's point compiled, the others' compiles skipped" \
    bash -c "grep -q '^C25,compile_fusion,pytorch:seed_t512_bf_adam_fp16/fused,batch,32,peak_allocated,bytes,1,' '$tmp/budget.out' && grep -q '^C25,compile_fusion,pytorch:enc_adamw_fp32/fused,batch,16,peak_allocated,bytes,0,,,,,,skipped,\"not measured: one more torch.compile' '$tmp/budget.out'"

# Without torch: one line up front, then as with --no-pytorch. A torch that
# fails to import or sees no CUDA device (found by the runner, not up
# front: importing torch to check takes seconds): one more line after the
# suite, then as with --no-pytorch.
report_untimed() { sed -E 's/^(No usable GPU: .*\. )Run .* on host/\1Run on host/; s/, [0-9]+\.[0-9] s\.$/, T s./' "$1"; }
mkdir -p "$tmp/nosite"  # a python3 without site-packages: no torch, whatever this machine has
printf '#!/bin/sh\nexec %s -S "$@"\n' "$(command -v python3)" > "$tmp/nosite/python3"
chmod +x "$tmp/nosite/python3"
for case in "missing:python3 cannot import torch: no module named torch" "broken:python3 cannot import torch: no torch here" \
            "nocuda:torch 0.0-stub sees no CUDA device"; do
    what=${case%%:*} why=${case#*:}
    case $what in
        missing) PATH=$tmp/nosite:$PATH run_all "$tmp/res-$what" ;;
        broken) PYTHONPATH=$tmp/notorch run_all "$tmp/res-$what" ;;
        *) STUB_NO_CUDA=1 PYTHONPATH=$stub run_all "$tmp/res-$what" ;;
    esac
    check_eq "by default, $what: exit 0" "$rc" 0
    if [ "$what" = missing ]; then
        check_eq "... one line saying why" "$(grep PyTorch <<<"$out")" \
            "PyTorch beside: not available ($why); the verdicts rest on the suite alone"
    else
        check_eq "... the line up front, then after the suite one saying why" \
            "$(grep PyTorch <<<"$out" | sed -E 's/^(PyTorch beside: torch )[^;]*; C04, C05, C08 measured again .*/\1V; C04, C05, C08/')" \
            "PyTorch beside: torch V; C04, C05, C08"$'\n'"PyTorch beside: not available ($why); the verdicts rest on the suite alone"
        check_eq "... no runner log left" "$(ls "$r/logs" | grep -c pytorch)" 0
    fi
    check_eq "... the rest of the console as with --no-pytorch" \
        "$(untimed "$(grep -v PyTorch <<<"$out")" | sed "s|$tmp/res-$what|R|g")" "$(untimed "$plain_out" | sed "s|$tmp/plain|R|g")"
    bad=""
    for k in $keys; do cmp -s "$r/$k.csv" "$fixtures/$k.csv" || bad="$bad $k"; done
    check_eq "... every CSV the experiment's" "$bad" ""
    check_eq "... REPORT.md as with --no-pytorch" "$(report_untimed "$r/REPORT.md")" "$(report_untimed "$plain/REPORT.md")"
done

# A counterpart that crashes, hangs or prints lines that are not its rows.
wrap_torch "$tmp/crash" <<'EOF'
def mm(a, b, out=None):
    sys.stderr.write("RuntimeError: CUDA error: an illegal memory access was encountered\n\n")
    os._exit(9)
EOF
PYTHONPATH=$tmp/crash run_all "$tmp/crash-run" --only C04,C05,C18
check_eq "a counterpart that crashes the process: run-all exits 0 as before" "$rc" 0
check "... the console says it failed, with its exit code and its last line" \
    grep -q '^PyTorch beside: C04 sync_vs_async_timing [0-9.]* s failed (exit 9): RuntimeError: CUDA error: an illegal memory access was encountered (logs/' <<<"$out"
check "... the next one ran, in a new process" grep -q '^PyTorch beside: C05 mixed_precision [0-9.]* s, [0-9]* rows$' <<<"$out"
check "... its rows are in its CSV" grep -q '^C05,mixed_precision,pytorch,verdict,' "$r/mixed_precision.csv"
check "... a failed row in the CSV, with the reason and the log" \
    grep -q '^C04,sync_vs_async_timing,pytorch,,,pytorch_beside,,0,,,,,,failed,tests/torch/beside/sync_vs_async_timing.py failed (exit 9): RuntimeError: CUDA error: an illegal memory access was encountered (logs/sync_vs_async_timing.pytorch.log)$' "$r/sync_vs_async_timing.csv"
check "... the report says so under C04" grep -q '^- \*\*PyTorch beside failed\*\*: tests/torch/beside/sync_vs_async_timing.py failed (exit 9)' "$r/REPORT.md"
check "... the verdict is the suite's" grep -Eq '^\| C04 \| .* \| \*\*holds\*\* \|( [^|]* \|)?$' "$r/REPORT.md"
check_eq "... logs/pytorch.tsv says failed, then ran" "$(cut -f2,3 "$r/logs/pytorch.tsv" | tr '\t\n' ': ')" "failed:9 ran:0 "
check_eq "... no temporary file left" "$(tmp_files "$r" "$r/logs")" 0

# A counterpart that raises at every point: its rows say so, the next one runs in the same process.
wrap_torch "$tmp/raise" <<'EOF'
def mm(a, b, out=None):
    raise ValueError("a bug in the counterpart")
EOF
PYTHONPATH=$tmp/raise run_all "$tmp/raise-run" --only C04,C05
check_eq "a counterpart whose points raise: exit 0, its point rows failed, C05 measured" \
    "$rc:$(grep -c ',pytorch:sgemm,n,[0-9]*,time_cuda_events,s,0,,,,,,failed,ValueError: a bug' "$r/sync_vs_async_timing.csv"):$(grep -c '^PyTorch beside: C05 mixed_precision [0-9.]* s, [0-9]* rows$' <<<"$out")" "0:4:1"

wrap_torch "$tmp/hang" <<'EOF'
import time as _time
def mm(a, b, out=None):
    _time.sleep(60)
EOF
t0=$(date +%s)
PYTHONPATH=$tmp/hang MEMCLAIMS_PYTORCH_TIMEOUT_S=2 run_all "$tmp/hang-run" --only C04,C05
check_eq "a counterpart past MEMCLAIMS_PYTORCH_TIMEOUT_S: exit 0" "$rc" 0
check "... stopped at the limit" test $(($(date +%s) - t0)) -lt 30
check "... a failed row saying it timed out" \
    grep -q '^C04,sync_vs_async_timing,pytorch,,,pytorch_beside,,0,,,,,,failed,tests/torch/beside/sync_vs_async_timing.py timed out after 2 s$' "$r/sync_vs_async_timing.csv"
check "... the next one ran" grep -q '^C05,mixed_precision,pytorch,verdict,' "$r/mixed_precision.csv"
out=$(MEMCLAIMS_PYTORCH_TIMEOUT_S=soon "$root/scripts/run-all" --build "$fake" --results "$tmp/never" 2>&1); rc=$?
check_eq "a bad MEMCLAIMS_PYTORCH_TIMEOUT_S: exit 2, one line, no run" "$rc:$(wc -l <<<"$out"):$([ -e "$tmp/never" ] && echo made)" 2:1:
out=$(MEMCLAIMS_PYTORCH_BUDGET_S=-1 "$root/scripts/run-all" --build "$fake" --results "$tmp/never" 2>&1); rc=$?
check_eq "a bad MEMCLAIMS_PYTORCH_BUDGET_S: exit 2, one line, no run" "$rc:$(wc -l <<<"$out"):$([ -e "$tmp/never" ] && echo made)" 2:1:

out=$(MEMCLAIMS_PYTORCH_TARGET_S=soon "$root/scripts/run-all" --build "$fake" --results "$tmp/never" 2>&1); rc=$?
check_eq "a bad MEMCLAIMS_PYTORCH_TARGET_S: exit 2, one line, no run" "$rc:$(wc -l <<<"$out"):$([ -e "$tmp/never" ] && echo made)" 2:1:

# The budget by default (auto): what is left of MEMCLAIMS_PYTORCH_TARGET_S
# since run-all began; spent (a target of 0 s), each counterpart measures
# the points it ranks first and skips the rest, in rows.
wrap_torch "$tmp/slow" <<'EOF'
import time as _time
cuda.synchronize = lambda *a: _time.sleep(0.05)  # a point takes ~0.4 s: its points pass a 1 s budget
EOF
MEMCLAIMS_PYTORCH_TARGET_S=0 PYTHONPATH=$tmp/slow run_all "$tmp/auto0" --only C05
check_eq "auto budget, target already passed: exit 0, C05's seed point measured (3 precisions), others skipped in rows" \
    "$rc:$(grep -c '^C05,mixed_precision,pytorch:[a-z_0-9]*,batch,[0-9]*,peak_allocated,bytes,1,' "$r/mixed_precision.csv" | awk '{ print ($1 >= 3 && $1 < 45) ? "3+" : $1 }'):$(grep -c ',peak_allocated,bytes,0,,,,,,skipped,"not measured: run-all.s time budget' "$r/mixed_precision.csv" | awk '{ print ($1 > 0 ? "some" : "none") }')" 0:3+:some
check "... logs/run-all.tsv gives the counterparts' wall time" grep -Eq '^pytorch_seconds	[0-9]+\.[0-9]$' "$r/logs/run-all.tsv"
check_eq "... logs/pytorch-timeline.tsv: the go file at 0, the phases in time order, the runner's exit last" \
    "$(awk -F'\t' '{ sub(/ (start|ran)$/, " *", $2); print $2 }' "$r/logs/pytorch-timeline.tsv" | uniq | tr '\n' ';')" \
    "go file written;go file read;seed 000's programs settled, CUDA context made meanwhile;CUDA context;mixed_precision *;main returns;runner exited (exit 0);"
check "... its seconds since the go file, rising" \
    awk -F'\t' 'NR == 1 && $1 != "0.0" { exit 1 } $1 + 0 < last { exit 1 } { last = $1 + 0 }' "$r/logs/pytorch-timeline.tsv"
PYTHONPATH=$tmp/slow run_all "$tmp/auto170" --only C05
check_eq "auto budget within the default target: every point measured" \
    "$rc:$(grep -c ',skipped,' "$r/mixed_precision.csv")" 0:0

# An experiment that needs no GPU (mode host) starts first, in the
# background, beside those whose rule reads memory (--list's 8th field);
# those whose rule reads a time (or that do not say) run after it ends. The
# runner starts with the run and waits (its go file) until the last ends.
cat > "$fake/c01_host_fake" <<FAKE
#!/usr/bin/env bash
[ "\$1" = --list ] && { printf 'C01\thost_fake\tfake\tseed says C26\tmethod\trule\thost\tmemory\n'; exit 0; }
out=.; while [ \$# -gt 0 ]; do [ "\$1" = --out ] && out=\$2; shift; done
sleep 2  # the memory experiment runs now; the timed ones wait; the runner is up, waiting
{ pgrep -f 'run_many.py .*--go-file' >/dev/null && echo runner-up
  ls "\$out"/.pytorch.tmp.*/go 2>/dev/null | grep -q . && echo go-early
  pgrep -f '$fake/c0[45]_' >/dev/null && echo timed-beside
  cat "\$out"/.pytorch.tmp.*/progress.tsv 2>/dev/null; } > "$tmp/host-saw"
cp "$fixtures/randn_bytes.csv" "\$out/.host_fake.csv.tmp" && sed -i 's/C18,randn_bytes/C01,host_fake/' "\$out/.host_fake.csv.tmp" && mv "\$out/.host_fake.csv.tmp" "\$out/host_fake.csv"
FAKE
cat > "$fake/c02_mem_fake" <<FAKE
#!/usr/bin/env bash
[ "\$1" = --list ] && { printf 'C02\tmem_fake\tfake\tseed says C02\tmethod\trule\tgpu\tmemory\n'; exit 0; }
out=.; while [ \$# -gt 0 ]; do [ "\$1" = --out ] && out=\$2; shift; done
pgrep -f '$fake/c01_host_fake' >/dev/null && echo host-beside > "$tmp/mem-saw"
cp "$fixtures/randn_bytes.csv" "\$out/.mem_fake.csv.tmp" && sed -i 's/C18,randn_bytes/C02,mem_fake/' "\$out/.mem_fake.csv.tmp" && mv "\$out/.mem_fake.csv.tmp" "\$out/mem_fake.csv"
FAKE
chmod +x "$fake/c01_host_fake" "$fake/c02_mem_fake"
PYTHONPATH=$stub run_all "$tmp/host" --only C04,C01,C05,C02
check_eq "PyTorch beside, one experiment that needs no GPU and one whose rule reads memory: exit 0, in phases" \
    "$rc:$(grep -o '^\[[0-9]/4\] C[0-9]*' <<<"$out" | tr '\n' ' ')" "0:[1/4] C02 [2/4] C01 [3/4] C04 [4/4] C05 "
check "... one line says the one that needs no GPU started" grep -q '^C01 host_fake started (needs no GPU' <<<"$out"
check_eq "... the memory one ran while it ran" "$(cat "$tmp/mem-saw" 2>/dev/null)" host-beside
check_eq "... the runner was up, waiting (no go file, no counterpart started), no timed experiment beside it" \
    "$(cat "$tmp/host-saw" 2>/dev/null | tr '\n' ' ')" "runner-up "
check "... then both counterparts ran" bash -c "grep -q '^PyTorch beside: C04 sync_vs_async_timing [0-9.]* s, [0-9]* rows$' <<<'$out' && grep -q '^PyTorch beside: C05 mixed_precision [0-9.]* s, [0-9]* rows$' <<<'$out'"
check_eq "... runs.tsv has all four, ran" "$(cut -f1,2 "$r/runs.tsv" | sort | tr '\t\n' ': ')" \
    "host_fake:ran mem_fake:ran mixed_precision:ran sync_vs_async_timing:ran "
check_eq "... no temporary file left" "$(tmp_files "$r" "$r/logs")" 0
rm -f "$tmp/mem-saw"
PYTHONPATH=$stub run_all "$tmp/host-plain" --only C04,C01,C05,C02 --no-pytorch
check_eq "... with --no-pytorch, the same phases" "$rc:$(grep -o '^\[[0-9]/4\] C[0-9]*' <<<"$out" | tr '\n' ' ')" "0:[1/4] C02 [2/4] C01 [3/4] C04 [4/4] C05 "
check_eq "... the memory one beside it again" "$(cat "$tmp/mem-saw" 2>/dev/null)" host-beside

# Ctrl-C while the one that needs no GPU runs beside: it is stopped too,
# and runs.tsv marks both interrupted.
GNUPLOT=/nonexistent "$root/scripts/run-all" --build "$fake" --results "$tmp/host-int" --only C01,C02 --no-pytorch \
    > "$tmp/host-int.out" 2>&1 &
runner=$!
for _ in $(seq 100); do pgrep -f "$fake/c01_host_fake" >/dev/null && break; sleep 0.1; done
sleep 0.3
kill -TERM "$runner"
wait "$runner"; rc=$?
r=$tmp/host-int/$(readlink "$tmp/host-int/latest")
check_eq "interrupted while the host experiment runs beside: exit 130, it is stopped, runs.tsv says interrupted" \
    "$rc:$(pgrep -f "$fake/c01_host_fake" >/dev/null && echo still-running):$(awk -F'\t' '$2 == "interrupted" { print $1 }' "$r/runs.tsv" | sort | tr '\n' ' ')" \
    "130::host_fake "
rm -f "$fake/c01_host_fake" "$fake/c02_mem_fake"

# Lines that are not PyTorch rows of C04 (a verdict, another claim's row,
# text) printed while it runs are dropped, counted in a failed row; the
# verdict stays the suite's.
wrap_torch "$tmp/noisy" <<'EOF'
_noise = ["C04,sync_vs_async_timing,pytorch,,,verdict,,0,,,,,,does-not-hold,not PyTorch's to say",
          "C05,mixed_precision,pytorch:x,,,m,s,1,1,1,1,1,0,ok,another claim",
          "C04,sync_vs_async_timing,pytorch:sgemm,n,256,m,s,1,fast,1,1,1,0,ok,a figure that is not a number",
          "loading torch..."]
def mm(a, b, out=None):  # prints, once, while the counterpart runs
    while _noise:
        print(_noise.pop(0))
    return out
EOF
PYTHONPATH=$tmp/noisy run_all "$tmp/noisy-run" --only C04
check_eq "a counterpart printing 4 lines that are not its rows: exit 0" "$rc" 0
check "... a failed row counts them" grep -q ',pytorch_beside,,0,,,,,,failed,tests/torch/beside/sync_vs_async_timing.py 4 lines of its output were not PyTorch rows of C04 (dropped)' "$r/sync_vs_async_timing.csv"
check "... its real rows are kept" grep -q '^C04,sync_vs_async_timing,pytorch:sgemm,n,256,time_cuda_events,' "$r/sync_vs_async_timing.csv"
check_eq "... one verdict row, the suite's" "$(rows_awk '{ csv_split($0, f); if (f[6] == "verdict") n++ } END { print n + 0 }' "$r/sync_vs_async_timing.csv"):$(awk -f scripts/lib/csv.awk -f scripts/lib/verdict.awk "$r/sync_vs_async_timing.csv")" 1:holds
check "... the report is written" grep -Eq '^\| C04 \| .* \| \*\*holds\*\* \|( [^|]* \|)?$' "$r/REPORT.md"

# Ctrl-C while a counterpart runs: the CSV stays the suite's, no temporary file.
PYTHONPATH=$tmp/hang GNUPLOT=/nonexistent "$root/scripts/run-all" --build "$fake" --results "$tmp/int" --only C04 \
    > "$tmp/int.out" 2>&1 &
runner=$!
for _ in $(seq 100); do ls "$tmp"/int/*/.pytorch.tmp.*/sync_vs_async_timing.rows >/dev/null 2>&1 && break; sleep 0.1; done
kill -TERM "$runner"
wait "$runner"; rc=$?
r=$tmp/int/$(readlink "$tmp/int/latest")
check_eq "interrupted while PyTorch runs: exit 130" "$rc" 130
check "... the CSV is the suite's alone" cmp "$r/sync_vs_async_timing.csv" "$fixtures/sync_vs_async_timing.csv"
check_eq "... no temporary file" "$(tmp_files "$r" "$r/logs")" 0

# ------------------------------------------------------------ C24: torchrun in a subprocess
# sharded_training.py runs tests/torch/fsdp_reference.py once per wrapper;
# here a stand-in for it (BESIDE_FSDP_REFERENCE) writes the per-rank CSVs
# PyTorch wrote on two H200s (tests/fixtures/fsdp/, width 4096), or fails
# as a real run would. The suite's points: C24 on two H100s
# (tests/fixtures/sharded_gpu/h100x2/c24.csv: the whole step on the GPUs).
c24=sharded_training
c24_csv=$root/tests/fixtures/sharded_gpu/h100x2/c24.csv
cat > "$tmp/fake_fsdp.py" <<'EOF'
"""A stand-in for fsdp_reference.py OUTDIR --configs FILE --steps K --gpus N:
logs its call; copies tests/fixtures/fsdp/w<W>_adam_<mode>.rank<R>.csv; with
FAKE_OOM=<mode> fails as a rank out of memory does; with FAKE_HANG=<mode>
starts a "rank" in a session of its own (as torchrun does), writes its pid
to FAKE_PID, and hangs."""
import os, shutil, subprocess, sys, time
out, a = sys.argv[1], sys.argv[2:]
conf, steps, gpus = a[a.index("--configs") + 1], a[a.index("--steps") + 1], int(a[a.index("--gpus") + 1])
name, flags = open(conf).read().rstrip("\n").split("\t")
f = flags.split()
mode, width = f[f.index("--mode") + 1], f[f.index("--width") + 1]
with open(os.environ["FAKE_FSDP_LOG"], "a") as log:
    log.write("%s\t%s --steps %s --gpus %d\n" % (name, flags, steps, gpus))
print("W1123 torch/distributed/run.py:774] Setting OMP_NUM_THREADS environment variable for each process")
if mode == os.environ.get("FAKE_OOM"):
    sys.stderr.write("[rank0]: Traceback (most recent call last):\n[rank0]: torch.OutOfMemoryError: CUDA out of "
                     "memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 79.19 GiB\n"
                     "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                     "fsdp_reference: %s failed (exit 1)\n" % name)
    sys.exit(1)
if mode == os.environ.get("FAKE_HANG"):
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open(os.environ["FAKE_PID"], "w") as fp:
        fp.write("%d\n" % p.pid)
    time.sleep(300)
os.makedirs(out)
for r in range(gpus):
    shutil.copy(os.path.join(os.environ["FAKE_FSDP_FIXTURES"], "w%s_adam_%s.rank%d.csv" % (width, mode, r)),
                os.path.join(out, "%s.rank%d.csv" % (name, r)))
shutil.copy(os.path.join(os.environ["FAKE_FSDP_FIXTURES"], "meta.txt"), os.path.join(out, "meta.txt"))
EOF
export BESIDE_FSDP_REFERENCE=$tmp/fake_fsdp.py FAKE_FSDP_LOG=$tmp/fsdp.calls FAKE_FSDP_FIXTURES=$root/tests/fixtures/fsdp \
    FAKE_PID=$tmp/rank.pid
# A stand-in torch with two GPUs, without and with NCCL.
wrap_torch "$tmp/two" <<'EOF'
cuda.device_count = lambda: 2
EOF
wrap_torch "$tmp/nccl" <<'EOF'
cuda.device_count = lambda: 2
distributed = _module("distributed", is_available=lambda: True, is_nccl_available=lambda: True)
EOF
gone() { # PIDFILE: that process has ended (a zombie not yet reaped by init counts), within 3 s
    local pid
    pid=$(cat "$1") || return 1
    for _ in $(seq 30); do
        [ -e "/proc/$pid" ] && [ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 0
        sleep 0.1
    done
    return 1
}

: > "$tmp/fsdp.calls"
PYTHONPATH=$tmp/notorch python3 "$beside/$c24.py" --suite-csv "$fixtures/$c24.csv" > "$tmp/out" 2>"$tmp/err"; rc=$?
check_eq "$c24.py over the suite's model-only C24: waived (77) before torch, one line, no rows" \
    "$rc:$(wc -l < "$tmp/err"):$(wc -c < "$tmp/out")" 77:1:0
check "... saying the suite measured nothing on the GPUs" grep -q "measured nothing on the GPUs (a run on the model only)" "$tmp/err"
PYTHONPATH=$stub python3 "$beside/$c24.py" --suite-csv "$root/results/reference-h100/$c24.csv" > "$tmp/out" 2>"$tmp/err"; rc=$?
check_eq "... over the H100's (its GPU part waived): 77, one line with the suite's reason" \
    "$rc:$(wc -l < "$tmp/err"):$(wc -c < "$tmp/out"):$(grep -c 'waived: needs 2 GPUs, found 1' "$tmp/err")" 77:1:0:1
PYTHONPATH=$stub python3 "$beside/$c24.py" --suite-csv "$c24_csv" > "$tmp/out" 2>"$tmp/err"; rc=$?
check_eq "$c24.py over a two-GPU run, torch seeing one GPU: waived (77), one line, no rows" \
    "$rc:$(wc -l < "$tmp/err"):$(wc -c < "$tmp/out")" 77:1:0
check "... saying it needs two" grep -q "C24's run needs 2 GPUs, torch sees 1: waived" "$tmp/err"
PYTHONPATH=$tmp/two python3 "$beside/$c24.py" --suite-csv "$c24_csv" > "$tmp/out" 2>"$tmp/err"; rc=$?
check_eq "... two GPUs, torch without NCCL: waived (77), one line" "$rc:$(wc -l < "$tmp/err"):$(wc -c < "$tmp/out")" 77:1:0
check_eq "... and fsdp_reference.py never ran" "$(wc -l < "$tmp/fsdp.calls")" 0

mkdir -p "$tmp/c24tmp"
TMPDIR=$tmp/c24tmp PYTHONPATH=$tmp/nccl python3 "$beside/$c24.py" --suite-csv "$c24_csv" --repeats 4 \
    > "$tmp/c24.out" 2>"$tmp/c24.err"; rc=$?
check_eq "$c24.py over a two-GPU run's CSV: exit 0, the header first" "$rc:$(head -1 "$tmp/c24.out")" "0:$header"
tail -n +2 "$tmp/c24.out" > "$tmp/c24.rows"
check_eq "... every line a PyTorch row of C24 that run-all keeps" "$(dropped C24 $c24 "$tmp/c24.rows")" 0
check_eq "... one fsdp_reference.py run per wrapper, on the suite's shape, 2 + 4 steps, its 2 GPUs" "$(cat "$tmp/fsdp.calls")" \
"$(for m in ddp zero2 fsdp; do printf 'c24_w4096_%s\t--mode %s --layers 8 --in 4096 --width 4096 --out 4096 --batch 32 --optimizer adam --steps 6 --gpus 2\n' $m $m; done)"
same_points "... the points are the suite's (each wrapper's rank 0 and 1, ranks = 2)" "$tmp/c24.rows" "$c24_csv" peak_allocated
same_points "... step_time beside each of the suite's step_time" "$tmp/c24.rows" "$c24_csv" step_time
check "... rank 0's DDP peak: PyTorch's steps 3-6 (tests/fixtures/fsdp), said which" \
    grep -q '^C24,sharded_training,pytorch:ddp_rank0,ranks,2,peak_allocated,bytes,4,3290169856,3290169856,3290169856,3290169856,0,ok,"rank 0, steps 3-6 of 6 (after 2 warm-up): torch.cuda.max_memory_allocated per step; width 4096, L=8, 32 rows a rank, adam, fp32, 2 GPUs, DistributedDataParallel' "$tmp/c24.rows"
check "... its step time: the median of steps 3-6, with min, max, stdev" \
    grep -q '^C24,sharded_training,pytorch:ddp_rank0,ranks,2,step_time,s,4,0.007628896,0.00730172777,0.00783951998,' "$tmp/c24.rows"
check "... a summary with PyTorch's and the suite's figures, both whole steps" \
    grep -q "^C24,sharded_training,pytorch,,,pytorch_beside,,0,,,,,,ok,\"PyTorch 2.11.0+cu130 (NCCL 2.28.9) on 2 x NVIDIA H200: .* PyTorch 3.06, 1.44, 1.31 (suite 3.06, 1.44, 1.31); PyTorch's whole step DDP, ZeRO-2, FSDP 7.629 ms, .*; the suite's whole step 5.501 ms, 5.383 ms, 6.804 ms\"$" "$tmp/c24.rows"
check "... where PyTorch's peak equals the suite's" grep -q '^C24,sharded_training,pytorch,,,pytorch_beside,,0,,,,,,ok,peak allocated: PyTorch.s equals the suite.s at 6 of 6 points' "$tmp/c24.rows"
check "... the verdict row: both peaks and both whole steps" \
    grep -q "^C24,sharded_training,pytorch,verdict,,pytorch_beside,,0,,,,,,ok,\"2 GPUs, width 4096, rank 0's peak DDP/ZeRO-2/FSDP 3.06/1.44/1.31 GiB suite, 3.06/1.44/1.31 GiB PyTorch; whole step 5.50/5.38/6.80 ms suite, 7.63/[0-9.]*/[0-9.]* ms PyTorch.\"$" "$tmp/c24.rows"
check_eq "... no gpu_idle_share row (the step runs in the ranks' processes)" "$(grep -c gpu_idle_share "$tmp/c24.rows")" 0
check_eq "... its temporary folder removed" "$(ls -A "$tmp/c24tmp")" ""

FAKE_OOM=zero2 PYTHONPATH=$tmp/nccl python3 "$beside/$c24.py" --suite-csv "$c24_csv" --repeats 4 --csv-header "$header" \
    > "$tmp/c24.oom" 2>"$tmp/c24.err"; rc=$?
check_eq "$c24.py with a wrapper out of memory: exit 0, no header" "$rc:$(grep -c '^claim,' "$tmp/c24.oom")" 0:0
check "... its row: status oom, the rank's line, not torchrun's ChildFailedError" \
    grep -q '^C24,sharded_training,pytorch:zero2,ranks,2,peak_allocated,bytes,0,,,,,,oom,exit 1: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB' "$tmp/c24.oom"
check "... the others measured" grep -q '^C24,sharded_training,pytorch:fsdp_rank1,ranks,2,peak_allocated,bytes,4,' "$tmp/c24.oom"
check "... a failed summary names it" grep -q '^C24,sharded_training,pytorch,,,pytorch_beside,,0,,,,,,failed,1 of 3 points failed: ZeRO-2 width 4096: exit 1: torch.OutOfMemoryError' "$tmp/c24.oom"
check "... the verdict row marks it -" grep -q "^C24,sharded_training,pytorch,verdict,.*3.06/-/1.31 GiB PyTorch" "$tmp/c24.oom"
check "... its output's last lines in the log" grep -q 'fsdp_reference: c24_w4096_zero2 failed (exit 1)' "$tmp/c24.err"
check_eq "... every line a PyTorch row of C24 that run-all keeps" "$(dropped C24 $c24 "$tmp/c24.oom")" 0

t0=$(date +%s)
FAKE_HANG=fsdp PYTHONPATH=$tmp/nccl python3 "$beside/$c24.py" --suite-csv "$c24_csv" --repeats 4 --run-timeout-s 2 \
    > "$tmp/c24.hang" 2>/dev/null; rc=$?
check_eq "$c24.py with a run that hangs past --run-timeout-s: exit 0" "$rc" 0
check "... stopped at the limit" test $(($(date +%s) - t0)) -lt 20
check "... a failed row saying so" grep -q '^C24,sharded_training,pytorch:fsdp,ranks,2,peak_allocated,bytes,0,,,,,,failed,fsdp_reference.py ran past 2 s (--run-timeout-s): stopped with its ranks$' "$tmp/c24.hang"
check "... its \"rank\", in a session of its own, stopped too" gone "$tmp/rank.pid"
check "... the other wrappers measured" grep -q '^C24,sharded_training,pytorch:zero2_rank0,ranks,2,step_time,s,4,' "$tmp/c24.hang"

# Under run_many.py: its watchdog stops the command's whole tree before it ends the process.
mkdir -p "$tmp/c24run" "$tmp/c24many"
cp "$c24_csv" "$tmp/c24run/$c24.csv"
rm -f "$tmp/rank.pid"
t0=$(date +%s)
FAKE_HANG=ddp PYTHONPATH=$tmp/nccl python3 "$beside/run_many.py" --run "$tmp/c24run" --out "$tmp/c24many" --timeout-s 3 \
    > /dev/null 2>&1; rc=$?
check_eq "run_many.py, $c24 hanging in torchrun past --timeout-s: exit 124, its progress line" \
    "$rc:$(grep -v start "$tmp/c24many/progress.tsv" | cut -f1-3 | tr '\t' :)" "124:$c24:timeout:124"
check "... within seconds" test $(($(date +%s) - t0)) -lt 20
check "... its \"rank\" stopped with it" gone "$tmp/rank.pid"
: > "$tmp/c24many/progress.tsv"
PYTHONPATH=$tmp/nccl python3 "$beside/run_many.py" --run "$tmp/c24run" --out "$tmp/c24many" --budget-s 65 \
    > /dev/null 2>&1; rc=$?
check_eq "run_many.py over a two-GPU run: $c24 ran" "$rc:$(grep -v start "$tmp/c24many/progress.tsv" | cut -f1-3 | tr '\t' :)" \
    "0:$c24:ran:0"
check_eq "... 2 + 5 steps asked by default" "$(tail -3 "$tmp/fsdp.calls" | grep -c -- '--steps 7 --gpus 2$')" 3
check_eq "... its rows: each rank of the three wrappers, the steps after the first two of those written (6)" \
    "$(grep -c '^C24,sharded_training,pytorch:[a-z0-9]*_rank[01],ranks,2,peak_allocated,bytes,4,.*steps 3-6 of 6' "$tmp/c24many/$c24.rows")" 6
: > "$tmp/c24many/progress.tsv"
cp "$fixtures/$c24.csv" "$tmp/c24run/"
PYTHONPATH=$tmp/nccl python3 "$beside/run_many.py" --run "$tmp/c24run" --out "$tmp/c24many" > /dev/null 2>&1; rc=$?
check_eq "run_many.py over a model-only C24: $c24 waived at once" \
    "$rc:$(grep -v start "$tmp/c24many/progress.tsv" | cut -f1-3 | tr '\t' :)" "0:$c24:waived:77"
check_eq "the budget: the last key's allowance of --budget-s 65 is 65 s after the one-GPU keys, 120 s with C24's share (75.3 s) on top" \
    "$(cd "$beside" && python3 -c 'import run_many as r, time
one = [k for k in r.ORDER if k not in r.MULTI_GPU]
print("%.0f %.0f" % (r.allowance(one[-1], one[:-1], 65, time.monotonic()),
                     r.allowance(one[-1], r.ORDER[:-1], 65, time.monotonic())))')" "65 120"

# SIGTERM (run-all's Ctrl-C) while torchrun runs: its tree stopped, then the process ends as SIGTERM ends it.
rm -f "$tmp/rank.pid"
FAKE_HANG=ddp PYTHONPATH=$tmp/nccl python3 "$beside/$c24.py" --suite-csv "$c24_csv" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/rank.pid" ] && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"; rc=$?
check_eq "$c24.py on SIGTERM while fsdp_reference.py runs: ends by SIGTERM (143)" "$rc" 143
check "... its \"rank\" stopped first" gone "$tmp/rank.pid"

# run-all: C24's counterpart after the suite, named up front "on two GPUs" (on one, the suite's C24 waives).
make_fake c24_sharded_training C24 "$c24_csv"
PYTHONPATH=$tmp/nccl run_all "$tmp/c24-all" --only C04,C24
check_eq "run-all with C24 measured on two GPUs, torch seeing two: exit 0" "$rc" 0
check "... C24 named up front, on two GPUs" grep -q '^PyTorch beside: torch [^;]*; C04, C24 (on two GPUs) measured again' <<<"$out"
check "... its console line" grep -q '^PyTorch beside: C24 sharded_training [0-9.]* s, [0-9]* rows$' <<<"$out"
check "... its verdict-beside row in its CSV" grep -q '^C24,sharded_training,pytorch,verdict,,pytorch_beside,,0,,,,,,ok,"2 GPUs, width 4096' "$r/$c24.csv"
check "... the suite's rows first, unchanged" cmp <(head -n "$(wc -l < "$c24_csv")" "$r/$c24.csv") "$c24_csv"
PYTHONPATH=$stub run_all "$tmp/c24-one" --only C04,C24
check_eq "run-all, torch seeing one GPU: exit 0" "$rc" 0
check "... its counterpart waived: one line, not a failure" \
    grep -q "^PyTorch beside: C24 sharded_training [0-9.]* s not measured (exit 77): beside/sharded_training: C24's run needs 2 GPUs, torch sees 1: waived" <<<"$out"
check "... a row of status skipped with the reason" \
    grep -q "^C24,sharded_training,pytorch,,,pytorch_beside,,0,,,,,,skipped,\"tests/torch/beside/sharded_training.py not measured (exit 77): beside/sharded_training: C24's run needs 2 GPUs" "$r/$c24.csv"
unset BESIDE_FSDP_REFERENCE FAKE_FSDP_LOG FAKE_FSDP_FIXTURES FAKE_PID
rm -f "$fake/c24_sharded_training"

# ------------------------------------------------------------ the real experiments, on the model
out_real=$(PYTHONPATH=$stub ASAN_OPTIONS=$noleak GNUPLOT=/nonexistent "$root/scripts/run-all" --build "$build" \
    --results "$tmp/real2" --quick --only C05,C07,C08,C09,C23,C25,C27 2>&1); rc=$?
r=$tmp/real2/$(readlink "$tmp/real2/latest")
check_eq "run-all --quick of the built C05, C07, C08, C09, C23, C25, C27 (model-only): exit 0" "$rc" 0
check_eq "... PyTorch for each" "$(grep -c '^PyTorch beside: C[0-9]* [a-z_]* [0-9.]* s, [0-9]* rows$' <<<"$out_real")" 7
bad=""
for k in mixed_precision grad_accumulation checkpointing optimizer_state activation_offload compile_fusion no_grad_eval; do
    [ "$(points_of "$r/$k.csv" peak_allocated | grep -Ev "${skip[$k]:-^\$}" | sort | uniq -c | awk '$1 != 2' | wc -l)" = 0 ] ||
        bad="$bad $k"
done
check_eq "... on the points the experiment measured" "$bad" ""
check "... the verdicts are the model's" grep -Eq '^\| C08 \| .* \| \*\*[a-z-]*\*\* \(computed by the allocator model, no GPU\) \|( [^|]* \|)?$' "$r/REPORT.md"
check "... a training two claims share is measured once (C08's Transformer at seq 64 is C07's at k=1)" \
    grep -q '^C08,checkpointing,pytorch:transformer plain,seq,64,step_time,.*measured once in this run, for C07' "$r/checkpointing.csv"
check "... and C25's eager seed model is C05's Transformer in fp16 at B=32" \
    grep -q '^C25,compile_fusion,pytorch:seed_t512_bf_adam_fp16/eager,batch,32,step_time,.*measured once in this run, for C05' "$r/compile_fusion.csv"

# ------------------------------------------------------------ make compare
# Two runs with PyTorch's rows: matched like the suite's; one PyTorch figure
# made ten times slower in B is labelled higher; against a run without
# them, they are counted in one run only.
cp -r "$with" "$tmp/with-b"
rm -f "$tmp/with-b/results.json"
awk -F, -v OFS=, '$3 == "pytorch:sgemm" && $5 == "256" && $6 == "time_cuda_events" { for (i = 9; i <= 12; i++) $i = 10 * $i } { print }' \
    "$with/sync_vs_async_timing.csv" > "$tmp/x" && mv "$tmp/x" "$tmp/with-b/sync_vs_async_timing.csv"
"$build/compare" --tsv "$tmp/cmp.tsv" "$with" "$tmp/with-b" > "$tmp/cmp.md" 2>"$tmp/err"; rc=$?
check_eq "compare of two runs with PyTorch's rows: exit 0" "$rc" 0
npt=$(awk -F'\t' '$4 ~ /^pytorch:/' "$tmp/cmp.tsv" | wc -l)
check_eq "... every PyTorch figure matched" "$npt" "$(cat "$with"/*.csv | grep ',pytorch:' | rows_awk '{ csv_split($0, f); if (f[9] != "") n++ } END { print n + 0 }')"
check_eq "... the slower one is higher, 10x" "$(awk -F'\t' '$4 == "pytorch:sgemm" && $6 == "256" && $7 == "time_cuda_events" { print $1, $11 }' "$tmp/cmp.tsv")" "higher 10"
check "... and listed under C04" grep -q '^| sync_vs_async_timing pytorch:sgemm time_cuda_events n=256 | s | ' "$tmp/cmp.md"
check "... summaries are words, not figures" bash -c "! grep -q pytorch_beside '$tmp/cmp.tsv'"
"$build/compare" --tsv "$tmp/cmp2.tsv" "$plain" "$with" > /dev/null; rc=$?
check_eq "compare of a run without PyTorch's rows and one with: exit 0" "$rc" 0
check_eq "... PyTorch's figures only in B" "$(awk -F'\t' '$4 ~ /^pytorch:/ { print $1 }' "$tmp/cmp2.tsv" | sort -u)" only-b
check_eq "... the suite's all the same" "$(awk -F'\t' '!/^#/ && $4 !~ /^pytorch:/ { print $1 }' "$tmp/cmp2.tsv" | sort -u)" same

# ------------------------------------------------------------ the seeds' programs
# C01's and C07's counterparts run seed 000's program in a process of its own
# (tests/torch/seed_programs.py --only c01|c07); here a stand-in script
# writes what it would (MEMCLAIMS_SEED_PROGRAMS), then one that fails.
cat > "$tmp/seed_ok.py" <<'PY'
import os, sys
out, which = sys.argv[1], sys.argv[3]
fig = {"c01": {"unoptimized": (419430400, 0), "optimized": (4000256, 0)},
       "c07": {"large_batch": (2689374208, 348274688), "gradient_accumulation": (992592384, 351879168)}}[which]
with open(os.path.join(out, which + ".txt"), "w") as f:
    for fn, (ret, after) in fig.items():
        f.write("%s.returned=%d\n%s.allocated_after=%d\n" % (fn, ret, fn, after))
PY
printf 'import sys\nprint("RuntimeError: CUDA error: out of memory")\nsys.exit(1)\n' > "$tmp/seed_bad.py"
ASAN_OPTIONS=$noleak "$build/c01_del_empty_cache" --model-only > "$tmp/c01.model.csv" 2>/dev/null
MEMCLAIMS_SEED_PROGRAMS=$tmp/seed_ok.py PYTHONPATH=$stub python3 "$beside/del_empty_cache.py" \
    --suite-csv "$tmp/c01.model.csv" --csv-header "$header" > "$tmp/c01.rows" 2>/dev/null; rc=$?
check_eq "del_empty_cache.py (C01): exit 0" "$rc" 0
check_eq "... PyTorch's figure for each function of the seed's program" \
    "$(grep -c '^C01,del_empty_cache,pytorch:seed 000 program: [a-z]*(),,,seed_program,bytes,1,' "$tmp/c01.rows")" 2
check "... the summary sets PyTorch's, the suite's and the seed's side by side" \
    grep -q 'in PyTorch here: unoptimized() 400.00 MB (suite 400.00, equal), the seed printed 400.00; optimized() 3.81 MB (suite 3.81, equal), the seed printed 3.81' "$tmp/c01.rows"
check "... and a verdict-beside row with both figures" grep -q '^C01,del_empty_cache,pytorch,verdict,,pytorch_beside,.*prints 400.00 / 3.81 MB (the seed printed 400.00 / 3.81)' "$tmp/c01.rows"
MEMCLAIMS_SEED_PROGRAMS=$tmp/seed_bad.py PYTHONPATH=$stub python3 "$beside/del_empty_cache.py" \
    --suite-csv "$tmp/c01.model.csv" --csv-header "$header" > "$tmp/c01.bad" 2>/dev/null; rc=$?
check_eq "... where the program fails: exit 0, a failed row with its last line" \
    "$rc:$(grep -c 'seed_program,bytes,0,,,,,,failed,.*exited 1: RuntimeError: CUDA error: out of memory' "$tmp/c01.bad")" 0:1
ASAN_OPTIONS=$noleak "$build/c07_grad_accumulation" --model-only > "$tmp/c07.model.csv" 2>/dev/null
grep -e '^claim,' -e 'seed 000 program' "$tmp/c07.model.csv" > "$tmp/c07.seed.csv"
MEMCLAIMS_SEED_PROGRAMS=$tmp/seed_ok.py PYTHONPATH=$stub python3 "$beside/grad_accumulation.py" \
    --suite-csv "$tmp/c07.seed.csv" --csv-header "$header" > "$tmp/c07.rows" 2>/dev/null; rc=$?
check_eq "grad_accumulation.py (C07) given the suite's seed program rows: exit 0" "$rc" 0
check "... the summary sets PyTorch's, the suite's and the seed's side by side" \
    grep -q 'large_batch() 2564.79 MB (suite 2564.79, equal), the seed printed 2520.47; gradient_accumulation() 946.61 MB (suite 946.61, equal), the seed printed 903.73' "$tmp/c07.rows"
MEMCLAIMS_SEED_PROGRAMS=$tmp/seed_ok.py PYTHONPATH=$stub python3 "$beside/grad_accumulation.py" --budget-s 0.000001 \
    --suite-csv "$tmp/c07.seed.csv" --csv-header "$header" > "$tmp/c07.spent" 2>/dev/null
check_eq "... past its --budget-s, the seed's program is still measured (REPORT.md's table needs it)" \
    "$(grep -c '^C07,grad_accumulation,pytorch:seed 000 program: [a-z_]*(),,,seed_program,bytes,1,' "$tmp/c07.spent")" 2
# run_many.py with a go file (run-all) starts the seed's programs with
# itself: each imports torch, then waits for the go file; the counterpart
# reads what its program wrote. One whose claim the go file leaves out is
# stopped without running.
{ printf 'import os, sys, time\nlog = os.environ["SEED_GO_LOG"]\n'
  printf 'go = sys.argv[sys.argv.index("--go-file") + 1]\n'
  printf 'open(log, "a").write("%%s waits, go file there: %%s\\n" %% (sys.argv[3], os.path.exists(go)))\n'
  printf 'while not os.path.exists(go):\n    time.sleep(0.02)\n'
  printf 'open(log, "a").write("%%s ran\\n" %% sys.argv[3])\n'
  cat "$tmp/seed_ok.py"; } > "$tmp/seed_go.py"
mkdir -p "$tmp/gorun" "$tmp/goout"
cp "$tmp/c01.model.csv" "$tmp/gorun/del_empty_cache.csv"
cp "$tmp/c07.seed.csv" "$tmp/gorun/grad_accumulation.csv"
SEED_GO_LOG=$tmp/seed_go.log MEMCLAIMS_SEED_PROGRAMS=$tmp/seed_go.py PYTHONPATH=$stub \
    python3 "$beside/run_many.py" --run "$tmp/gorun" --out "$tmp/goout" --go-file "$tmp/go" \
    del_empty_cache grad_accumulation > "$tmp/go.err" 2>&1 &
go_pid=$!
for _ in $(seq 100); do [ "$(grep -c waits "$tmp/seed_go.log" 2>/dev/null)" = 2 ] && break; sleep 0.1; done
check_eq "run_many.py --go-file: both seed programs started with it, waiting for the go file" \
    "$(sort "$tmp/seed_go.log" 2>/dev/null | tr '\n' ' ')" "c01 waits, go file there: False c07 waits, go file there: False "
printf '0\ndel_empty_cache\n' > "$tmp/go"
wait "$go_pid"; rc=$?
check_eq "... the go file names C01 alone: exit 0, c01's program ran, c07's was stopped unrun" \
    "$rc:$(grep ran "$tmp/seed_go.log" | tr '\n' ' ')" "0:c01 ran "
check_eq "... C01's rows from the program started early" \
    "$(grep -c '^C01,del_empty_cache,pytorch:seed 000 program: [a-z]*(),,,seed_program,bytes,1,' "$tmp/goout/del_empty_cache.rows")" 2
check_eq "... and no process of it left" "$(pgrep -f "$tmp/seed_go.py" | wc -l)" 0
# run_many's own CUDA context is made while the programs run (it times
# nothing): after their go file, before they are waited for.
check_eq "seed_programs_settle: meanwhile() after the programs' go file, before they are waited for" \
    "$(cd "$beside" && PYTHONPATH=$stub python3 -c '
import os, sys, beside_seeds, subproc
order = []
subproc.finish = lambda proc, t: order.append("waited") or (0, False)
beside_seeds._SEED_STARTED["c07"] = {"proc": None, "dir": None, "got": None}
go = sys.argv[1]
beside_seeds.seed_programs_settle({"c07"}, go, lambda: order.append("context, go file there: %s" % os.path.exists(go)))
beside_seeds._SEED_STARTED.clear()
beside_seeds.seed_programs_settle(set(), go + ".none", lambda: order.append("context, no program"))
print("; ".join(order))' "$tmp/settle.go")" "context, go file there: True; waited; context, no program"
# C07's program waits with torch._dynamo imported (its Adam(...) imports
# it: 4.4 s after the go on an H200's host); C01's, which has no optimizer, without.
mkdir -p "$tmp/fakedyn/torch"
: > "$tmp/fakedyn/torch/__init__.py"
printf 'import os\nopen(os.environ["DYN_MARK"], "a").write("imported\\n")\n' > "$tmp/fakedyn/torch/_dynamo.py"
: > "$tmp/fakedyn.go"
for w in c01 c07; do
    DYN_MARK=$tmp/fakedyn.$w PYTHONPATH=$tmp/fakedyn:$root/tests/torch python3 -c \
        'import sys, seed_programs; seed_programs.wait_for(sys.argv[1], sys.argv[2])' "$tmp/fakedyn.go" $w
done
check_eq "seed_programs.py --go-file: torch._dynamo imported before the go for C07's program, not C01's" \
    "$(cat "$tmp/fakedyn.c07" 2>/dev/null):$(cat "$tmp/fakedyn.c01" 2>/dev/null)" "imported:"
# A program started early whose starter ends before the go file (run-all
# stopped while its experiments ran) ends too, unrun, not left waiting.
mkdir -p "$tmp/orphan"
PYTHONPATH=$stub bash -c 'MEMCLAIMS_SEED_PARENT=$$ python3 "$1" "$2" --only c01 --go-file "$2/never" & exec sleep 30' _ \
    "$root/tests/torch/seed_programs.py" "$tmp/orphan" > /dev/null 2>&1 &
starter=$!
for _ in $(seq 50); do pgrep -f "$tmp/orphan --only c01" > /dev/null && break; sleep 0.1; done
kill "$starter"; wait "$starter" 2>/dev/null
for _ in $(seq 30); do pgrep -f "$tmp/orphan --only c01" > /dev/null || break; sleep 0.1; done
check_eq "seed_programs.py --go-file: its starter gone before the go file, it ends unrun" \
    "$(pgrep -f "$tmp/orphan --only c01" | wc -l):$(ls "$tmp/orphan")" "0:"
# REPORT.md sets the three figures side by side under the claim
mkdir -p "$tmp/seedrun"
cp "$fixtures/meta.csv" "$tmp/seedrun/"
for e in c01_del_empty_cache c07_grad_accumulation; do "$build/$e" --list | cut -f1-6; done > "$tmp/seedrun/experiments.tsv"
{ cat "$tmp/c01.model.csv"; grep ',pytorch' "$tmp/c01.rows"; } > "$tmp/seedrun/del_empty_cache.csv"
{ cat "$tmp/c07.model.csv"; grep ',pytorch:seed' "$tmp/c07.rows"; } > "$tmp/seedrun/grad_accumulation.csv"
"$build/report" "$tmp/seedrun" > /dev/null 2>&1
check_eq "REPORT.md: the seeds' programs, three figures side by side" \
    "$(grep '^| seed 000 program' "$tmp/seedrun/REPORT.md")" \
    "| seed 000 program: unoptimized() | 400.00 MB | 400.00 MB | 400.00 MB |
| seed 000 program: optimized() | 3.81 MB | 3.81 MB | 3.81 MB |
| seed 000 program: large_batch() | 2520.47 MB | 2564.79 MB | 2564.79 MB |
| seed 000 program: gradient_accumulation() | 903.73 MB | 946.61 MB | 946.61 MB |"
check "... under the header The seed's code, The seed printed, PyTorch on this GPU, The suite" \
    grep -q "^| The seed's code | The seed printed | PyTorch on this GPU | The suite |$" "$tmp/seedrun/REPORT.md"

# ------------------------------------------------------------ the switch
check "run-all --help says PyTorch beside is on unless --no-pytorch" bash -c "'$root/scripts/run-all' --help | grep -q -- '^PyTorch beside (on unless --no-pytorch, make run-all PYTORCH=0'"
check_eq "make run-all PYTORCH=0 passes --no-pytorch" \
    "$(env -u MAKEFLAGS -u MAKELEVEL make -n -s -C "$root" run-all PYTORCH=0 SETUP_GOALS= 2>/dev/null | tail -1)" "scripts/run-all --no-pytorch"
check_eq "make run-all alone passes nothing (on)" "$(env -u MAKEFLAGS -u MAKELEVEL make -n -s -C "$root" run-all SETUP_GOALS= 2>/dev/null | tail -1)" "scripts/run-all "
check_eq "make run-all PYTORCH=1 too" "$(env -u MAKEFLAGS -u MAKELEVEL make -n -s -C "$root" run-all PYTORCH=1 SETUP_GOALS= 2>/dev/null | tail -1)" "scripts/run-all "
summary
