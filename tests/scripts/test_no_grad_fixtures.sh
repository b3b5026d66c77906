#!/usr/bin/env bash
# test_no_grad_fixtures.sh: C27 --model-only against PyTorch's own figures
# (tests/fixtures/no_grad/no_grad_reference.json, tests/torch/no_grad_reference.py):
# every configuration's peak_allocated, allocated_out, allocated_end and
# peak_reserved must be equal byte for byte. Then the comparison itself is
# shown to fail on an altered copy of the fixture.
#   tests/scripts/test_no_grad_fixtures.sh [BUILD_DIR]   (make test: build/san)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
exe=$build/c27_no_grad_eval
fix=$root/tests/fixtures/no_grad/no_grad_reference.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$exe" ]; then failure "$exe is missing (make test-build)"; summary; exit; fi
if [ ! -f "$fix" ]; then echo "SKIP: $fix not recorded yet"; summary; exit; fi

# C27's CSV at PyTorch's batches: every batch the fixture has is in the full sweep.
if ! "$exe" --model-only > "$tmp/c27.csv" 2>"$tmp/c27.err"; then
    failure "c27_no_grad_eval --model-only ran" "$(head -2 "$tmp/c27.err")"; summary; exit
fi
pass "c27_no_grad_eval --model-only ran"

# compare JSON CSV: one line per configuration, "ok NAME ..." or "bad NAME ...".
compare() {
    python3 - "$1" "$2" <<'PY'
import csv, json, sys
ref = json.load(open(sys.argv[1]))
ours = {}
for r in csv.DictReader(open(sys.argv[2])):
    ours[(r["variant"], r["param_value"], r["metric"])] = r["median"]
KEYS = ("peak_allocated", "allocated_out", "allocated_end", "peak_reserved")
for c in ref["configs"]:
    variant = "%s/%s" % (c["workload"], c["mode"])
    diffs = []
    for k in KEYS:
        got = ours.get((variant, str(c["batch"]), k))
        if got is None:
            diffs.append("%s missing" % k)
        elif int(float(got)) != int(c[k]):
            diffs.append("%s %s vs PyTorch %s" % (k, int(float(got)), c[k]))
    if c.get("status") != "ok":
        diffs.append("PyTorch's status %s" % c.get("status"))
    print("%s %s %s" % ("bad" if diffs else "ok", c["name"],
                        "; ".join(diffs) if diffs else "peak %d, out %d, end %d, reserved %d" %
                        tuple(int(c[k]) for k in KEYS)))
PY
}

compare "$fix" "$tmp/c27.csv" > "$tmp/cmp" || failure "the comparison ran"
n=$(grep -c . "$tmp/cmp")
if [ "$n" -ge 8 ]; then pass "the fixture has $n configurations (4 batches x grad/no_grad)"
else failure "the fixture has $n configurations" "want 8"; fi
while read -r state name rest; do
    if [ "$state" = ok ]; then pass "$name: C27's model equals PyTorch byte for byte ($rest)"
    else failure "$name: C27's model differs from PyTorch" "$rest"; fi
done < "$tmp/cmp"

# The comparison fails on a fixture one 512-byte block off.
python3 - "$fix" "$tmp/off.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["configs"][1]["peak_allocated"] += 512
json.dump(d, open(sys.argv[2], "w"))
PY
if compare "$tmp/off.json" "$tmp/c27.csv" | grep -q '^bad '; then pass "a fixture one block off is rejected"
else failure "a fixture one block off is rejected"; fi

summary
