#!/usr/bin/env bash
# The largest batch from snapshots of small runs (build/whatif --max-batch,
# make whatif SNAPSHOT=a@B1,b@B2; common/trace/batch_fit.c):
#   - against PyTorch's own search (tests/fixtures/max_batch/, recorded on an
#     H100 by tests/torch/max_batch_reference.py): per program and limit the
#     prediction from the program's three snapshots beside PyTorch's largest
#     batch; exact where the program makes the same requests at every batch
#     up to the answer, and where it does not, off the way its README says
#     (resnet: cuDNN takes smaller workspaces under the limit, so PyTorch fits
#     up to 2 more; seed000: requests only batches above the snapshots make,
#     so the replay allows 1 more);
#   - the output: peaks at N and N+1, then `max_batch N` last; nothing written;
#   - make whatif SNAPSHOT=a@B1,b@B2: WHATIF.md's table per setting and card,
#     max_batch.csv, the chart where gnuplot is;
#   - bad input: one line naming the file, exit 2, nothing written.
#   tests/scripts/test_max_batch.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fx=$root/tests/fixtures/max_batch
whatif=$build/whatif
export MEMCLAIMS_MODEL_CHECKS=0 # the model's invariant walk: test_fuzz and the unit tests

# predict NAME LIMIT: the last line of whatif --max-batch over NAME's snapshots
predict() {
    local args=() f b
    for f in "$fx/$1"_b*.pickle.gz; do
        b=${f##*_b}
        args+=("$f@${b%.pickle.gz}")
    done
    TMPDIR=$tmp "$whatif" --max-batch --limit "$2" -- "${args[@]}" 2> "$tmp/err"
}

# --- against PyTorch
for name in gpt2 resnet seed000; do
    while IFS=$'\t' read -r limit want _; do
        out=$(predict "$name" "$limit"); rc=$?
        got=$(tail -1 <<< "$out")
        check_eq "$name, limit $limit: exit 0" "$rc" 0
        [ "$rc" = 0 ] || tail -2 "$tmp/err"
        case $name in
            gpt2) check_eq "$name, limit $limit: predicted = PyTorch's largest batch ($want)" "$got" "max_batch $want" ;;
            resnet) n=${got#max_batch }
                    check "$name, limit $limit: predicted $n, PyTorch $want (cuDNN's smaller workspaces under the limit: at most 2 more)" \
                        test "$n" -le "$want" -a "$n" -ge $((want - 2)) ;;
            seed000) if [ "$want" = 16 ]; then
                         check_eq "$name, limit $limit: predicted 17, PyTorch 16 (the driver's addresses: below)" "$got" "max_batch 17"
                     else
                         check_eq "$name, limit $limit: predicted = PyTorch's largest batch ($want)" "$got" "max_batch $want"
                     fi ;;
        esac
    done < <(tail -n +2 "$fx/$name.expected.tsv")
done
# seed000 at 17 under 723 MiB: PyTorch's own trace of batch 17, replayed with
# the addresses its cudaMalloc returned, is refused as PyTorch refused it
# (2 retries, 1 OOM); with the host backend's addresses, as every fitted
# trace has them, it fits: equal-size free blocks are taken lowest address
# first, and the two placements leave the cache differently fragmented.
"$root/scripts/snapshot2trace" --replay "$build/replay" "$fx/seed000_b17.pickle.gz" > "$tmp/s17.trace" 2> /dev/null
lim=$(awk -F'\t' '$2 == 16 { print $1 }' "$fx/seed000.expected.tsv")
sum() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["alloc_retries"], d["ooms"], d["refused"] > 0)'; }
check_eq "seed000's own batch-17 trace under $lim with PyTorch's addresses: refused, 2 retries, 1 OOM (as its trial)" \
    "$("$build/replay" --summary --limit "$lim" "$tmp/s17.trace" 2> /dev/null | sum)" "2 1 True"
check_eq "  with the host backend's addresses: it fits" \
    "$("$build/replay" --summary --no-addresses --limit "$lim" "$tmp/s17.trace" 2> /dev/null | sum)" "4 0 False"
check "  PyTorch's trial at 17 says 2 retries, 1 OOM" \
    awk -F'\t' -v l="$lim" '$1 == l && $2 == 17 && $3 == "oom" && $6 == 2 && $7 == 1 { f = 1 } END { exit !f }' "$fx/seed000.trials.tsv"
# and from the three small snapshots alone, the requests batches above 8 make are missing
args=()
for b in 2 4 8; do args+=("$fx/seed000_b$b.pickle.gz@$b"); done
check_eq "seed000 from batches 2, 4, 8 only, limit 1734344704: 53 (PyTorch 52: batch 17 makes 9% more operations)" \
    "$("$whatif" --max-batch --limit 1734344704 "${args[@]}" 2> /dev/null | tail -1)" "max_batch 53"
check "resnet: PyTorch's trials at its answers caught out-of-memory errors (cuDNN's workspace fallback)" \
    awk -F'\t' 'NR > 1 && $3 == "fits" && $7 > 0 { n++ } END { exit !(n >= 2) }' "$fx/resnet.trials.tsv"

