#!/usr/bin/env bash
# The runner, report and plot scripts: on fixture CSVs, on fake experiments
# (progress lines, atomic results, earlier runs untouched, an interrupted run
# marked in the report) and on the real experiments without a GPU.
#   tests/scripts/test_runner.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
export CUDA_VISIBLE_DEVICES=""
no_model_checks
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fixtures=$root/tests/fixtures/results
# Every experiment's --list and its --quick run without a GPU are already
# run under LeakSanitizer by test_experiments.sh, with the same arguments;
# here they run without its exit scan (about 0.4 s of CPU per start of a
# cuBLAS-linked program).
noleak="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# ---------------------------------------------------------- report on fixtures
run=$tmp/fixture-run
mkdir -p "$run"
cp "$fixtures"/*.csv "$run"/
: > "$run/experiments.tsv"
for csv in "$fixtures"/*.csv; do
    key=$(basename "$csv" .csv)
    [ "$key" = meta ] && continue
    exe=$(ls "$build"/c[0-9][0-9]_"$key" 2>/dev/null | head -1)
    if [ -n "$exe" ]; then ASAN_OPTIONS=$noleak "$exe" --list | cut -f1-6 >> "$run/experiments.tsv" # as run-all writes it
    else printf 'C%s\t%s\tfixture\tseed\tmethod\trule\n' "$(sed -n 2p "$csv" | cut -c2-3)" "$key" >> "$run/experiments.tsv"; fi
done
printf 'C98\tplanned_only\tnever ran\tseed text\tmethod\trule\n' >> "$run/experiments.tsv"
check "report writes REPORT.md from fixtures" "$root/scripts/report" --build "$build" "$run"
check "report names the GPU from meta.csv" grep -q "^# memclaims report: NVIDIA H100" "$run/REPORT.md"
for csv in "$fixtures"/*.csv; do
    key=$(basename "$csv" .csv)
    [ "$key" = meta ] && continue
    id=$(sed -n 2p "$csv" | cut -d, -f1)
    word=$(awk -f "$root/scripts/lib/csv.awk" -f "$root/scripts/lib/verdict.awk" "$csv")
    check "report table gives $id the fixture's verdict ($word)" grep -q "^| $id | .* | \*\*$word\*\* |$" "$run/REPORT.md"
done
check "report marks a planned experiment without CSV as not run" grep -q "^| C98 | seed text | - | \*\*not run\*\* |$" "$run/REPORT.md"
check "report counts the experiments without a verdict" grep -q "1 of .* experiments have no verdict" "$run/REPORT.md"
check "report of a run from before half_attention was recorded says nothing of it" \
    bash -c "! grep -q 'fp16/bf16 attention' '$run/REPORT.md'"
check "... nor of the host's CPU" bash -c "! grep -q ' CPUs)' '$run/REPORT.md'"
printf 'half_attention,cuDNN 9.19.0\ncpu_model,Intel(R) Xeon(R) Platinum 8480+\ncpu_count,32\n' >> "$run/meta.csv"
"$root/scripts/report" --build "$build" "$run" >/dev/null 2>&1
check "report names the kernels of the Transformer's fp16/bf16 attention from meta.csv" \
    grep -q "The Transformer's fp16/bf16 attention: cuDNN 9.19.0\. Run " "$run/REPORT.md"
check "report names the host's CPU from meta.csv (a launch-bound PyTorch step runs at its pace)" \
    grep -qF " (Intel(R) Xeon(R) Platinum 8480+, 32 CPUs), commit " "$run/REPORT.md"
check_eq "report leaves no temporary file" "$(ls -A "$run" | grep -c tmp)" 0
check "report refuses a folder that is not a run" bash -c "! '$root/scripts/report' --build '$build' '$tmp'"
# An experiment that failed: its state and exit code, and its seconds.
frun=$tmp/failed-run
cp -r "$run" "$frun"
printf 'planned_only\tfailed\t2\t4.0\tgpu\n' > "$frun/runs.tsv"
"$root/scripts/report" --build "$build" "$frun" > /dev/null
check "report marks a failed experiment with its exit code" grep -q '^| C98 | seed text | - | \*\*failed (exit 2)\*\* |$' "$frun/REPORT.md"
check "report gives a finished experiment's CSV, log and seconds" grep -q '^`planned_only.csv`, log `logs/planned_only.log`, 4.0 s.$' "$frun/REPORT.md"
# Bad input: one line, exit 2, the REPORT.md there untouched.
cp "$frun/REPORT.md" "$tmp/report.before"
printf 'C98,planned_only,,,,verdict\n' >> "$frun/randn_bytes.csv"
err=$("$root/scripts/report" --build "$build" "$frun" 2>&1 >/dev/null); rc=$?
check_eq "report of a run with a malformed CSV exits 2" "$rc" 2
check_eq "... with one line naming the file and line" "$(wc -l <<<"$err") $(grep -c 'randn_bytes.csv:[0-9]*: ' <<<"$err")" "1 1"
check "... and leaves REPORT.md as it was, with no temporary file" \
    bash -c "cmp -s '$frun/REPORT.md' '$tmp/report.before' && ! ls -A '$frun' | grep -q tmp"
err=$("$root/scripts/report" --build "$tmp/no-build" "$run" 2>&1 >/dev/null); rc=$?
check_eq "report without build/report exits 2 with one line" "$rc $(wc -l <<<"$err")" "2 1"
# Each committed reference run's REPORT.md was written by the report as it
# was then (scripts/lib/report.awk, before tools/report.c): the report of a
# copy of its inputs (charts as empty files: only their presence counts) is
# the same, byte for byte. A deliberate change of the report regenerates them.
nref=0
for ref in "$root"/results/reference-*/; do
    [ -f "$ref/REPORT.md" ] || continue
    name=$(basename "$ref"); copy=$tmp/ref-$name
    mkdir -p "$copy"
    cp "$ref"/*.tsv "$ref"/*.csv "$copy"/
    for png in "$ref"/*.png; do [ -f "$png" ] && : > "$copy/$(basename "$png")"; done
    "$root/scripts/report" --build "$build" "$copy" > /dev/null
    check "report of $name is its committed REPORT.md, byte for byte" cmp "$copy/REPORT.md" "$ref/REPORT.md"
    nref=$((nref + 1))
done
check "found committed reference runs with a REPORT.md ($nref)" test "$nref" -gt 0
# Two experiments waived for different reasons: the summary line gives each one's.
wrun=$tmp/waived-run
cp -r "$run" "$wrun"
for kr in "randn_bytes:no reason one" "fragmentation:no reason two"; do
    awk -F, -v OFS=, -v why="${kr#*:}" 'NR > 1 && $6 == "verdict" { $14 = "waived"; $15 = why; NF = 15 } { print }' \
        "$wrun/${kr%%:*}.csv" > "$wrun/x.tmp" && mv "$wrun/x.tmp" "$wrun/${kr%%:*}.csv"
done
"$root/scripts/report" --build "$build" "$wrun" > /dev/null
check "report's summary gives each waived experiment's own reason" \
    grep -q '^\*\*2 of .* experiments were waived\*\* (C19: no reason two; C18: no reason one)\.$\|^\*\*2 of .* experiments were waived\*\* (C18: no reason one; C19: no reason two)\.$' "$wrun/REPORT.md"

# ---------------------------------------------------------- plot on fixtures
out=$(GNUPLOT=/nonexistent/gnuplot "$root/scripts/plot" "$run"); rc=$?
check_eq "plot without gnuplot exits 0" "$rc" 0
check "plot without gnuplot says what it skipped and how to draw later" \
    grep -q "gnuplot not found: charts skipped.*make plots RUN=" <<<"$out"
if command -v gnuplot >/dev/null; then
    "$root/scripts/plot" "$run" >/dev/null 2>"$tmp/plot.err"
    check_eq "plot draws every fixture without error" "$(cat "$tmp/plot.err")" ""
    for gp in "$root"/plots/*.gp; do
        key=$(basename "$gp" .gp)
        # Charts of other commands: compare (test_compare.sh), whatif_* (test_whatif.sh).
        case $key in compare|whatif_*) continue ;; esac
        [ -f "$run/$key.csv" ] || { failure "plots/$key.gp has a fixture CSV in tests/fixtures/results"; continue; }
        check "plot draws $key.png (a PNG file)" bash -c "head -c 4 '$run/$key.png' | grep -q PNG"
    done
    "$root/scripts/report" --build "$build" "$run" >/dev/null
    check "report links the charts" grep -q '!\[.*\](.*\.png)' "$run/REPORT.md"
else
    echo "SKIP: gnuplot not installed: charts not drawn (make deps)"
fi
# Side by side, printed in order: a stand-in gnuplot (GNUPLOT) whose
# activation_offload chart waits for block_rounding's to have started (one
# at a time it would wait 5 s and fail) and whose checkpointing chart fails.
cat > "$tmp/gnuplot-standin" <<'STANDIN'
#!/usr/bin/env bash
case $3 in
    */activation_offload.gp)
        for _ in $(seq 50); do [ -e "$PLOT_FLAG" ] && break; sleep 0.1; done
        [ -e "$PLOT_FLAG" ] || exit 1 ;;
    */block_rounding.gp) touch "$PLOT_FLAG" ;;
    */checkpointing.gp) echo "stand-in failure" >&2; exit 1 ;;
