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
check "X, freed in the history, is live from before (size derived)" grep -qE "^live [0-9]+ 4000000 0x7f0000000000( block=4000256)?$" "$tmp/s1.trace"
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
python3 -c 'import pickle,sys; pickle.dump({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1 << 40, "size": 512}]], "allocator_settings":
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
python3 -c 'import pickle,sys; pickle.dump({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1 << 40, "size": 512}]], "allocator_settings":
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

# ------------------------------------------------------------ shapes the replay would refuse
# Each file below is refused by snapshot2trace itself (not later by the
# replay's parser, under a temporary name): exit 2, one line on stderr that
# names the file and what is wrong in it, nothing on stdout.
mkdir -p "$tmp/bad"
python3 - "$tmp/bad" <<'EOF'
import pickle, sys
d = sys.argv[1]
A = 0x7F0000000000
MiB = 1 << 20
def seg(addr=A, size=20 * MiB, blocks=None, **kw):
    s = {"device": 0, "address": addr, "total_size": size, "stream": 0, "segment_type": "large",
         "blocks": [{"address": addr, "size": size, "state": "inactive"}] if blocks is None else blocks}
    s.update(kw)
    return s
def ev(action, addr=A + 64 * MiB, size=4096, stream=0):
    return {"action": action, "addr": addr, "size": size, "stream": stream}
one = [ev("alloc")]
cases = {
    "size_past_2_64": ([], [ev("alloc", size=2**64 + 5)]),
    "size_huge_int": ([], [ev("alloc", size=10**5000)]),
    "segment_at_0": ([seg(addr=0)], one),
    "segment_unaligned": ([seg(addr=A + 100)], one),
    "streams_300": ([], [ev("alloc", A + i * 2 * MiB, 1000, stream=i + 1) for i in range(300)]),
    "block_past_segment": ([seg(size=2 * MiB, blocks=[{"address": A, "size": 40 * MiB, "state": "active_allocated"}])], one),
    "blocks_overlap": ([seg(blocks=[{"address": A, "size": 4 * MiB, "state": "active_allocated"},
                                     {"address": A + MiB, "size": MiB, "state": "inactive"}])], one),
    "blocks_not_list": ([seg(blocks=5)], one),
    "block_not_dict": ([seg(blocks=[7])], one),
    "segments_not_list": (5, one),
    "segment_not_dict": (["x"], one),
    "total_size_str": ([seg(size="20")], one),
    "total_size_negative": ([seg(size=-20)], one),
    "total_size_bool": ([seg(size=True)], one),
    "device_bool": ([seg(device=True)], one),
    "segment_type_int": ([seg(segment_type=3)], one),
    "state_none": ([seg(blocks=[{"address": A, "size": 20 * MiB, "state": None}])], one),
    "event_not_dict": ([], [ev("alloc"), 5]),
    "event_size_str": ([], [ev("alloc", size="5")]),
    "event_size_float": ([], [ev("alloc", size=5.0)]),
    "event_stream_bool": ([], [ev("alloc", stream=True)]),
    "event_stream_huge": ([], [ev("alloc", stream=2**70)]),
    "event_addr_negative": ([], [ev("free_completed", addr=-512)]),
    "event_unknown_action": ([], [ev("alloc"), ev("teleport")]),
    "oom_of_0_bytes": ([], [ev("alloc"), ev("oom", size=0)]),
    "segments_overlap": ([seg(), seg(addr=A + 4 * MiB)], one),
    "history_segment_overlaps": ([seg()], [ev("segment_free", addr=A + 2 * MiB, size=20 * MiB), ev("alloc")]),
    "live_block_unaligned": ([seg()], [ev("free_requested", A + 100, 1000), ev("free_completed", A + 100, 1000), ev("alloc")]),
    "live_block_too_big": ([seg(size=2 * MiB, segment_type="small")],
                           [ev("free_requested", A, 4 * MiB), ev("free_completed", A, 4 * MiB), ev("alloc")]),
    "no_allocation": ([], [ev("segment_alloc", A, 20 * MiB), ev("segment_free", A, 20 * MiB)]),
}
for name, (segs, hist) in cases.items():
    with open("%s/%s.pickle" % (d, name), "wb") as f:
        pickle.dump({"segments": segs, "device_traces": [hist]}, f)
