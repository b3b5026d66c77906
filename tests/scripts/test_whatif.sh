#!/usr/bin/env bash
# make whatif (scripts/whatif) without a GPU: on a synthetic snapshot whose
# peak is known (tests/whatif/make_snapshot.py) the whole sweep runs, the
# smallest card that fits is the one the peak and the context imply, the
# first refused request is the one the generator implies, WHATIF.md, the CSV
# and the charts are written into a new folder atomically, and bad input
# exits 2 with one line and writes nothing.
#   tests/scripts/test_whatif.sh BUILD_DIR
set -u
# The script is under test here; the model's invariants on such traces are
# checked under every setting by test_snapshot2trace.sh.
export MEMCLAIMS_MODEL_CHECKS=0
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
whatif=$root/scripts/whatif
GiB=1073741824
MiB=1048576
cards="8 12 16 24 32 40 48 80 96 141"

# A run that peaks at 600 blocks of 20 MiB = 11.72 GiB, gzipped as a user's
# snapshot may be.
gen=$(python3 "$root/tests/whatif/make_snapshot.py" --events 1500 --max-live 600 --block-mib 20 \
      --seed 3 --gzip "$tmp/train run.pickle.gz")
peak=$(sed -n 's/.*peak_reserved=\([0-9]*\).*/\1/p' <<<"$gen")
check_eq "the generator's peak is 600 x 20 MiB" "$peak" $((600 * 20 * MiB))
block=$((20 * MiB))

# smallest CONTEXT: the smallest card whose room (GiB - context) holds the peak.
smallest() { for c in $cards; do [ $((c * GiB - $1)) -ge "$peak" ] && { echo "$c"; return; }; done; echo ""; }
# below CARD: the card before it in the list.
below() { local p=""; for c in $cards; do [ "$c" = "$1" ] && { echo "$p"; return; }; p=$c; done; }
# col FILE SETTING CARD COLUMN: a figure of whatif.csv (the conf is quoted and
# may hold commas, so count columns from the end: 16 columns in all).
col() { awk -F, -v s="$2" -v c="$3" -v k="$4" '$1 == s && $(NF - 13) == c { print $(NF - 16 + k) }' "$1"; }

# ------------------------------------------------------------ a given context
res=$tmp/results
ctx=$((3 * GiB + 600 * MiB))     # puts the answer at 16 GiB: 12 GiB - ctx < peak <= 16 GiB - ctx
"$whatif" --build "$build" --results "$res" --context "$ctx" "$tmp/train run.pickle.gz" \
    > "$tmp/out" 2> "$tmp/err"
check_eq "whatif exits 0 on a synthetic snapshot" "$?" 0
run=$(ls -d "$res"/whatif-*-train_run 2>/dev/null | head -1)
check "whatif writes results/whatif-<time>-<name>/" test -d "$run"
check_eq "whatif-latest points at it" "$(readlink "$res/whatif-latest")" "$(basename "$run")"
for f in WHATIF.md whatif.csv answer.csv failed.csv timeline_default.csv; do
    check "whatif writes $f" test -s "$run/$f"
done
check_eq "no temporary folder is left" "$(ls -A "$res" | grep -c tmp)" 0
check "whatif prints progress on stderr" grep -q '^whatif: \[[0-9]*/[0-9]*\] default, card 16: done$' "$tmp/err"
check "whatif says where the context came from" grep -q "given with --context" "$tmp/err"
want=$(smallest "$ctx")
check_eq "the smallest card for the default is what the peak and context imply" \
    "$(awk -F, '$1 == "default" { print $4 }' "$run/answer.csv")" "$want"
check_eq "the answer is 16 GiB" "$want" 16
check "WHATIF.md opens with that answer" \
    grep -q "^\*\*Under the default settings the run fits the $want GiB card\*\* (peak reserved 11.72 GiB)" "$run/WHATIF.md"
check_eq "peak reserved with no card is the generator's" "$(col "$run/whatif.csv" default none 9)" "$peak"
check_eq "peak allocated with no card is the generator's" "$(col "$run/whatif.csv" default none 8)" "$peak"
for s in default expandable_segments max_split_64MiB roundup_power2_4 gc_0.6_limit; do
    check "answer.csv has the setting $s" grep -q "^$s," "$run/answer.csv"
done
fail=$(below "$want")
check_eq "the largest card that does not fit is the one below" \
    "$(awk -F, '$1 == "default" { print $5 }' "$run/answer.csv")" "$fail"
room=$((fail * GiB - ctx))
# The first iteration allocates 600 blocks in a row: the first refused one is
# the (room / block + 1)-th request, which is step room / block + 1.
check_eq "the first refused request is the one past the card's room" \
    "$(col "$run/whatif.csv" default "$fail" 12)" $((room / block + 1))
