#!/usr/bin/env bash
# scripts/snapshot2trace on synthetic snapshots (tests/snapshot/make_synthetic.py,
# the dict shapes of torch.cuda.memory._dump_snapshot): segments and blocks
# from before the history, two streams, free_requested/free_completed, an
# OOM, empty_cache; the replayed figures must equal the ones the generator
# worked out by hand. Then the three bad inputs (not a snapshot, truncated,
# a history cut by max_entries), and build/replay's --conf/--limit/--summary
# on the converted trace. Then gzip'd snapshots (the fixtures convert as
# their gunzipped form does) and pickles that would run code (refused, and
# nothing run), plain and gzip'd.
#   tests/scripts/test_snapshot2trace.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
replay=$build/replay
# snapshot2trace asks this build's replay which conf keys the model knows.
s2t() { "$root/scripts/snapshot2trace" --replay "$replay" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$replay" ]; then
    failure "replay binary" "$replay is missing: run make first"
    summary
    exit 1
fi
check "the generator writes the scenarios" python3 "$root/tests/snapshot/make_synthetic.py" "$tmp"

# json_get FILE KEY: a top-level number (or null) of a one-line JSON object
json_get() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print("null" if v is None else v)' "$1" "$2"; }

# ------------------------------------------------------------ s1: the figures
s2t "$tmp/s1.pickle" > "$tmp/s1.trace" 2> "$tmp/s1.err"
check_eq "s1 converts (exit 0)" "$?" 0
check_eq "s1 converts without a warning" "$(cat "$tmp/s1.err")" ""
check "s1's trace says v2" grep -qx "# memclaims-trace v2" "$tmp/s1.trace"
check "segment A (released in the history, never made there) is a segment from before" \
      grep -qx "segment 0x7f0000000000 20971520 pool=large" "$tmp/s1.trace"
check "segment B from the dump is a small segment line" grep -qx "segment 0x7f0001400000 2097152 pool=small" "$tmp/s1.trace"
check "X, freed in the history, is live from before (size derived)" grep -qE "^live [0-9]+ 4000000 0x7f0000000000$" "$tmp/s1.trace"
check "Y, live at the dump, is live from before with its block size" grep -qE "^live [0-9]+ 1000 0x7f0001400000 block=1024$" "$tmp/s1.trace"
check "stream 7's alloc keeps its stream" grep -qE "^alloc [0-9]+ 4000000 0x7f0001600000 stream=7$" "$tmp/s1.trace"
check "the OOM event is an alloc marked oom" grep -qE "^alloc [0-9]+ 107374182400 oom" "$tmp/s1.trace"
check "the segment frees no malloc follows are an empty_cache" grep -qE "^empty_cache" "$tmp/s1.trace"
check_eq "frees come from free_completed only (5 of them)" "$(grep -c '^free ' "$tmp/s1.trace")" 5
"$replay" --summary "$tmp/s1.trace" > "$tmp/s1.json" 2> "$tmp/s1.replay.err"
check_eq "s1 replays (exit 0)" "$?" 0
check_eq "s1's replay has no warning" "$(cat "$tmp/s1.replay.err")" ""
for key in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' "$tmp/s1.expected.json"); do
    check_eq "s1: $key as worked out by hand" "$(json_get "$tmp/s1.json" "$key")" "$(json_get "$tmp/s1.expected.json" "$key")"
done
check_eq "s1: --summary is one line" "$(wc -l < "$tmp/s1.json")" 1
"$replay" "$tmp/s1.trace" > "$tmp/s1.csv"
check_eq "s1: the CSV has a row per operation" "$(($(wc -l < "$tmp/s1.csv") - 1))" 12
check_eq "s1: row 7 is the refused request" "$(sed -n 8p "$tmp/s1.csv" | cut -d, -f2,5)" "alloc,oom"

# ------------------------------------------------------------ what-if settings
"$replay" --summary --conf expandable_segments:True "$tmp/s1.trace" > "$tmp/es.json"
check_eq "--conf expandable_segments:True replays" "$?" 0
check_eq "the summary names the settings" "$(json_get "$tmp/es.json" conf)" "expandable_segments:True"
"$replay" --summary --limit 30Mi "$tmp/s1.trace" > "$tmp/lim.json"
check_eq "--limit 30Mi: the stream-7 segment is refused" "$(json_get "$tmp/lim.json" unexpected_ooms)" 2
check_eq "--limit 30Mi: the summary gives the limit" "$(json_get "$tmp/lim.json" limit)" 31457280
"$replay" --summary --capacity 200G "$tmp/s1.trace" > "$tmp/cap.json"
check_eq "--capacity 200G: the 100 GiB request PyTorch refused is granted" "$(json_get "$tmp/cap.json" expected_ooms_granted)" 1
"$replay" --summary --conf bogus:1 "$tmp/s1.trace" > "$tmp/bad.out" 2> "$tmp/bad.err"
check_eq "--conf bogus:1 exits 2" "$?" 2
check_eq "--conf bogus:1: one line on stderr" "$(wc -l < "$tmp/bad.err")" 1
check_eq "--conf bogus:1: nothing on stdout" "$(wc -c < "$tmp/bad.out")" 0
"$replay" --summary --conf "roundup_power2_divisions:[256:1" "$tmp/s1.trace" > /dev/null 2> "$tmp/bad.err"
check_eq "an unclosed roundup list exits 2" "$?" 2
"$replay" --limit 12X "$tmp/s1.trace" > /dev/null 2> "$tmp/bad.err"
check_eq "--limit 12X exits 2" "$?" 2

# A random three-stream trace under each setting, with the invariant check
# after every operation (make test's build defines CA_DEBUG): no crash, no
# broken invariant, and every request accounted for.
if [ -x "$build/gen_trace" ]; then
    "$build/gen_trace" --ops 3000 --seed 7 --streams 3 --max-live 200 > "$tmp/rand.trace"
    check "gen_trace --streams 3 writes a v2 trace" grep -q "stream=2" "$tmp/rand.trace"
    for args in "" "--conf expandable_segments:True" "--conf expandable_segments:True --capacity 600Mi" \
                "--conf garbage_collection_threshold:0.5 --limit 1Gi" \
                "--conf roundup_power2_divisions:[1:2,64:4,>:8]" \
                "--conf max_split_size_mb:64 --limit 2Gi --capacity 3Gi" \
                "--conf max_split_size_mb:40,expandable_segments:True,garbage_collection_threshold:0.8 --limit 700Mi"; do
        # shellcheck disable=SC2086
        "$replay" --summary $args "$tmp/rand.trace" > "$tmp/rand.json" 2> "$tmp/rand.err"
        check_eq "random 3-stream trace under '${args:-its own settings}': exit 0" "$?" 0
    done
fi

# The recorded PYTORCH_CUDA_ALLOC_CONF: the modelled keys become `set conf`, the rest a comment.
python3 -c 'import pickle,sys; pickle.dump({"segments": [], "device_traces": [[]], "allocator_settings":
    {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64, pinned_use_cuda_host_register:True,roundup_power2_divisions:[256:1,>:4]"}},
    open(sys.argv[1], "wb"))' "$tmp/conf.pickle"
s2t "$tmp/conf.pickle" > "$tmp/conf.trace"
check "the recorded settings the model knows become set conf" \
      grep -qx "set conf max_split_size_mb:64,roundup_power2_divisions:\[256:1,>:4\]" "$tmp/conf.trace"
check "  ... the others a comment" grep -q "^# PYTORCH_CUDA_ALLOC_CONF also held (not modelled): pinned_use_cuda_host_register:True" "$tmp/conf.trace"
check "  ... and the trace replays" "$replay" --summary "$tmp/conf.trace"

# ------------------------------------------------------------ replay --settings
# One line per setting: trace name, conf key, unit ('-' for none); the list
# snapshot2trace keeps keys by, so it must match what the parsers accept.
"$replay" --settings > "$tmp/settings" 2> "$tmp/e"
check_eq "replay --settings: exit 0, nothing on stderr" "$?:$(wc -c < "$tmp/e")" "0:0"
check_eq "  ... three tab-separated fields on every line" \
    "$(awk -F'\t' 'NF != 3 || $3 == "" || ($1 == "-" && $2 == "-") { bad++ } END { print (NR > 0 && !bad) }' "$tmp/settings")" 1
check "  ... --help documents it" sh -c "'$replay' --help | grep -q -- '--settings'"
check_eq "  ... docs/TRACE.md shows the list as it is" \
    "$(awk '/^- `--settings`/ { on = 1 } on && /^  ```$/ { n++; next } on && n == 1 { sub(/^  /, ""); print } n == 2 { exit }' "$root/docs/TRACE.md")" \
    "$(cat "$tmp/settings")"
bad=""
while IFS=$'\t' read -r name key _unit; do
    if [ "$name" != - ]; then # a v1 set line, in bytes
        printf 'set %s 67108864\nalloc 1 5\n' "$name" | "$replay" --summary - > /dev/null 2>&1 || bad="$bad set:$name"
    fi
    if [ "$key" != - ]; then # a conf key the parser knows, and --help names
        "$replay" --conf "$key:x" "$tmp/s1.trace" 2>&1 >/dev/null | grep -q "unknown key" && bad="$bad conf:$key"
        "$replay" --help | grep -q "^ *$key " || bad="$bad help:$key"
    fi
done < "$tmp/settings"
check_eq "  ... every trace name is a set line the parser reads, every key one --conf knows" "$bad" ""
check_eq "  ... the ones snapshot2trace used to hard-code" \
    "$(cut -f2 "$tmp/settings" | grep -v '^-$' | sort | tr '\n' ' ')" \
    "expandable_segments garbage_collection_threshold max_non_split_rounding_mb max_split_size_mb roundup_power2_divisions "
# The keys come from the replay given: one that knows only expandable_segments
# keeps only that key.
printf '#!/bin/sh\nprintf -- "-\\texpandable_segments\\tbool\\n"\n' > "$tmp/fake-replay"
chmod +x "$tmp/fake-replay"
python3 -c 'import pickle,sys; pickle.dump({"segments": [], "device_traces": [[]], "allocator_settings":
    {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64,expandable_segments:True"}}, open(sys.argv[1], "wb"))' "$tmp/conf2.pickle"
"$root/scripts/snapshot2trace" --replay "$tmp/fake-replay" "$tmp/conf2.pickle" > "$tmp/conf2.trace"
check "snapshot2trace keeps the keys replay --settings lists" grep -qx "set conf expandable_segments:True" "$tmp/conf2.trace"
check "  ... and comments out the others" grep -qx "# PYTORCH_CUDA_ALLOC_CONF also held (not modelled): max_split_size_mb:64" "$tmp/conf2.trace"
"$root/scripts/snapshot2trace" --replay "$tmp/no-such-replay" "$tmp/conf.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "no replay at --replay PATH: exit 2, one line, nothing on stdout" "$?:$(wc -l < "$tmp/e"):$(wc -c < "$tmp/o")" "2:1:0"
check "  ... saying it is missing" grep -q "no-such-replay is missing" "$tmp/e"
"$root/scripts/snapshot2trace" --replay /bin/false "$tmp/conf.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "a replay whose --settings fails: exit 2, one line" "$?:$(wc -l < "$tmp/e")" "2:1"

# ------------------------------------------------------------ bad inputs
s2t "$tmp/notsnap.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "a pickle that is not a snapshot: exit 2" "$?" 2
check_eq "  ... one line" "$(wc -l < "$tmp/e")" 1
check "  ... saying it is not a snapshot" grep -q "not a PyTorch memory snapshot" "$tmp/e"
s2t "$tmp/text.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "a text file: exit 2, one line" "$?:$(wc -l < "$tmp/e")" "2:1"
s2t "$tmp/trunc.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "a truncated snapshot: exit 2, one line" "$?:$(wc -l < "$tmp/e")" "2:1"
check "  ... saying it is truncated" grep -q "truncated" "$tmp/e"
s2t --device 3 "$tmp/s1.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "a device the snapshot lacks: exit 2" "$?" 2
s2t "$tmp/cut.pickle" > "$tmp/cut.trace" 2> "$tmp/e"
check_eq "a history cut by max_entries converts (exit 0)" "$?" 0
check_eq "  ... with one warning line" "$(wc -l < "$tmp/e")" 1
check "  ... saying what is missing" grep -q "free_completed at 0x7f0000000000 without its free_requested" "$tmp/e"
check "  ... and that figures before the cut cannot be trusted" grep -q "cannot be trusted" "$tmp/e"
"$replay" --summary "$tmp/cut.trace" > "$tmp/cut.json" 2>/dev/null
check_eq "  ... and the rebuilt trace replays" "$?" 0
check_eq "  ... reaching the same final reserved peak" "$(json_get "$tmp/cut.json" peak_reserved)" 44040192
s2t --max-entries 15 "$tmp/s1.pickle" > /dev/null 2> "$tmp/e"
check "exactly --max-entries events: reported as cut" grep -q "max_entries=15" "$tmp/e"

# ------------------------------------------------------------ gzip'd snapshots
# Told by the magic bytes, not the name: the project's own fixtures are
# .pickle.gz, and each converts to the trace of its gunzipped form (all but
# the header line that names the file).
nfix=0
for f in "$root"/tests/fixtures/snapshots/*.pickle.gz "$tmp/s1.pickle"; do
    [ -e "$f" ] || continue
    n=$(basename "$f"); n=${n%.gz}
    if [ "$f" = "$tmp/s1.pickle" ]; then # a gzip'd synthetic one too, named without .gz
        gzip -c "$f" > "$tmp/gz-$n.gzipped"; cp "$f" "$tmp/gz-$n"; f=$tmp/gz-$n.gzipped
    else
        gzip -dc "$f" > "$tmp/gz-$n"; nfix=$((nfix + 1))
    fi
    s2t "$f" > "$tmp/gz-$n.a.trace" 2> "$tmp/gz-$n.a.err"; rca=$?
    s2t "$tmp/gz-$n" > "$tmp/gz-$n.b.trace" 2> "$tmp/gz-$n.b.err"; rcb=$?
    check_eq "$(basename "$f") converts gzip'd and gunzipped (exit 0 both)" "$rca:$rcb" 0:0
    check "  ... to the trace of its gunzipped form" cmp <(sed 2d "$tmp/gz-$n.a.trace") <(sed 2d "$tmp/gz-$n.b.trace")
    check_eq "  ... with the same stderr" "$(cat "$tmp/gz-$n.a.err")" "$(cat "$tmp/gz-$n.b.err")"
    check "  ... and the events in it" grep -q '^alloc ' "$tmp/gz-$n.a.trace"
done
[ "$nfix" -gt 0 ] || echo "SKIP: no snapshot fixtures in tests/fixtures/snapshots to convert gzip'd"
head -c 300 "$tmp/gz-s1.pickle.gzipped" > "$tmp/trunc.gz"
s2t "$tmp/trunc.gz" > "$tmp/o" 2> "$tmp/e"
check_eq "a truncated gzip file: exit 2, one line, nothing on stdout" "$?:$(wc -l < "$tmp/e"):$(wc -c < "$tmp/o")" "2:1:0"
check "  ... saying it is truncated" grep -q "truncated" "$tmp/e"
printf '\037\213this is not deflate data' > "$tmp/badgz.pickle"
s2t "$tmp/badgz.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "gzip's magic bytes on something else: exit 2, one line, nothing on stdout" "$?:$(wc -l < "$tmp/e"):$(wc -c < "$tmp/o")" "2:1:0"

# ------------------------------------------------------------ pickles that run code
# evil FILE MARKER: a snapshot-shaped pickle one of whose events, unpickled,
# calls os.system("touch MARKER").
evil() {
    python3 -c 'import os, pickle, sys
class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
with open(sys.argv[1], "wb") as f:
    pickle.dump({"segments": [], "device_traces": [[Evil()]]}, f)' "$1" "$2"
}
# The control: an ordinary unpickler does run it (so the test can fail).
evil "$tmp/control.pickle" "$tmp/CONTROL"
python3 -c 'import pickle, sys; pickle.load(open(sys.argv[1], "rb"))' "$tmp/control.pickle" 2> /dev/null
check "an ordinary pickle.load of such a pickle runs its command (the control)" test -e "$tmp/CONTROL"
evil "$tmp/evil.pickle" "$tmp/MARKER"
gzip -c "$tmp/evil.pickle" > "$tmp/evil.pickle.gz"
for f in "$tmp/evil.pickle" "$tmp/evil.pickle.gz"; do
    s2t "$f" > "$tmp/o" 2> "$tmp/e"; rc=$?
    check_eq "$(basename "$f"), whose unpickling calls os.system: exit 2, one line, nothing on stdout" \
        "$rc:$(wc -l < "$tmp/e"):$(wc -c < "$tmp/o")" "2:1:0"
    check "  ... refused for the class it needs" grep -q "not a PyTorch memory snapshot: it needs the class .*system" "$tmp/e"
    check "  ... and nothing was run (no MARKER)" test ! -e "$tmp/MARKER"
done

# ------------------------------------------------------------ build/workload --conf
wl="$build/workload --layers 3 --in 64 --width 64 --out 8 --batch 16 --steps 2"
if [ -x "$build/workload" ]; then
    $wl --model-only --conf expandable_segments:True > "$tmp/wl.csv" 2> "$tmp/wl.err"
    check_eq "workload --model-only --conf expandable_segments:True runs" "$?" 0
    $wl --model-only > "$tmp/wl0.csv" 2>/dev/null
    check "  ... and its figures differ from the defaults'" sh -c "! cmp -s '$tmp/wl.csv' '$tmp/wl0.csv'"
    $wl --model-only --conf bogus:1 > /dev/null 2> "$tmp/wl.err"
    check_eq "workload --conf bogus:1: exit 2, one line" "$?:$(wc -l < "$tmp/wl.err")" "2:1"
    $wl --conf expandable_segments:True > /dev/null 2> "$tmp/wl.err"
    check_eq "workload --conf expandable_segments:True without --model-only: exit 2" "$?" 2
fi

summary