esac
printf '\x89PNG\r\n' > out.png
STANDIN
chmod +x "$tmp/gnuplot-standin"
prun=$tmp/plot-side-by-side
mkdir -p "$prun"
cp "$fixtures"/*.csv "$prun"/
out=$(PLOT_FLAG=$tmp/plot.flag MEMCLAIMS_PLOT_JOBS=4 GNUPLOT=$tmp/gnuplot-standin "$root/scripts/plot" "$prun" 2>&1); rc=$?
check_eq "plot with one chart failing exits 1" "$rc" 1
check "... draws the charts side by side (activation_offload's waited for block_rounding's)" test -s "$prun/activation_offload.png"
check "... says which failed" grep -q "^plot: gnuplot failed for checkpointing: stand-in failure" <<<"$out"
got=$(awk '/\.png$/ { n = split($2, p, "/"); k = p[n]; sub(/\.png$/, "", k); print k; next }
           /gnuplot failed for/ { k = $5; sub(/:$/, "", k); print k }' <<<"$out")
want=$(for c in "$prun"/*.csv; do k=$(basename "$c" .csv); grep -qx "$k" <<<"$got" && echo "$k"; done)
check_eq "... its lines in the keys' order" "$got" "$want"
check "... one line a chart (every fixture with a plots/<key>.gp)" test "$(wc -l <<<"$got")" -ge 20
check_eq "... and no temporary file left" "$(find "$prun" -name '*.tmp*' | wc -l)" 0
out=$(MEMCLAIMS_PLOT_JOBS=0 GNUPLOT=$tmp/gnuplot-standin "$root/scripts/plot" "$prun" 2>&1); rc=$?
check_eq "MEMCLAIMS_PLOT_JOBS=0: exit 2, one line" "$rc:$(wc -l <<<"$out")" "2:1"

# ---------------------------------------------------------- fake experiments
fake=$tmp/fake-build
mkdir -p "$fake"
cp "$build/meta" "$fake/meta"
cp "$build/results_json" "$fake/results_json"
cp "$build/report" "$fake/report"
# A fake experiment: --list (mode gpu, or $5), --help (no --model-only), and
# --out DIR writes its CSV via a temp + rename after sleeping $3 seconds; the
# temp file exists while it sleeps.
make_fake() { # NAME CLAIM SECONDS VERDICT [MODE FIELD]
    cat > "$fake/$1" <<FAKE
#!/usr/bin/env bash
[ "\$1" = --list ] && { printf '$2\t${1#c[0-9][0-9]_}\tfake\tseed says $2\tmethod\trule${5-\tgpu}\n'; exit 0; }
[ "\$1" = --help ] && { echo "fake $2: options --quick --out DIR"; exit 0; }
out=.; while [ \$# -gt 0 ]; do [ "\$1" = --out ] && out=\$2; shift; done
if [ -n "\${FAKE_SELF_APPS:-}" ]; then # its own process on the GPU while it runs, as NVML lists it
    echo "\$\$, /usr/bin/fake-experiment, 100" >> "\$FAKE_SELF_APPS"
    trap 'sed -i "/^\$\$, /d" "\$FAKE_SELF_APPS"' EXIT
fi
echo partial > "\$out/.${1#c[0-9][0-9]_}.csv.tmp.\$\$"
trap 'rm -f "\$out/.${1#c[0-9][0-9]_}.csv.tmp.\$\$"; exit 143' TERM
sleep $3 & wait
printf '%s\n%s\n' "claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note" \
    "$2,${1#c[0-9][0-9]_},,,,verdict,,0,,,,,,$4,fake figures" > "\$out/.${1#c[0-9][0-9]_}.csv.tmp.\$\$"
mv "\$out/.${1#c[0-9][0-9]_}.csv.tmp.\$\$" "\$out/${1#c[0-9][0-9]_}.csv"
FAKE
    chmod +x "$fake/$1"
}
make_fake c01_fast C01 0 holds
make_fake c02_slow C02 30 holds-partly
results=$tmp/results

out=$("$root/scripts/run-all" --no-pytorch --build "$fake" --results "$results" --only C01 2>&1); rc=$?
check_eq "run-all on a fake experiment exits 0" "$rc" 0
check "run-all prints one progress line per experiment" grep -Eq '^\[1/1\] C01 fast \.\.\. [0-9.]+ s holds$' <<<"$out"
first=$(readlink "$results/latest")
check "run-all points results/latest at the run" test -f "$results/$first/REPORT.md"
check "run-all writes meta.csv, experiments.tsv, runs.tsv and the CSV" \
    test -f "$results/$first/meta.csv" -a -f "$results/$first/experiments.tsv" -a -f "$results/$first/runs.tsv" -a -f "$results/$first/fast.csv"
check "meta.csv names the host's CPU and counts them" \
    bash -c "grep -Eq '^cpu_model,.+$' '$results/$first/meta.csv' && grep -Eq '^cpu_count,[1-9][0-9]*$' '$results/$first/meta.csv'"
check "meta.csv says which kernels run the Transformer's fp16/bf16 attention" \
    grep -Eq "^half_attention,(cuDNN [0-9]+\.[0-9]+\.[0-9]+|the suite's kernels \(not built with cuDNN\))$" "$results/$first/meta.csv"
m0=$(MEMCLAIMS_CUDNN=0 ASAN_OPTIONS=$noleak "$build/meta" --out "$tmp" >/dev/null 2>&1; grep '^half_attention,' "$tmp/meta.csv")
check "... and that MEMCLAIMS_CUDNN=0 turns cuDNN off (or that it is not built in)" \
    grep -Eq "turned off \(MEMCLAIMS_CUDNN=0\)$|not built with cuDNN" <<<"$m0"
check "run-all records its wall times (logs/run-all.tsv) and prints the total last" \
    bash -c "grep -Eq '^total_seconds	[0-9]+\.[0-9]$' '$results/$first/logs/run-all.tsv' && grep -Eq '^wall_seconds	[0-9]+\.[0-9]$' '$results/$first/logs/run-all.tsv' && grep -Eq '; [0-9]+\.[0-9] s in all$' <<<'$(tail -1 <<<"$out")'"
sum_before=$(cd "$results/$first" && find . -type f -exec md5sum {} + | sort)
sleep 1

"$root/scripts/run-all" --no-pytorch --build "$fake" --results "$results" >"$tmp/interrupted.out" 2>&1 &
runner=$!
for _ in $(seq 100); do ls "$results"/*/.slow.csv.tmp.* >/dev/null 2>&1 && break; sleep 0.1; done
second=$(readlink "$results/latest")
kill -TERM "$runner"
wait "$runner"; rc=$?
check_eq "an interrupted run-all exits 130" "$rc" 130
second=$(readlink "$results/latest")
check "results/latest points to the interrupted, newest run" test "$second" != "$first"
check "the interrupted experiment left no CSV under its final name" test ! -e "$results/$second/slow.csv"
check_eq "the interrupted run left no temporary file" "$(ls -A "$results/$second" | grep -c tmp)" 0
check "the report marks the interrupted experiment" grep -q '^| C02 | seed says C02 | - | \*\*interrupted\*\* |$' "$results/$second/REPORT.md"
check "the experiment that finished keeps its verdict" grep -q '^| C01 .*\*\*holds\*\* |$' "$results/$second/REPORT.md"
check "the interrupted run's results.json says interrupted" grep -q '"state":	"interrupted"' "$results/$second/results.json"
err=$("$build/compare" "$results/$second" "$results/$first" 2>&1 >/dev/null); rc=$?
check_eq "compare refuses the interrupted run (exit 2)" "$rc" 2
check "the first run's results.json is complete" grep -q '"state":	"complete"' "$results/$first/results.json"
sum_after=$(cd "$results/$first" && find . -type f -exec md5sum {} + | sort)
check_eq "the earlier run is untouched" "$sum_after" "$sum_before"

