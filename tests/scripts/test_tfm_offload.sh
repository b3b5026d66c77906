#!/usr/bin/env bash
# build/workload --offload (the Transformer's saved activations on the host,
# common/workload/transformer/tfm_offload.c, C23) without a GPU: at seed 000's
# shape the step-3 peak falls and the live bytes at a step's end do not
# change; other flag sets run with a trace build/replay accepts; bad input
# is refused with one line.
#   tests/scripts/test_tfm_offload.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-build/san}
wl=$build/workload
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CUDA_VISIBLE_DEVICES=""

# The replay's last row: requested bytes live (column 14) when the trace ends
# (after step 2's zero_grad).
live_requested() { "$build/replay" "$1" | awk -F, 'END { print $14 }'; }

# ---- seed 000: nn.Transformer(d_model=256) on (64, 100, 256), Adam, fp32
seed="--arch transformer --d-model 256 --seq 64 --batch 100 --optimizer adam --steps 3 --model-only"
# shellcheck disable=SC2086
"$wl" $seed --trace "$tmp/keep.trace" > "$tmp/keep.csv" 2>/dev/null; rk=$?
# shellcheck disable=SC2086
"$wl" $seed --offload --trace "$tmp/off.trace" > "$tmp/off.csv" 2>/dev/null; ro=$?
check_eq "seed shape: keep and --offload run (exit 0, 3 ok steps each)" \
    "$rk,$ro,$(grep -c ',ok,' "$tmp/keep.csv"),$(grep -c ',ok,' "$tmp/off.csv")" "0,0,3,3"
k=$(awk -F, 'NR == 4 { print $2 }' "$tmp/keep.csv"); o=$(awk -F, 'NR == 4 { print $2 }' "$tmp/off.csv")
check "seed shape: --offload's step-3 peak is below half of keep's ($o vs $k bytes)" \
    awk -v o="${o:-0}" -v k="${k:-0}" 'BEGIN { exit !(o > 0 && 2 * o < k) }'
ka=$(awk -F, 'NR == 4 { print $15 }' "$tmp/keep.csv"); oa=$(awk -F, 'NR == 4 { print $15 }' "$tmp/off.csv")
check "seed shape: the activations at --offload's peak are under a tenth of keep's ($oa vs $ka bytes)" \
    awk -v o="${oa:-0}" -v k="${ka:-0}" 'BEGIN { exit !(o > 0 && 10 * o < k) }'
check "seed shape: build/replay accepts --offload's trace" "$build/replay" "$tmp/off.trace"
kr=$(live_requested "$tmp/keep.trace"); orq=$(live_requested "$tmp/off.trace")
check "seed shape: the same bytes live at step 2's end ($orq vs $kr requested)" \
    test -n "$kr" -a "$kr" = "$orq"
# allocated_end counts whole blocks: a block placed elsewhere may keep an
# unsplit remainder, so it is checked within 2 MiB, not for equality.
ke=$(awk -F, 'NR == 4 { print $3 }' "$tmp/keep.csv"); oe=$(awk -F, 'NR == 4 { print $3 }' "$tmp/off.csv")
check "seed shape: allocated_end within 2 MiB of keep's ($oe vs $ke bytes)" \
    awk -v o="${oe:-0}" -v k="${ke:-0}" 'BEGIN { d = o - k; if (d < 0) d = -d; exit !(o > 0 && d <= 2097152) }'
check_eq "seed shape: the trace names the offload and its unpacks; keep's has none" \
    "$(head -2 "$tmp/off.trace" | grep -c ' offload$'),$(grep -c 'unpacked from host' "$tmp/keep.trace")" "1,0"
check "seed shape: --offload's backward requests blocks unpacked from host" \
    grep -q 'saved activation unpacked from host' "$tmp/off.trace"