conf = {"bad_conf_value": "max_split_size_mb:5", "conf_with_hash": "max_split_size_mb:64#1"}
for name, c in conf.items():
    with open("%s/%s.pickle" % (d, name), "wb") as f:
        pickle.dump({"segments": [], "device_traces": [one], "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": c}}, f)
# device 0 recorded nothing, device 1 did
with open("%s/device1_only.pickle" % d, "wb") as f:
    pickle.dump({"segments": [], "device_traces": [[], one]}, f)
with open("%s/no_events.pickle" % d, "wb") as f:
    pickle.dump({"segments": [seg()], "device_traces": [[]]}, f)
EOF
# refused NAME WHAT [OPTIONS]: exit 2, one line naming the file and saying WHAT (a grep -E pattern), no stdout
refused() {
    local name=$1 f=$tmp/bad/$1.pickle what=$2; shift 2
    s2t "$@" "$f" > "$tmp/o" 2> "$tmp/e"
    check_eq "$name${1:+ ($*)}: exit 2, one line, nothing on stdout" "$?:$(wc -l < "$tmp/e"):$(wc -c < "$tmp/o")" "2:1:0"
    check "  ... naming the file and what is wrong ($what)" grep -qE "^$f: .*$what" "$tmp/e"
}
refused size_past_2_64 "device_traces\[0\]\[0\] \('alloc'\): 'size' is a 65-bit number"
refused size_huge_int "'size' is a 16610-bit number"
refused segment_at_0 "segments\[0\]: a segment of 20971520 bytes at 0x0: .*nonzero multiples of 512"
refused segment_unaligned "segments\[0\]: a segment .* at 0x7f0000000064"
refused streams_300 "301 streams; the model keeps pools for at most 256"
refused block_past_segment "segments\[0\]\['blocks'\]\[0\]: 41943040 bytes at 0x7f0000000000: not inside its segment"
refused blocks_overlap "segments\[0\]\['blocks'\]\[1\]: .*overlaps the block before it"
refused blocks_not_list "segments\[0\]: 'blocks' is 5, not a list"
refused block_not_dict "segments\[0\]\['blocks'\]\[0\]: 7, not a dict"
refused segments_not_list "'segments' is 5, not a list"
refused segment_not_dict "segments\[0\] is 'x', not a dict"
refused total_size_str "segments\[0\]: 'total_size' is '20', not a whole number"
refused total_size_negative "segments\[0\]: 'total_size' is -20, not a whole number"
refused total_size_bool "segments\[0\]: 'total_size' is True, not a whole number"
refused device_bool "segments\[0\]: 'device' is True, not a device number"
refused segment_type_int "segments\[0\]: 'segment_type' is 3, not a string"
refused state_none "segments\[0\]\['blocks'\]\[0\]: 'state' is None, not a string"
refused event_not_dict "device_traces\[0\]\[1\]: 5, not a dict"
refused event_size_str "device_traces\[0\]\[0\] \('alloc'\): 'size' is '5'"
refused event_size_float "'size' is 5.0, not a whole number"
refused event_stream_bool "'stream' is True, not a cudaStream_t"
refused event_stream_huge "'stream' is a 71-bit number, not a cudaStream_t"
refused event_addr_negative "device_traces\[0\]\[0\] \('free_completed'\): 'addr' is -512"
refused event_unknown_action "device_traces\[0\]\[1\] \('teleport'\): unknown action 'teleport'"
refused oom_of_0_bytes "device_traces\[0\]\[1\] \('oom'\): an oom of 0 bytes"
refused segments_overlap "segments\[1\]: a segment .* overlaps segments\[0\]"
refused history_segment_overlaps "device_traces\[0\]\[0\] \(segment_free\): a segment .* overlaps segments\[0\]"
refused live_block_unaligned "device_traces\[0\]\[0\] \(free_requested\): a block of 1000 bytes live at 0x7f0000000064"
refused live_block_too_big "does not fit before 0x7f0000200000 \(the segment's end\)"
refused no_allocation "device 0's 2 events hold no allocation"
refused bad_conf_value "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb:5' is refused by the model"
refused conf_with_hash "PYTORCH_CUDA_ALLOC_CONF 'max_split_size_mb:64#1' is refused by the model"
refused no_events "device 0 recorded no events: nothing to replay \(no device has any"
refused device1_only "device 0 recorded no events: nothing to replay \(devices with events: 1 \(--device N\)\)"
refused device1_only "the snapshot has no device 2 \(device_traces has 2; devices with events: 1" --device 2
s2t --device 1 "$tmp/bad/device1_only.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "--device 1 picks the device that has events: exit 0, its alloc" "$?:$(grep -c '^alloc ' "$tmp/o")" "0:1"
check "  ... and the header names it" grep -q "^# from .*, device 1: 1 events" "$tmp/o"
for args in "--device 128" "--device x" "--device -1" "--device ²" "--device" "--max-entries 0" \
            "--max-pickle-bytes 0" "--max-pickle-bytes 1X" "--max-pickle-bytes 99999999999999999999T"; do
    # shellcheck disable=SC2086
    s2t $args "$tmp/s1.pickle" > "$tmp/o" 2> "$tmp/e"
    check_eq "snapshot2trace $args: exit 2, one line, nothing on stdout" "$?:$(wc -l < "$tmp/e"):$(wc -c < "$tmp/o")" "2:1:0"