check_eq "run-all's experiments.tsv holds the descriptor's first six fields" \
    "$(cat "$results/$first/experiments.tsv")" "$(printf 'C01\tfast\tfake\tseed says C01\tmethod\trule')"
check "runs.tsv gives the fake's mode from its --list (gpu)" grep -q '^fast	.*	gpu$' "$results/$first/runs.tsv"
# A descriptor's mode decides how it runs without a GPU: host runs as it is,
# model-only gets --model-only, gpu waives (the fake runs in each case).
mkdir -p "$tmp/modes"
for m in host model-only bogus ""; do
    rm -rf "$fake"/c0[3-9]_*
    make_fake c03_mode C03 0 holds "$([ -n "$m" ] && printf '\\t%s' "$m")"
    out=$(CUDA_VISIBLE_DEVICES="" "$root/scripts/run-all" --no-pytorch --build "$fake" --results "$tmp/modes" --only C03 2>&1); rc=$?
    case $m in
        host|model-only)
            check_eq "a fake of mode $m: run-all exits 0" "$rc" 0
            check "  ... and records mode $m without a GPU" grep -q "^mode	.*	$m$" "$tmp/modes/$(readlink "$tmp/modes/latest")/runs.tsv" ;;
        *)
            check_eq "a fake whose --list gives ${m:-no} mode: run-all exits 2, one line" "$rc:$(printf '%s\n' "$out" | wc -l)" "2:1"
            check "  ... naming the experiment" grep -q "c03_mode --list gives no mode" <<<"$out" ;;
    esac
