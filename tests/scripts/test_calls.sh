#!/usr/bin/env bash
# Which file of common/workload/transformer/ (then core/, mlp/, sharded/,
# and the Transformer's kernels/ and reference/) calls which, read from BUILD_DIR's
# objects (nm: a file calls another when it leaves undefined a symbol the
# other defines): no circle among them (tfm_internal.h's map), and the tape
# (tfm_tape.c) calls nothing of tfm_seq.c or tfm_offload.c: it reaches
# checkpoint's recomputation and --offload through the saved-tensor hooks.
# The circle finder is first shown to find one in a made-up graph.
#   tests/scripts/test_tfm_calls.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:?usage: test_tfm_calls.sh BUILD_DIR}
objs=$build/obj/common/workload/transformer
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The CUDA objects' build (the Makefile's CU_BUILD): the plain build's for build/san.
cu_build=${build%/san}
# edges DIR: "CALLER CALLEE" lines, one per pair of files, from DIR's
# objects (its .c ones) and the CUDA build's of the same folder (.cu).
edges() {
    local o src
    for o in "$1"/*.c.o "$cu_build/obj/${1#"$build"/obj/}"/*.cu.o; do
        [ -f "$o" ] || continue
        src=${o#"$build"/obj/}; src=${src#"$cu_build"/obj/}
        [ -f "${src%.o}" ] || continue   # a stale object of a moved file
        nm "$o" | awk -v f="$(basename "$o" .o)" '$1 == "U" { print "U", f, $2 }
                                                  NF == 3 && $2 ~ /^[TDBRC]$/ { print "D", f, $3 }'
    done | awk '$1 == "D" { def[$3] = $2; next } { use[n++] = $2 " " $3 }
                END { for (i = 0; i < n; i++) { split(use[i], u, " ");
                                                if ((u[2] in def) && def[u[2]] != u[1]) print u[1], def[u[2]] } }' |
        sort -u
}

# circles < EDGES: the files on a circle, one circle a line (none: nothing).
circles() {
    python3 -c '
import sys
g = {}
for line in sys.stdin:
    a, b = line.split()
    g.setdefault(a, set()).add(b)
    g.setdefault(b, set())
def reach(s):
    seen, todo = set(), [s]
    while todo:
        for w in g[todo.pop()]:
            if w not in seen: seen.add(w); todo.append(w)
    return seen
r = {v: reach(v) for v in g}
done = set()
for v in sorted(g):
    if v in r[v] and v not in done:
        c = sorted(w for w in g if w in r[v] and v in r[w])
        done.update(c)
        print(" ".join(c))
'
}

printf 'a b\nb c\nc a\nc d\n' | circles > "$tmp/made_up"
check_eq "the circle finder finds a -> b -> c -> a" "$(cat "$tmp/made_up")" "a b c"
check_eq "... and none in a -> b -> c" "$(printf 'a b\nb c\n' | circles)" ""

if ! ls "$objs"/tfm_tape.c.o "$objs"/tfm_seq.c.o "$objs"/tfm_offload.c.o > /dev/null 2>&1; then
    failure "the Transformer's objects in $objs" "build them first (make SAN=1 test-build)"
    summary
    exit
fi
edges "$objs" > "$tmp/edges"
check "the Transformer's files call each other (the graph is read)" grep -q '^tfm_seq.c tfm_tape.c$' "$tmp/edges"
check_eq "no circle among the Transformer's files" "$(circles < "$tmp/edges")" ""
check_eq "the tape calls nothing of tfm_seq.c or tfm_offload.c" \
    "$(grep -E '^tfm_tape.c (tfm_seq.c|tfm_offload.c)$' "$tmp/edges")" ""
check "tfm_seq.c installs the offload hooks" grep -q '^tfm_seq.c tfm_offload.c$' "$tmp/edges"

# The other folders of the workload: no circle among the files of each.
for d in core mlp sharded transformer/kernels transformer/reference; do
    o=$build/obj/common/workload/$d
    e=$tmp/edges.${d//\//.}
    edges "$o" > "$e"
    check "common/workload/$d/'s files call each other (the graph is read: $(wc -l < "$e") edges)" test -s "$e"
    check_eq "no circle among common/workload/$d/'s files" "$(circles < "$e")" ""
done
check_eq "sharded_seq.c calls nothing of sharded_run.c (the step's requests under the life cycle)" \
    "$(grep -E '^sharded_seq.c sharded_run.c$' "$tmp/edges.sharded")" ""
summary
