#!/usr/bin/env bash
# test_transformer_real.sh: the Transformer at the sizes people train against
# PyTorch 2.11's own traces (tests/fixtures/transformer_real: d_model 384 to
# 768, sequences 256 and 1024, fp32/fp16, checkpointing; set-up and two
# steps recorded on an H100). For each configuration:
#   - build/workload --model-only makes PyTorch's request sequence, request
#     for request (sizes as the allocator rounds them);
#   - PyTorch's trace replayed with its own segment addresses gives PyTorch's
#     peak and end-of-step allocated at every step (the allocator model);
#   - replayed without them (the host backend's placement rule decides where
#     each segment goes, as in --model-only) it gives the model's figures:
#     where the model differs from PyTorch, the difference is where the
#     driver put the segments, and nothing else;
#   - the model equals PyTorch to the byte in every configuration but those
#     named in the fixture's placement.txt, whose difference the line above
#     explains.
#   tests/scripts/test_transformer_real.sh [BUILD_DIR]   (make test: build/san)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
no_model_checks
build=${1:-build/san}
fix=$root/tests/fixtures/transformer_real
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Where the host backend's placement rule puts a segment elsewhere than the
# driver did: the fixture's placement.txt names them (and says why).
PLACEMENT=" $(grep -v '^#' "$fix/placement.txt" | tr '\n' ' ') "

for exe in workload replay; do
    [ -x "$build/$exe" ] || { failure "$build/$exe is missing (make test-build)"; summary; exit; }
done
sms=$(sed -n 's/^sm_count=//p' "$fix/meta.txt")

while IFS=$'\t' read -r name flags; do
    case "$name" in ''|'#'*) continue ;; esac
    theirs=$fix/$name.csv
    steps=$(awk -F, 'NR > 1' "$theirs" | wc -l)
    # shellcheck disable=SC2086
    if ! "$build/workload" $flags --model-only --sms "$sms" --steps "$steps" --trace "$tmp/$name.trace" \
            > "$tmp/$name.csv" 2> "$tmp/$name.err"; then
        failure "$name: workload --model-only failed" "$(head -2 "$tmp/$name.err")"
        continue
    fi
    if d=$(bash "$here/test_mlp_fixtures.sh" --diff "$tmp/$name.trace" "$fix/$name.trace"); then
        pass "$name: the request sequence (set-up, $steps steps) equals PyTorch's: $d"
    else
        failure "$name: the request sequence differs from PyTorch's" "$(printf '%s\n' "$d" | head -3)"
    fi
    "$build/replay" "$fix/$name.trace" > "$tmp/$name.with" 2>/dev/null
    "$build/replay" --no-addresses "$fix/$name.trace" > "$tmp/$name.without" 2>/dev/null
    replay_steps "$tmp/$name.with" > "$tmp/$name.with.csv"
    replay_steps "$tmp/$name.without" > "$tmp/$name.without.csv"
    for c in 2:peak_allocated 3:allocated_end; do
        compare_steps "$name: PyTorch's trace replayed at its addresses, ${c#*:}" "$tmp/$name.with.csv" "$theirs" "${c%%:*}" 0
        compare_steps "$name: the same without them (the placement rule) is the model's, ${c#*:}" \
            "$tmp/$name.without.csv" "$tmp/$name.csv" "${c%%:*}" 0
        if [[ $PLACEMENT != *" $name "* ]]; then
            compare_steps "$name: the model equals PyTorch, ${c#*:}" "$tmp/$name.csv" "$theirs" "${c%%:*}" 0
        else
            check "$name: differs from PyTorch in ${c#*:} only by the segments' places (named in placement.txt)" \
                bash -c "! cmp -s <(cut -d, -f${c%%:*} '$tmp/$name.csv' | tail -n +2) <(cut -d, -f${c%%:*} '$theirs' | tail -n +2)"
        fi
    done
done < "$fix/configs.txt"
summary