done
check_eq "  ... and writes no run folder for it" "$(ls "$tmp/modes" | grep -vc latest)" 2
rm -f "$fake"/c03_mode

# One that needs no GPU runs in the background beside those whose rule reads
# memory: runs.tsv gives its own seconds, not the time until the memory
# ones had ended; an interrupted run-all stops it too.
make_fake c03_hostbg C03 1 holds '\thost'
make_fake c04_memfg C04 3 holds '\tgpu\tmemory'
out=$("$root/scripts/run-all" --no-pytorch --build "$fake" --results "$tmp/bg" --only C03,C04 2>&1); rc=$?
bgrun=$tmp/bg/$(readlink "$tmp/bg/latest")
check_eq "a fake that needs no GPU beside a 3 s memory one: run-all exits 0" "$rc" 0
check "  ... its console line comes after the memory one's" \
    bash -c "grep -n '^\[[12]/2\]' <<<'$out' | tr '\n' ' ' | grep -q 'C04 memfg.*C03 hostbg'"
check "  ... and runs.tsv gives its own time (1 s), not the 3 s until run-all came to it" \
    awk -F'\t' '$1 == "hostbg" { ok = ($4 >= 0.9 && $4 < 2.5) } END { exit !ok }' "$bgrun/runs.tsv"
