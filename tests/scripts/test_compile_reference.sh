#!/usr/bin/env bash
# tests/torch/compile_reference.py (C25's PyTorch figures) without torch or a
# GPU: its configurations are flags build/workload accepts (the seed's the
# same as transformer_reference.py's), it waives (77) without torch or CUDA,
# refuses bad input with exit 2, and, over a stand-in torch module
# (tests/torch/stub/torch.py, which counts the bytes of its tensors alive),
# runs its whole control flow: the files it writes, compile steps marked and
# left out of the medians, eager's rows equal to transformer_reference.py's
# (the shared Training class), a compile failure or a crashed child recorded
# in its meta while the other runs go on.
#   tests/scripts/test_compile_reference.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 2
export PYTHONDONTWRITEBYTECODE=1
cr=tests/torch/compile_reference.py
stub=$root/tests/torch/stub
configs=tests/torch/compile_configs.txt

# ------------------------------------------------------------ configurations
python3 "$cr" "$tmp/unused" --list > "$tmp/list" 2>"$tmp/err"; rc=$?
check_eq "--list without torch: exit 0" "$rc" 0
check_eq "--list: the two configurations" "$(cut -f1 "$tmp/list" | tr '\n' ' ')" "seed_t512_bf_adam_fp16 enc_adamw_fp32 "
while IFS=$'\t' read -r name flags; do
    # shellcheck disable=SC2086 # the flags are words
    "$build/workload" ${flags/--steps 10/--steps 1} --model-only > "$tmp/wl.csv" 2>"$tmp/err"; rc=$?
    check_eq "build/workload --model-only accepts $name's flags" "$rc" 0
done < "$tmp/list"
check_eq "the CSV header is build/workload's" "$(python3 -c 'import sys; sys.path.insert(0, "tests/torch"); import transformer_reference as t; print(t.HEADER)')" \
    "$(head -1 "$tmp/wl.csv")"
seed_flags() { awk -F'\t' -v n=seed_t512_bf_adam_fp16 '$1 == n { sub(/ --steps [0-9]+$/, "", $2); print $2 }' "$1"; }
check_eq "the seed's flags are transformer_reference.py's, built on the host as the seed builds it" \
    "$(seed_flags "$tmp/list")" "$(seed_flags tests/fixtures/transformer/configs.txt) --build host"

# ------------------------------------------------------------ waivers, bad input
mkdir -p "$tmp/notorch"
echo 'raise ImportError("no torch here")' > "$tmp/notorch/torch.py"
PYTHONPATH=$tmp/notorch python3 "$cr" "$tmp/w1" > /dev/null 2>&1; rc=$?
check_eq "no torch: waived (77)" "$rc" 77
STUB_NO_CUDA=1 PYTHONPATH=$stub python3 "$cr" "$tmp/w2" > /dev/null 2>&1; rc=$?
check_eq "no CUDA device: waived (77)" "$rc" 77
check_eq "... and no CSV written" "$(ls "$tmp/w2" | grep -c csv)" 0

refused() { # WHAT ARGS...: exit 2 and nothing written to OUTDIR $tmp/bad
    local what=$1 rc
    shift
    PYTHONPATH=$stub python3 "$cr" "$tmp/bad" "$@" > /dev/null 2> "$tmp/err"; rc=$?
    if [ "$rc" -eq 2 ] && [ ! -e "$tmp/bad" ]; then pass "refused: $what ($(tail -1 "$tmp/err"))"
    else failure "refused: $what" "exit $rc; $(tail -1 "$tmp/err")"; fi
}
printf 'a\t--arch encoder --seq 8 --batch 2 --checkpoint\n' > "$tmp/ckpt.txt"
printf 'a --arch encoder --seq 8 --batch 2\n' > "$tmp/notab.txt"
printf 'a\t--arch encoder --seq 8 --batch 2\na\t--arch encoder --seq 8 --batch 4\n' > "$tmp/twice.txt"
printf 'a\t--arch encoder --seq 8 --batch 2 --precision fp8\n' > "$tmp/badflag.txt"
printf '# only a comment\n' > "$tmp/none.txt"
refused "a --checkpoint configuration" --configs "$tmp/ckpt.txt"
refused "a line without a tab" --configs "$tmp/notab.txt"
refused "a repeated name" --configs "$tmp/twice.txt"
refused "a flag build/workload refuses" --configs "$tmp/badflag.txt"
refused "no configuration" --configs "$tmp/none.txt"
refused "a missing configurations file" --configs "$tmp/nowhere.txt"
refused "an unknown --only name" --only nope
refused "--warmup leaving no step" --steps 3 --warmup 3
refused "an unknown mode" --modes eager,jit
mkdir -p "$tmp/full" && echo keep > "$tmp/full/x"
PYTHONPATH=$stub python3 "$cr" "$tmp/full" > /dev/null 2>&1; rc=$?
check_eq "an OUTDIR not empty: exit 2" "$rc" 2
check_eq "... and left as it was" "$(ls "$tmp/full")" x