done
s2t -- "$tmp/s1.pickle" > "$tmp/o" 2> /dev/null
check_eq "-- ends the options" "$?" 0
s2t <(gzip -c "$tmp/s1.pickle") > "$tmp/o" 2> /dev/null
check_eq "a gzip'd snapshot through a pipe converts" "$?:$(grep -c '^alloc ' "$tmp/o")" "0:$(grep -c '^alloc ' "$tmp/s1.trace")"

# ------------------------------------------------------------ the size limit (gzip bombs)
# A gzip of zeros is no pickle: refused from its first chunk. One that starts
# as a pickle is decompressed only up to the limit (--max-pickle-bytes, or
# $MEMCLAIMS_MAX_PICKLE_BYTES; default 4 GiB), so memory stays bounded.
python3 -c 'import sys, zlib
c = zlib.compressobj(1, zlib.DEFLATED, 31)
with open(sys.argv[1], "wb") as z, open(sys.argv[2], "wb") as p:
    z.write(c.compress(b"\0" * (1 << 20)))
    c2 = zlib.compressobj(1, zlib.DEFLATED, 31)
    p.write(c2.compress(b"\x80\x04"))
    for _ in range(256):
        z.write(c.compress(b"\0" * (1 << 20)))
        p.write(c2.compress(b"\0" * (1 << 20)))
    z.write(c.flush()); p.write(c2.flush())' "$tmp/zeros.pickle.gz" "$tmp/bomb.pickle.gz"
