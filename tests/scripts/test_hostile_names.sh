#!/usr/bin/env bash
# Hostile file and folder names (issue 31): no name a user gives (build/whatif
# --results and SNAPSHOT, scripts/compare's runs, --out and TMPDIR,
# scripts/plot's RUN and TMPDIR, scripts/report's RUN, and make's RUN, A, B,
# OUT, SNAPSHOT, CONTEXT) is ever run by a shell or read as code by gnuplot.
# Each name holds a quote, gnuplot code, shell code (quoted, backquoted,
# $(...), after ;), a newline, a leading '<' or '|' (gnuplot pipes such a
# file name through a shell) or a leading '-', and would create $CANARY if
# anything ran it. For each: no canary, the output where it was asked for (or
# one line and exit 2 where the name is refused), and gnuplot given nothing
# but fixed names. gnuplot is a recorder (GNUPLOT) that logs what it was
# asked and draws with the real one where installed, else writes a stand-in
# PNG: the checks and their count are the same either way.
#   tests/scripts/test_hostile_names.sh BUILD_DIR
set -u
export MEMCLAIMS_MODEL_CHECKS=0 # the model's invariants are not under test here
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=$(cd "${1:-build/san}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CANARY=$tmp/canary
fixtures=$root/tests/fixtures/results

names=(
    "o'brien"
    "x'; system(\"touch \$CANARY\"); y='"
    "q'; touch \"\$CANARY\"; echo '"
    "b\`touch \$CANARY\`"
    "d\$(touch \$CANARY)"
    "s;touch \$CANARY;"
    $'n\ntouch $CANARY\n'
    "m\$(shell touch \$\${CANARY})"
    "<touch \$CANARY;"
    "|touch \$CANARY;"
    "-dash"
)
label() { printf '%q' "$1"; }

# ------------------------------------------------------------ the recorder
export GP_LOG=$tmp/gnuplot.log REAL_GNUPLOT=
REAL_GNUPLOT=$(command -v gnuplot 2>/dev/null)
rec=$tmp/bin/gnuplot
mkdir -p "$tmp/bin"
# It logs each call and each -e text that holds more than fixed names (user
# text), then draws: the real gnuplot, or a stand-in PNG where out= says.
cat > "$rec" <<'EOF'
#!/usr/bin/env bash
echo CALL >> "$GP_LOG"
out=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    [ "${args[i]}" = -c ] && break
    [ "${args[i]}" = -e ] || continue
    e=${args[i + 1]:-}
    [[ $e =~ ^([a-z]+=\'[A-Za-z0-9_.:-]*\'(\;\ )?)+$ ]] || printf 'USER TEXT %q\n' "$e" >> "$GP_LOG"
    [[ $e =~ out=\'([^\']*)\' ]] && out=${BASH_REMATCH[1]}
done
[ -n "$REAL_GNUPLOT" ] && exec "$REAL_GNUPLOT" "$@"
[ -n "$out" ] && printf '\211PNG\r\n\032\n' > "$out"
EOF
chmod +x "$rec"
export GNUPLOT=$rec
# gp_asked: what gnuplot was asked since the last call; the log starts anew.
gp_asked() {
    awk '/^CALL/ { c++ } /^USER TEXT/ { u++ } END { printf "%d calls, %d with user text", c, u }' "$GP_LOG" 2>/dev/null
    rm -f "$GP_LOG"
}
is_png() { [ "$(head -c 4 "$1" 2>/dev/null | tail -c 3)" = PNG ]; }
# no_run WHAT: the canary is not there (and is removed for the next check).
no_run() {
    check "$1: no command ran" test ! -e "$CANARY"
    rm -f "$CANARY"
}
# says ERRFILE TEXT: the file names TEXT; a newline in it may be shown
# escaped (a message is one line), so its lines are looked for in order.
says() {
    local rest text=$2 piece
    rest=$(cat "$1")
    while :; do
        piece=${text%%$'\n'*}
        [[ $rest == *"$piece"* ]] || return 1
        rest=${rest#*"$piece"}
        [ "$piece" = "$text" ] && return 0
        text=${text#*$'\n'}
    done
}
# refused WHAT RC ERRFILE: exit 2, one line on stderr.
refused() {
    check_eq "$1: exit 2" "$2" 2
    check_eq "$1: one line on stderr" "$(wc -l < "$3")" 1
}

snapshot=$tmp/s.pickle
python3 "$root/tests/whatif/make_snapshot.py" --events 200 --max-live 50 --block-mib 20 --seed 3 "$snapshot" > /dev/null

i=0
for n in "${names[@]}"; do
    i=$((i + 1))
    l=$(label "$n")
    # The name as given, relative, in a folder per tool.
    w=$tmp/case$i
    mkdir -p "$w"/{whatif,compare,plot,report}
    # "--" only where the name needs it, as a user would type it.
    dd=()
    [ "$n" = -dash ] && dd=(--)

    # -------------------------------------------------------- whatif
    cd "$w/whatif" || exit 2
    cp -- "$snapshot" "./$n.pickle"
    "$build/whatif" --results "$n" --context 500M --cards 8,16 --jobs 2 "$n.pickle" > out 2> err; rc=$?
    if [ "$n" = -dash ]; then
        refused "whatif $l.pickle (an option to it)" "$rc" err
        check "whatif $l.pickle: nothing written" test ! -e "./$n"
        gp_asked > /dev/null
        "$root/scripts/whatif" --build "$build" --results "$n" --context 500M --cards 8,16 --jobs 2 -- "$n.pickle" \
            > out 2> err; rc=$?
        l="$l (scripts/whatif --)"
    fi
    check_eq "whatif --results $l: exit 0" "$rc" 0
    check "whatif --results $l: WHATIF.md in that folder" test -s "./$n/whatif-latest/WHATIF.md"
    check_eq "whatif --results $l: its three charts" \
        "$(for c in peak_reserved cards timeline; do is_png "./$n/whatif-latest/$c.png" && echo "$c"; done | wc -l)" 3
    check_eq "whatif --results $l: gnuplot given fixed names" "$(gp_asked)" "3 calls, 0 with user text"
    no_run "whatif --results $l"

    # -------------------------------------------------------- compare
    cd "$w/compare" || exit 2
    cp -r -- "$fixtures/labels-a" "./$n"
    cp -r -- "$fixtures/labels-b" "./$n-b"
    mkdir -p -- "./$n-tmp"
    TMPDIR="$n-tmp" "$root/scripts/compare" --build "$build" --out "$n-out" ${dd[@]+"${dd[@]}"} "$n" "$n-b" > out 2> err; rc=$?
    check_eq "compare $l (A, B, --out, TMPDIR): exit 0" "$rc" 0
    check "compare $l: COMPARE.md and compare.tsv in --out" test -s "./$n-out/COMPARE.md" -a -s "./$n-out/compare.tsv"
    check "compare $l: compare.png in --out" is_png "./$n-out/compare.png"
    check_eq "compare $l: gnuplot given fixed names" "$(gp_asked)" "1 calls, 0 with user text"
    check_eq "compare $l: nothing left in TMPDIR" "$(ls -A -- "./$n-tmp")" ""
    no_run "compare $l"

    # -------------------------------------------------------- plot
    cd "$w/plot" || exit 2
    mkdir -p -- "./$n" "./$n-tmp"
    # pinned_vs_pageable loads plots/lib/pytorch.gp; peer_copy reads the run folder.
    cp -- "$fixtures/meta.csv" "$fixtures/pinned_vs_pageable.csv" "$fixtures/peer_copy.csv" "./$n/"
    TMPDIR="$n-tmp" "$root/scripts/plot" ${dd[@]+"${dd[@]}"} "$n" > out 2> err; rc=$?
    check_eq "plot $l (and TMPDIR): exit 0" "$rc" 0
    check_eq "plot $l: both charts in the run folder" \
        "$(for c in pinned_vs_pageable peer_copy; do is_png "./$n/$c.png" && echo "$c"; done | wc -l)" 2
    check_eq "plot $l: gnuplot given fixed names" "$(gp_asked)" "2 calls, 0 with user text"
    check_eq "plot $l: nothing left in TMPDIR" "$(ls -A -- "./$n-tmp")" ""
    no_run "plot $l"

    # -------------------------------------------------------- report
    cd "$w/report" || exit 2
    cp -r -- "$fixtures/model-only" "./$n"
    "$root/scripts/report" --build "$build" "$n" > out 2> err; rc=$?
    if [ "$n" = -dash ]; then
        # Written, or refused as an option: either way said so.
        check "report $l: written, or exit 2 with one line and nothing written" \
            bash -c '{ [ "$1" = 0 ] && [ -s "./$2/REPORT.md" ]; } ||
                     { [ "$1" = 2 ] && [ "$(wc -l < err)" = 1 ] && [ ! -e "./$2/REPORT.md" ]; }' _ "$rc" "$n"
    else
        check "report $l: REPORT.md in that folder" test "$rc" = 0 -a -s "./$n/REPORT.md"
    fi
    no_run "report $l"
done
cd "$tmp" || exit 2

# ------------------------------------------------------------ make's variables
# make with the tools of the test build (build/san, what make test builds) as
# they are: -o, nothing rebuilt; no set-up check; its architecture stamp
# kept; none of the calling make's flags. Names are absolute, under $tmp.
arch=()
[ -f "$root/build/san/.cuda-arch" ] && arch=("CUDA_ARCH_FLAGS=$(cat "$root/build/san/.cuda-arch")")
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$root" SAN=1 SETUP_GOALS= \
           ${arch[@]+"${arch[@]}"} -o build/san/whatif -o build/san/compare -o build/san/report "$@"; }
# (Quotes balanced, so that a recipe's shell would parse them, and $$, which
# make would turn into $: each reaches a shell in a recipe that quoted badly.)
make_names=(
    "a\"b\`touch \$\${CANARY}\`;touch \$\${CANARY};\"c'd'\$\$(touch \$\${CANARY})"
    $'nl\n$$(touch $${CANARY})\ntouch $${CANARY}'
    "m\$(shell touch \$\${CANARY})\$(CANARY)"
)
i=0
for n in "${make_names[@]}"; do
    i=$((i + 1))
    l=$(label "$n")
    d=$tmp/make$i
    mkdir -p "$d"
    cp -r "$fixtures/labels-a" "$d/$n"
    cp -r "$fixtures/labels-b" "$d/$n-b"
    mkdir -p "$d/$n-run"
    cp "$fixtures/meta.csv" "$fixtures/pinned_vs_pageable.csv" "$fixtures/peer_copy.csv" "$fixtures/model-only/experiments.tsv" \
        "$d/$n-run/"
    mk plots report compare RUN="$d/$n-run" A="$d/$n" B="$d/$n-b" OUT="$d/$n-out" > "$tmp/out" 2> "$tmp/err"; rc=$?
    check_eq "make plots report compare with $l: exit 0" "$rc" 0
    check_eq "make plots RUN=$l: the charts in RUN" \
        "$(for c in pinned_vs_pageable peer_copy; do is_png "$d/$n-run/$c.png" && echo "$c"; done | wc -l)" 2
    check "make report RUN=$l: REPORT.md in RUN" test -s "$d/$n-run/REPORT.md"
    check "make compare A=$l B=... OUT=...: COMPARE.md in OUT" test -s "$d/$n-out/COMPARE.md"
    check_eq "make plots, compare with $l: gnuplot given fixed names" "$(gp_asked)" "3 calls, 0 with user text"
    no_run "make plots report compare with $l"
    # No snapshot of that name: whatif says so, naming it as given.
    mk whatif SNAPSHOT="$d/$n.pickle" CONTEXT=500M > "$tmp/out" 2> "$tmp/err"
    check "make whatif SNAPSHOT=$l: reaches whatif as it is" says "$tmp/err" "whatif: cannot read snapshot '$d/$n.pickle'"
    no_run "make whatif SNAPSHOT=$l"
done
n=${make_names[0]}
mk whatif SNAPSHOT="$snapshot" CONTEXT="$n" > "$tmp/out" 2> "$tmp/err"
check "make whatif CONTEXT=$(label "$n"): reaches whatif as it is" says "$tmp/err" "bad --context '$n'"
no_run "make whatif CONTEXT=$(label "$n")"
# A leading '-': a name, never an option (none of these exists: each tool
# says so, naming it as a file).
mk -k plots report compare RUN=-dash A=-dash-a B=-dash-b OUT="$tmp/dash-out" > "$tmp/out" 2> "$tmp/err"
check "make plots RUN=-dash: a folder, not an option" grep -q "^plot: no run folder '\./-dash'" "$tmp/err"
check "make report RUN=-dash: a folder, not an option" grep -q '^report: .*\./-dash' "$tmp/err"
check "make compare A=-dash-a: a folder, not an option" grep -q '^compare: .*\./-dash-a' "$tmp/err"
mk whatif SNAPSHOT=-dash.pickle CONTEXT=500M > "$tmp/out" 2> "$tmp/err"
check "make whatif SNAPSHOT=-dash.pickle: a file, not an option" \
    grep -q "^whatif: cannot read snapshot '\./-dash\.pickle'" "$tmp/err"
no_run "make with names starting with '-'"
rm -f "$GP_LOG"

summary