check_eq "  ... leaving no temporary file" "$(ls -A "$bgrun" | grep -c tmp)" 0
make_fake c03_hostbg C03 30 holds '\thost'
"$root/scripts/run-all" --no-pytorch --build "$fake" --results "$tmp/bg2" --only C03,C04 >/dev/null 2>&1 &
runner=$!
for _ in $(seq 100); do ls "$tmp"/bg2/*/.hostbg.csv.tmp.* >/dev/null 2>&1 && break; sleep 0.1; done
kill -TERM "$runner"
wait "$runner"; rc=$?
check_eq "run-all interrupted while one runs in the background: exit 130" "$rc" 130
check "  ... and the background experiment has stopped" bash -c "! pgrep -f '[c]03_hostbg --out' >/dev/null"
check "  ... marked interrupted in runs.tsv" grep -q '^hostbg	interrupted	130' "$tmp/bg2/$(readlink "$tmp/bg2/latest")/runs.tsv"
rm -f "$fake"/c03_hostbg "$fake"/c04_memfg

# ---------------------------------------------------------- another process on the GPU
# A stand-in nvidia-smi (NVIDIA_SMI): the compute processes are the lines of
# $FAKE_APPS ("pid, name, MiB"), utilization $FAKE_UTIL (default 0).
cat > "$tmp/nvidia-smi" <<'FAKE'
#!/usr/bin/env bash
case "$*" in
    -L) echo "GPU 0: Stand-in (UUID: GPU-0)" ;;
    *--query-compute-apps=*) cat "$FAKE_APPS" 2>/dev/null ;;
    *--query-gpu=utilization.gpu*) echo "${FAKE_UTIL:-0}" ;;
    *--query-gpu=index,clocks.sm*) echo "0, 1980, 0x0000000000000000" ;;
esac
FAKE
chmod +x "$tmp/nvidia-smi"
share=$tmp/share
apps=$tmp/apps
sleep 60 & other=$! # a process that is not run-all's
runall_shared() { NVIDIA_SMI=$tmp/nvidia-smi FAKE_APPS=$apps "$root/scripts/run-all" --no-pytorch --build "$fake" --results "$share" "$@"; }
printf '%s, /opt/conda/bin/python3, 20480\n' "$other" > "$apps"
out=$(MEMCLAIMS_GPU_WAIT_S=0 runall_shared --only C01 2>&1); rc=$?
check_eq "run-all on a GPU another process uses: exit 75, one line" "$rc:$(wc -l <<<"$out")" "75:1"
check "... naming the process and what to do" grep -q "^run-all: stopped: the GPU is in use by another process: $other python3 (20480 MiB) after 0 s; nothing was run (MEMCLAIMS_GPU_WAIT_S waits longer, MEMCLAIMS_GPU_BUSY=run runs anyway)$" <<<"$out"
check "... and makes no run folder" test ! -e "$share"
: > "$apps"
out=$(FAKE_UTIL=60 MEMCLAIMS_GPU_WAIT_S=0 runall_shared --only C01 2>&1); rc=$?
check_eq "a GPU busy with no process listed while the suite is idle: exit 75" "$rc" 75
check "... saying so" grep -q "busy (utilization 60% while the suite runs nothing; no process of it is listed)" <<<"$out"
printf '%s, python3, 20480\n' "$other" > "$apps"
( sleep 3; : > "$apps" ) &
out=$(MEMCLAIMS_GPU_WAIT_S=30 runall_shared --only C01 2>&1); rc=$?
check_eq "run-all waits for the other process to end, then runs (exit 0)" "$rc" 0
check_eq "... saying it waits, in one line" "$(grep -c "^run-all: the GPU is in use by another process: $other python3 (20480 MiB): waiting up to 30 s for it (MEMCLAIMS_GPU_WAIT_S)$" <<<"$out")" 1
check "... and the experiment is not marked" grep -Eq '^\[1/1\] C01 fast \.\.\. [0-9.]+ s holds$' <<<"$out"
make_fake c04_watched C04 3 holds
: > "$apps"
( sleep 1.5; printf '%s, python3, 4096\n' "$other" >> "$apps" ) &
out=$(FAKE_SELF_APPS=$apps runall_shared --only C01,C04 2>&1); rc=$?
shared=$share/$(readlink "$share/latest")
check_eq "another process that starts during an experiment: run-all exits 0" "$rc" 0
check "... the experiment's own process on the GPU does not count (C01 unmarked)" grep -Eq '^\[1/2\] C01 fast \.\.\. [0-9.]+ s holds$' <<<"$out"
check "... the one it shared the GPU with is marked on the console" grep -Eq "^\[2/2\] C04 watched \.\.\. [0-9.]+ s holds \[GPU shared: $other python3 \(4096 MiB\)\]$" <<<"$out"
check "... a gpu_shared row in its CSV naming the process" grep -q "^C04,watched,run,,,gpu_shared,,0,,,,,,ok,\"another process used the GPU while this experiment ran; during it: $other python3 (4096 MiB); its time figures may read slower" "$shared/watched.csv"
check "... REPORT.md says so up front, in the table and under the claim" bash -c "grep -q '^\*\*Another process used the GPU while C04 ran\*\*' '$shared/REPORT.md' && grep -q '^| C04 | .* | \*\*holds\*\* (GPU shared with another process) |$' '$shared/REPORT.md' && grep -q '^- \*\*GPU shared\*\*: another process used the GPU' '$shared/REPORT.md' && ! grep -q '^| C01 .*GPU shared' '$shared/REPORT.md'"
check "... results.json keeps the row" grep -q '"metric":	"gpu_shared"' "$shared/results.json"
check "... logs/gpu_share.tsv: each experiment's processes and clocks" bash -c "grep -q '^fast	-	-	gpu0 1980 MHz throttle 0x0000000000000000	' '$shared/logs/gpu_share.tsv' && grep -q '^watched	-	$other python3 (4096 MiB)	' '$shared/logs/gpu_share.tsv'"
check_eq "... no temporary file left" "$(find "$shared" -name '*.tmp*' | wc -l)" 0
printf '%s, python3, 20480\n' "$other" > "$apps"
out=$(MEMCLAIMS_GPU_WAIT_S=0 MEMCLAIMS_GPU_BUSY=run runall_shared --only C01 2>&1); rc=$?
check_eq "MEMCLAIMS_GPU_BUSY=run: runs beside it (exit 0)" "$rc" 0
check "... and marks the experiment" grep -Eq "^\[1/1\] C01 fast \.\.\. [0-9.]+ s holds \[GPU shared: $other python3 \(20480 MiB\)\]$" <<<"$out"
out=$(MEMCLAIMS_GPU_WAIT_S=x runall_shared --only C01 2>&1); rc=$?
check_eq "MEMCLAIMS_GPU_WAIT_S not a number: exit 2" "$rc" 2
kill "$other" 2>/dev/null; wait "$other" 2>/dev/null
rm -f "$fake"/c04_watched

out=$("$root/scripts/run-all" --no-pytorch --build "$fake" --results "$results" --bogus 2>&1); rc=$?
check_eq "run-all refuses an unknown option with exit 2" "$rc" 2
out=$("$root/scripts/run-all" --no-pytorch --build "$tmp/empty" --results "$results" 2>&1); rc=$?
check_eq "run-all without built experiments exits 2" "$rc" 2

# ---------------------------------------------------------- the real ones, no GPU
# Model-only where the experiment offers it, a waiver line for the others,
# charts only from data that exists (without gnuplot: none, and one line
# saying so), no gnuplot message, results.json. A
# few real experiments of each kind (model-only, host, waived): every one's
# --quick run without a GPU, its verdict and waiver, is test_experiments.sh's,
# and every chart script is drawn from the fixtures above.
only=C01,C03,C13,C19,C26,C27,C28
# A chart is a PNG where gnuplot is installed; without it, no file at all.
if command -v gnuplot >/dev/null; then gp=1 png=$(printf '\x89PNG'); else gp=0 png=""; fi
out=$(ASAN_OPTIONS=$noleak "$root/scripts/run-all" --no-pytorch --build "$build" --results "$results" --quick --only "$only" 2>&1); rc=$?
check_eq "run-all of real experiments ($only) without a GPU exits 0" "$rc" 0
real=$results/$(readlink "$results/latest")
n=0; n_model=0; n_host=0; bad_lines=""
for exe in "$build"/c[0-9][0-9]_*; do
    name=$(basename "$exe"); key=${name#c[0-9][0-9]_}; id=$(printf '%s' "$name" | cut -c1-3 | tr c C)
    printf ',%s,' "$only" | grep -q ",$id," || continue
    n=$((n + 1))
    if "$exe" --help | grep -q "Needs no GPU"; then
        # MC_EXP_NO_GPU: runs as it is, with a verdict and a chart.
        n_host=$((n_host + 1))
        grep -Eq "^\[[0-9]+/[0-9]+\] $id $key \.\.\. [0-9.]+ s (holds|holds-partly|does-not-hold|inconclusive)$" <<<"$out" || bad_lines="$bad_lines $id"
        grep -q "^| $id | .* | \*\*[a-z-]*\*\* |$" "$real/REPORT.md" || bad_lines="$bad_lines $id(report)"
        [ "$(head -c 4 "$real/$key.png" 2>/dev/null)" = "$png" ] || bad_lines="$bad_lines $id(chart)"
    elif "$exe" --help | grep -q -- --model-only; then
        n_model=$((n_model + 1))
        grep -Eq "^\[[0-9]+/[0-9]+\] $id $key \(model-only\) \.\.\. [0-9.]+ s (holds|holds-partly|does-not-hold|inconclusive) \(allocator model, no GPU\)$" <<<"$out" || bad_lines="$bad_lines $id"
        grep -q "^| $id | .* | \*\*[a-z-]*\*\* (computed by the allocator model, no GPU) |$" "$real/REPORT.md" || bad_lines="$bad_lines $id(report)"
        [ "$(head -c 4 "$real/$key.png" 2>/dev/null)" = "$png" ] || bad_lines="$bad_lines $id(chart)"
    else
        grep -Eq "^\[[0-9]+/[0-9]+\] $id $key \.\.\. [0-9.]+ s waived: .+$" <<<"$out" || bad_lines="$bad_lines $id"
        grep -q "^| $id | .* | \*\*waived\*\* |$" "$real/REPORT.md" || bad_lines="$bad_lines $id(report)"
        [ ! -e "$real/$key.png" ] || bad_lines="$bad_lines $id(chart of nothing)"
    fi
done
check "found experiments with --model-only ($n_model of $n)" test "$n_model" -gt 0
check_eq "each experiment: model-only verdict or one waiver line, in the console and the report; charts only from data" "$bad_lines" ""
# An optional tool's absence (hyperfine for C11, not in this selection) adds
# no line here, whichever tools this machine has; gnuplot's adds the one
# line saying the charts were skipped.
check_eq "one console line per experiment, plus the header lines, one saying each that needs no GPU started, and the report line (gnuplot $([ $gp = 1 ] && echo present || echo absent))" \
    "$(grep -vc '^\[' <<<"$out")" $((3 + 1 - gp + n_host))
check_eq "... the one that needs no GPU (C26) started first, beside those whose rules read memory (C01, C19, C27, C28), before those that read a time (C03, C13)" \
    "$(grep -o '^C26 mmap_dataset started\|^\[[0-9]/[0-9]\] C[0-9]*' <<<"$out" | sed 's/^\[[0-9]\/[0-9]\] //; s/ mmap_dataset started/+/' | tr '\n' ' ')" \
    "C26+ C01 C19 C27 C28 C26 C03 C13 "
check_eq "no hyperfine line when C11 is not run (hyperfine $(command -v hyperfine >/dev/null && echo present || echo absent) here)" \
    "$(grep -c hyperfine <<<"$out")" 0
check "the console says up front there is no GPU and what runs on the model" grep -q "^run-all: no usable GPU (.*): $n_model experiments run on the allocator model (--model-only), $n_host need no GPU, $((n - n_model - n_host)) need a GPU and are waived$" <<<"$out"
printf '%s\n' "$out" > "$tmp/console.txt"
if [ "$gp" = 1 ]; then
    check "no gnuplot message on the console" bash -c "! grep -qi -e gnuplot -e warning -e 'line [0-9]' '$tmp/console.txt'"
else
    check_eq "without gnuplot: one line on the console saying the charts were skipped and how to draw them" \
        "$(grep -i -e gnuplot -e warning -e 'line [0-9]' "$tmp/console.txt")" \
        "plot: gnuplot not found: charts skipped; install it (make deps) and run: make plots RUN=$real"
fi
check "the report's first lines say what a GPU run would add" bash -c "sed -n 3p '$real/REPORT.md' | grep -q '^\*\*What a GPU run would add\.\*\* .* need a GPU .* computed by the allocator model with no GPU'"
check "results.json written and complete" grep -q '"state":	"complete"' "$real/results.json"
check "runs.tsv records the mode" grep -q '	model-only$' "$real/runs.tsv"
out=$("$build/compare" "$root/results/reference-h100" "$real" 2>&1); rc=$?
check_eq "this no-GPU run compares with reference-h100 (exit 0)" "$rc" 0
"$build/c01_del_empty_cache" --repeats 0 --out "$tmp/never/made" >/dev/null 2>&1; rc=$?
check_eq "bad input with a missing --out folder: exit 2" "$rc" 2
check "... and the folder is not created" test ! -e "$tmp/never"
check "experiments' --out creates a missing folder" bash -c "'$build/c01_del_empty_cache' --model-only --quick --out '$tmp/new/deep' && test -s '$tmp/new/deep/del_empty_cache.csv'"
summary