# --- the output
out=$(predict gpt2 5960105984)
check_eq "the answer is the last line" "$(tail -1 <<< "$out")" "max_batch 27"
check "the peaks at N come first" grep -q '^batch 27: peak allocated [0-9]*, peak reserved [0-9]* (fits)$' <<< "$out"
check "then at N + 1" grep -q '^batch 28: peak allocated [0-9]*, peak reserved [0-9]* (refused under the limit)$' <<< "$out"
check "the requests only the largest batch makes are noted" grep -q 'only the largest batch makes' "$tmp/err"
check "--max-batch leaves no temporary folder" test -z "$(ls "$tmp" | grep memclaims-whatif)"

# --- make whatif SNAPSHOT=a@2,b@4,c@8 (the table)
mkdir "$tmp/res"
"$whatif" --context 0 --cards 8,24,80 --jobs 2 --results "$tmp/res" \
    "$fx/gpt2_b2.pickle.gz@2,$fx/gpt2_b4.pickle.gz@4,$fx/gpt2_b8.pickle.gz@8" > "$tmp/w.out" 2> "$tmp/w.err"
rc=$?
check_eq "whatif SNAPSHOT=a@2,b@4,c@8: exit 0" "$rc" 0
[ "$rc" = 0 ] || tail -3 "$tmp/w.err"
md=$(ls "$tmp"/res/whatif-*/WHATIF.md 2>/dev/null | head -1)
check "WHATIF.md has the largest batch per card" grep -q '^## The largest batch per card' "$md"
check "  a row per setting, a column per card" grep -q '^| Setting | 8 GiB | 24 GiB | 80 GiB |$' "$md"
check "  the default row: a batch per card, growing with the card" \
    awk -F'|' 'index($0, "| default |") == 1 { a = $3 + 0; b = $4 + 0; c = $5 + 0; ok = a > 0 && a < b && b < c }
               END { exit !ok }' "$md"
check "  the sweep ran on the snapshot at the largest batch" grep -q '^# What if: gpt2_b8.pickle.gz' "$md"
check "max_batch.csv: a row per setting and card" test "$(tail -n +2 "$(dirname "$md")/max_batch.csv" | wc -l)" -eq 24
if command -v gnuplot > /dev/null; then
    check "max_batch.png drawn" test -s "$(dirname "$md")/max_batch.png"
fi

# --- bad input: one line naming the file, exit 2, nothing written
bad() { # WHAT WANT_IN_MESSAGE ARGS...
    local what=$1 want=$2
    shift 2
    rm -rf "$tmp/res2"
    mkdir "$tmp/res2"
    err=$(TMPDIR=$tmp "$whatif" --results "$tmp/res2" "$@" 2>&1 >/dev/null); rc=$?
    check_eq "$what: exit 2" "$rc" 2
    check "$what: one line ($err)" test "$(printf '%s\n' "$err" | wc -l)" -eq 1
    check "$what: it says so" grep -qF -- "$want" <<< "$err"
    check "$what: nothing written" test -z "$(ls -A "$tmp/res2")"
}
bad "two programs" "do not pair" --max-batch --limit 1G "$fx/gpt2_b2.pickle.gz@2" "$fx/resnet_b4.pickle.gz@4"
bad "one snapshot" "two or more" --max-batch --limit 1G "$fx/gpt2_b2.pickle.gz@2"
bad "two at one batch" "both at batch 4" --max-batch --limit 1G "$fx/gpt2_b2.pickle.gz@4" "$fx/gpt2_b4.pickle.gz@4"
bad "a batch that is not a number" "must be a whole number" --max-batch --limit 1G "$fx/gpt2_b2.pickle.gz@two" "$fx/gpt2_b4.pickle.gz@4"
bad "a batch of 0" "must be a whole number" --max-batch --limit 1G "$fx/gpt2_b2.pickle.gz@0" "$fx/gpt2_b4.pickle.gz@4"
bad "--max-batch without --limit" "needs --limit" --max-batch "$fx/gpt2_b2.pickle.gz@2" "$fx/gpt2_b4.pickle.gz@4"
bad "--limit without --max-batch" "goes with --max-batch" --limit 1G "$fx/gpt2_b2.pickle.gz@2" "$fx/gpt2_b4.pickle.gz@4"
bad "a missing snapshot" "cannot read snapshot '$tmp/none.pickle'" --max-batch --limit 1G "$tmp/none.pickle@2" "$fx/gpt2_b4.pickle.gz@4"
bad "one listed in make's form" "two or more" "$fx/gpt2_b2.pickle.gz@2"
printf 'not a pickle' > "$tmp/junk.pickle"
bad "a file that is not a snapshot" "junk.pickle" --max-batch --limit 1G "$tmp/junk.pickle@2" "$fx/gpt2_b4.pickle.gz@4"
# the same program at 2 and 4, the snapshot of 4 given as batch 2's too: nothing grows
bad "one snapshot given twice" "nothing grows" --max-batch --limit 1G "$fx/gpt2_b2.pickle.gz@2" "$fx/gpt2_b2.pickle.gz@4"
summary