# ---- other flag sets: half precision, batch_first views, gelu, the encoder, fused, accum
for a in "--arch transformer --d-model 64 --heads 4 --enc-layers 2 --dec-layers 2 --ff 128 --seq 16 --batch 8 --precision fp16 --batch-first --activation gelu" \
         "--arch encoder --d-model 64 --heads 4 --enc-layers 2 --ff 128 --seq 16 --batch 8 --precision bf16 --causal --accum 2 --fused --optimizer adamw"; do
    # shellcheck disable=SC2086
    "$wl" $a --offload --steps 3 --model-only --trace "$tmp/t.trace" > "$tmp/t.csv" 2>/dev/null; rc=$?
    # shellcheck disable=SC2086
    "$wl" $a --steps 3 --model-only > "$tmp/k.csv" 2>/dev/null
    check_eq "$a --offload: exit 0, 3 ok rows, the same end each step" \
        "$rc,$(tail -n +2 "$tmp/t.csv" | grep -c ',ok,'),$(tail -n +2 "$tmp/t.csv" | cut -d, -f3 | sort -u | wc -l)" "0,3,1"
    check "... a lower step-3 peak than keep's" \
        awk -v o="$(awk -F, 'NR == 4 { print $2 }' "$tmp/t.csv")" -v k="$(awk -F, 'NR == 4 { print $2 }' "$tmp/k.csv")" \
        'BEGIN { exit !(o > 0 && o < k) }'
    check "... build/replay accepts its trace" "$build/replay" "$tmp/t.trace"
done

# ---- bad input: one line on stderr, exit 2, nothing on stdout
tiny="--arch transformer --d-model 32 --heads 4 --enc-layers 1 --dec-layers 1 --ff 64 --seq 8 --batch 4"
for bad in "$tiny --offload --checkpoint --model-only" "$tiny --offload --checkpoint" \
           "--arch mlp --offload --model-only"; do
    # shellcheck disable=SC2086
    err=$("$wl" $bad 2>&1 >"$tmp/out"); rc=$?
    check_eq "workload $bad: exit 2, one line, nothing on stdout" \
        "$rc,$(printf '%s\n' "$err" | wc -l),$(wc -c < "$tmp/out")" "2,1,0"
done
# an out-of-memory step in the backward, with saved activations on the host:
# a row, not a crash, every block and host copy let go (ASan: no leak)
# shellcheck disable=SC2086
"$wl" $tiny --seq 64 --batch 64 --steps 2 --model-only --limit 80M --offload --trace "$tmp/oom.trace" \
    > "$tmp/oom.csv" 2>/dev/null; rc=$?
check_eq "--offload --limit 80M: exit 0 with 2 oom rows" "$rc,$(grep -c ',oom,' "$tmp/oom.csv")" "0,2"
check "... the first OOM comes after a block was unpacked from host (in the backward)" \
    awk '/unpacked from host/ { u = 1 } /^# oom/ { f = 1; ok = u; exit } END { exit !(f && ok) }' "$tmp/oom.trace"
check_eq "workload --help tells of --offload" "$("$wl" --help | grep -c -- '--offload')" 1

# ---- PyTorch's own figures (tests/fixtures/offload: offload_reference.py on the
# H100): keep, and saved_tensors_hooks with --offload's policy, steps 3-5 of
# seed 000's model at batch 100; the model's step-3 peak within 1% of each
ref=$(dirname "$here")/fixtures/offload/offload_reference.csv
seed="--arch transformer --d-model 256 --seq 64 --batch 100 --optimizer adam --steps 3 --model-only"
for v in keep offload; do
    theirs=$(awk -F, -v v=$v '$1 == v && $2 == 100 && $3 == 3 { print $4 }' "$ref")
    o=""; [ $v = offload ] && o=--offload
    # shellcheck disable=SC2086
    ours=$(MEMCLAIMS_MODEL_CHECKS=0 "$wl" $seed $o 2>/dev/null | awk -F, 'NR == 4 { print $2 }')
    check "seed 000's model, $v: step-3 peak $ours B within 1% of PyTorch's $theirs B" \
        awk -v a="${ours:-0}" -v b="${theirs:-0}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 0.01 * b) }'
done
summary