# ------------------------------------------------------------ a run over the stand-in
out=$tmp/run
PYTHONPATH=$stub python3 "$cr" "$out" > /dev/null 2> "$tmp/err"; rc=$?
check_eq "a run: exit 0" "$rc" 0
files=$(cd "$out" 2>/dev/null && ls | tr '\n' ' ')
check_eq "a run writes every file" "$files" "configs.txt enc_adamw_fp32.compile.csv enc_adamw_fp32.compile.meta enc_adamw_fp32.eager.csv enc_adamw_fp32.eager.meta meta.txt seed_t512_bf_adam_fp16.compile.csv seed_t512_bf_adam_fp16.compile.meta seed_t512_bf_adam_fp16.eager.csv seed_t512_bf_adam_fp16.eager.meta summary.csv "
key() { sed -n "s/^$2=//p" "$1"; }
m=$out/seed_t512_bf_adam_fp16.compile.meta
check_eq "10 steps a run, header and 10 rows" "$(wc -l < "$out/seed_t512_bf_adam_fp16.compile.csv")" 11
check_eq "the compile step is marked" "$(key "$m" compile_steps)" 1
check_eq "warm-up and compile steps left out of the medians" "$(key "$m" timed_steps)" 8
check_eq "torch.compile with its defaults, written down" "$(key "$m" compile_call),$(key "$m" compile_mode)" \
    "torch.compile(model),default"
check_eq "the inductor settings are written" "$(key "$m" inductor.triton.cudagraphs)" False
check_eq "a setting this torch lacks is written as absent" "$(key "$m" dynamo.cache_size_limit)" absent
check_eq "eager writes no compile settings" "$(grep -c '^compile_mode\|^compile_call\|^inductor\.' "$out/seed_t512_bf_adam_fp16.eager.meta")" 0
check_eq "the median peak is the timed steps' (the stand-in's compiled module keeps 100000 bytes more)" \
    "$(( $(key "$m" peak_allocated_median) - $(key "$out/seed_t512_bf_adam_fp16.eager.meta" peak_allocated_median) ))" 100000
check_eq "the forward probe: peak above start, kept, transient, output" \
    "$(key "$m" fwd_peak_above_start),$(key "$m" fwd_kept),$(key "$m" fwd_transient),$(key "$m" fwd_output)" \
    "8192,4096,4096,4096"
check_eq "summary.csv: one row per configuration and mode, all ok" \
    "$(awk -F, 'NR > 1 { printf "%s/%s/%s ", $1, $2, $3 }' "$out/summary.csv")" \
    "seed_t512_bf_adam_fp16/eager/ok seed_t512_bf_adam_fp16/compile/ok enc_adamw_fp32/eager/ok enc_adamw_fp32/compile/ok "
check "meta.txt names the GPU and the compile mode" grep -q '^device_name=stub GPU$' "$out/meta.txt"
check "... and the settings" grep -q '^compile_mode=default$' "$out/meta.txt"
check "... and the wall time" grep -Eq '^wall_s=[0-9.]+$' "$out/meta.txt"
PYTHONPATH=$stub python3 tests/torch/transformer_reference.py "$tmp/tr" --only seed_t512_bf_adam_fp16 --steps 10 \
    > /dev/null 2>&1
check "eager's rows are transformer_reference.py's (the same training)" \
    cmp "$tmp/tr/seed_t512_bf_adam_fp16.csv" "$out/seed_t512_bf_adam_fp16.eager.csv"

# ------------------------------------------------------------ failures recorded, the run goes on
out=$tmp/fail
STUB_COMPILE_FAIL=1 PYTHONPATH=$stub python3 "$cr" "$out" > /dev/null 2> "$tmp/err"; rc=$?
check_eq "a torch.compile failure: exit 1" "$rc" 1
check_eq "... every run recorded, eager ok" "$(awk -F, 'NR > 1 { printf "%s/%s ", $2, $3 }' "$out/summary.csv")" \
    "eager/ok compile/error eager/ok compile/error "
m=$out/enc_adamw_fp32.compile.meta
check_eq "... the error's type and first lines in the meta" "$(key "$m" error)" \
    "RuntimeError: backend='inductor' raised: | RuntimeError: stub compile failure"
check_eq "... the step it failed in" "$(key "$m" failed_in_step)" 1
check_eq "... its CSV has the header only" "$(wc -l < "$out/enc_adamw_fp32.compile.csv")" 1
out=$tmp/crash
STUB_CRASH=1 PYTHONPATH=$stub python3 "$cr" "$out" --only enc_adamw_fp32 > /dev/null 2>&1; rc=$?
check_eq "a crashed child: exit 1" "$rc" 1
check_eq "... recorded in a meta by the driver" "$(key "$out/enc_adamw_fp32.compile.meta" error)" \
    "the child process exited with 9 without writing its meta"
check_eq "... eager ran" "$(key "$out/enc_adamw_fp32.eager.meta" status)" ok
check "... meta.txt from the eager run's versions" grep -q '^device_name=stub GPU$' "$out/meta.txt"

summary