s2t "$tmp/zeros.pickle.gz" > "$tmp/o" 2> "$tmp/e"
check_eq "257 MiB of gzip'd zeros: exit 2, one line, nothing on stdout" "$?:$(wc -l < "$tmp/e"):$(wc -c < "$tmp/o")" "2:1:0"
check "  ... not a pickle, from its first byte" grep -q "zeros.pickle.gz: not a PyTorch memory snapshot: not a pickle (it starts with byte 0x00)" "$tmp/e"
# maxrss KIB_VAR CMD...: runs CMD (stdout, stderr to $tmp/o, $tmp/e); its exit code, and its peak memory in KiB
maxrss() {
    python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[3:], stdout=open(sys.argv[1], "wb"), stderr=open(sys.argv[2], "wb"))
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$tmp/o" "$tmp/e" "$@"
}
read -r rc kib < <(MEMCLAIMS_MAX_PICKLE_BYTES=32Mi maxrss "$root/scripts/snapshot2trace" --replay "$replay" "$tmp/bomb.pickle.gz")
check_eq "a 256 MiB pickle gzip'd into $(($(wc -c < "$tmp/bomb.pickle.gz") / 1024)) KiB, limit 32Mi: exit 2, one line, nothing on stdout" \
    "$rc:$(wc -l < "$tmp/e"):$(wc -c < "$tmp/o")" "2:1:0"
check "  ... naming the file and the limit" grep -q "bomb.pickle.gz: the pickle is larger than the limit of 33554432 bytes (--max-pickle-bytes or \$MEMCLAIMS_MAX_PICKLE_BYTES; default 4 GiB)" "$tmp/e"
check "  ... having taken under 160 MiB (took $((kib / 1024)) MiB)" test "$kib" -lt $((160 * 1024))
s2t --max-pickle-bytes 1Ki "$tmp/s1.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "--max-pickle-bytes 1Ki on a plain pickle larger than that: exit 2, one line" "$?:$(wc -l < "$tmp/e")" "2:1"
check "  ... naming the limit" grep -q "larger than the limit of 1024 bytes" "$tmp/e"
MEMCLAIMS_MAX_PICKLE_BYTES=1Ki s2t --max-pickle-bytes 1Mi "$tmp/s1.pickle" > /dev/null 2>&1
check_eq "--max-pickle-bytes wins over the variable" "$?" 0
MEMCLAIMS_MAX_PICKLE_BYTES=lots s2t "$tmp/s1.pickle" > "$tmp/o" 2> "$tmp/e"
check_eq "a bad \$MEMCLAIMS_MAX_PICKLE_BYTES: exit 2, one line" "$?:$(wc -l < "$tmp/e")" "2:1"

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

# A block from before the history, freed in it, has only its request (3 MiB):
# an alloc at 4 MiB past its start while it is live shows it took 4 MiB (a
# large pool's block cannot leave a free 1 MiB behind it).
python3 - "$tmp/gap.pickle" <<'EOF2'
import pickle, sys
MiB, base = 1 << 20, 0x7f0000000000
seg = dict(device=0, address=base, total_size=20 * MiB, allocated_size=0, active_size=0, requested_size=0,
           stream=0, segment_type="large", segment_pool_id=(0, 0), is_expandable=False, frames=[],
           blocks=[dict(address=base, size=20 * MiB, requested_size=0, state="inactive", frames=[])])
ev = lambda a, addr, size: dict(action=a, addr=addr, size=size, stream=0, time_us=0, frames=[])
trace = [ev("alloc", base + 4 * MiB, 8 * MiB), ev("free_requested", base, 3 * MiB), ev("free_completed", base, 3 * MiB),
         ev("free_requested", base + 4 * MiB, 8 * MiB), ev("free_completed", base + 4 * MiB, 8 * MiB)]
pickle.dump(dict(segments=[seg], device_traces=[trace], allocator_settings={}), open(sys.argv[1], "wb"))
EOF2
s2t "$tmp/gap.pickle" > "$tmp/gap.trace" 2> "$tmp/gap.err"
check "a block freed in the history, an alloc 1 MiB past its request while it lived: block= that far" \
    grep -q '^live [0-9]* 3145728 0x7f0000000000 block=4194304$' "$tmp/gap.trace"
check_eq "  and the replay places the alloc where PyTorch did" \
    "$("$build/replay" --summary "$tmp/gap.trace" 2> /dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["addr_mismatches"])')" 0
summary