check_eq "it asks for one block" "$(col "$run/whatif.csv" default "$fail" 13)" "$block"
check "failed.csv lists it" grep -q "^default,$fail,$((room / block + 1)),[0-9]*,$block$" "$run/failed.csv"
check "WHATIF.md names it with its step and size" \
    grep -q "^| default | $fail GiB | $((room / block + 1)): 20.0 MiB" "$run/WHATIF.md"
check_eq "every card at or above the answer fits, every card below does not" \
    "$(awk -F, -v w="$want" '$1 == "default" && $(NF - 13) != "none" {
          if (($(NF - 13) >= w) != ($(NF - 10) == "yes")) bad++ } END { print bad + 0 }' "$run/whatif.csv")" 0
n=$(($(wc -l < "$run/timeline_default.csv") - 1))
check "the timeline has 1000..2100 points (got $n)" test "$n" -ge 1000 -a "$n" -le 2100
check_eq "the timeline keeps the peak" \
    "$(awk -F, 'NR > 1 && $3 > m { m = $3 } END { print m }' "$run/timeline_default.csv")" "$peak"
if command -v gnuplot >/dev/null; then
    for png in peak_reserved cards timeline; do
        check "whatif draws $png.png (a PNG file)" bash -c "head -c 4 '$run/$png.png' | grep -q PNG"
        check_eq "gnuplot says nothing for $png" "$(cat "$run/logs/plot-$png.log" 2>/dev/null)" ""
    done
    check "WHATIF.md links the charts" grep -q '!\[.*\](timeline.png)' "$run/WHATIF.md"
else
    echo "SKIP: gnuplot not installed: charts not drawn (make deps)"
fi

# ------------------------------------------------------------ context from a run
# No --context: the latest run's C11 figure (here a fake results/latest).
mkdir -p "$res/20260101T000000Z-fake/"
ln -sfn 20260101T000000Z-fake "$res/latest"
{ echo "claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note"
  echo "C11,context_cost,lazy,stage,1,device_used_delta_nvsmi,bytes,5,$((5 * GiB)),0,0,0,0,ok,context"; } \
    > "$res/20260101T000000Z-fake/context_cost.csv"
before=$(cd "$run" && find . -type f -exec md5sum {} + | sort | md5sum)
# Three cards around the answer are enough here (the whole sweep ran above).
"$whatif" --build "$build" --results "$res" --cards 16,24,32 "$tmp/train run.pickle.gz" > /dev/null 2> "$tmp/err"
check_eq "whatif exits 0 with the context of the latest run" "$?" 0
check "it says the context came from results/latest" grep -q "context: 5120 MiB.*latest/context_cost.csv" "$tmp/err"
run2=$(readlink -f "$res/whatif-latest")
check "a second run writes a second folder" test "$run2" != "$(readlink -f "$run")"
check_eq "the earlier folder is untouched" "$(cd "$run" && find . -type f -exec md5sum {} + | sort | md5sum)" "$before"
check_eq "the smallest card follows that context" \
    "$(awk -F, '$1 == "default" { print $4 }' "$run2/answer.csv")" "$(smallest $((5 * GiB)))"

# No --context, no latest run: the committed H100 reference's figure.
rm "$res/latest"
"$whatif" --build "$build" --results "$res" --cards 16,24 "$tmp/train run.pickle.gz" > /dev/null 2> "$tmp/err"
check_eq "whatif exits 0 with the reference's context" "$?" 0
check "it says the context came from the H100 reference" \
    grep -q "context: [0-9]* MiB ([0-9]* bytes), C11's measured CUDA context (results/reference-h100/context_cost.csv)" "$tmp/err"

# ------------------------------------------------------------ bad input
bad() { # WHAT ARGS...: exit 2, one line on stderr, nothing new in the results folder
    local what=$1; shift
    local listing; listing=$(ls -A "$res")
    "$whatif" --build "$build" --results "$res" "$@" > "$tmp/out" 2> "$tmp/err"
    local rc=$?
    check_eq "$what: exit 2" "$rc" 2
    check_eq "$what: one line on stderr" "$(wc -l < "$tmp/err")" 1
    check_eq "$what: nothing written" "$(ls -A "$res")" "$listing"
}
echo "not a pickle" > "$tmp/text.pickle"
: > "$tmp/empty.pickle"
bad "no snapshot" --context 1G
bad "a missing snapshot" --context 1G "$tmp/nonexistent.pickle"
bad "a folder for a snapshot" --context 1G "$tmp"
bad "an empty snapshot" --context 1G "$tmp/empty.pickle"
bad "a file that is not a snapshot" --context 1G "$tmp/text.pickle"
bad "a context that is not a number" --context lots "$tmp/train run.pickle.gz"
bad "a negative context" --context -5 "$tmp/train run.pickle.gz"
bad "a context larger than every card" --context 200G "$tmp/train run.pickle.gz"
bad "bad card sizes" --cards 16,x "$tmp/train run.pickle.gz"
bad "an unknown option" --frobnicate "$tmp/train run.pickle.gz"

summary
