#!/usr/bin/env bash
# Every reader of a run refuses what is not a run: build/compare and
# scripts/compare, build/report and scripts/report, build/results_json (a run
# folder, and --csv / --csv-dir on a results.json), each on copies of the
# committed H100 run with one file spoilt (empty, missing, a directory, a
# symbolic link loop or a dangling one, a FIFO, a number out of range, not
# JSON). Each must exit 2 with one line on stderr naming the file (and the
# line, where there is one), and write nothing: no COMPARE.md or compare.tsv,
# REPORT.md and results.json as they were, no temporary file.
#   tests/scripts/test_bad_runs.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
case $build in /*) ;; *) build=$root/$build ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
reference=$root/results/reference-h100
cd "$tmp" || exit 2
k=del_empty_cache

# A copy of the reference run (its figures and report, not its charts and
# logs), with or without its results.json.
fresh() { # NAME json|csv
    rm -rf "$1"
    mkdir "$1"
    cp "$reference"/*.csv "$reference"/*.tsv "$reference/REPORT.md" "$1"/
    if [ "$2" = json ]; then cp "$reference/results.json" "$1"/; fi
}

# spoil RUN FILE HOW: HOW is empty, missing, dir, loop, dangling, fifo, or
# sed:SCRIPT (the reference's file, edited).
spoil() {
    local f=$1/$2
    rm -rf "$f"
    case $3 in
        empty) : > "$f" ;;
        missing) ;;
        dir) mkdir "$f" ;;
        loop) ln -s "$2" "$f" ;;
        dangling) ln -s no-such-file "$f" ;;
        fifo) mkfifo "$f" ;;
        sed:*) cp "$reference/$2" "$f" && sed -i "${3#sed:}" "$f" ;;
    esac
}

# refused WHAT SAYS CMD...: CMD exits 2 (a hang is cut at 20 s) with one
# line on stderr holding SAYS (a fixed string: the file, and line).
refused() {
    local what=$1 says=$2 err rc
    shift 2
    err=$(timeout 20 "$@" 2>&1 >/dev/null); rc=$?
    check_eq "$what: exit 2" "$rc" 2
    if [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && grep -qF -- "$says" <<<"$err"; then
        pass "... one line naming $says"
    else
        failure "... one line naming $says" "stderr: $err"
    fi
}

# A folder's entries with their kind, size and time: equal before and after
# means nothing was written there.
state_of() { (cd "$1" && find . -printf '%p %y %s %T@\n' | sort) 2>/dev/null; }

# compare (as A and as B) and scripts/compare on RUN.
compare_refuses() { # WHAT RUN SAYS
    local what=$1 run=$2 says=$3
    refused "compare, $what, as A" "$says" "$build/compare" "$run" "$reference"
    refused "compare, $what, as B" "$says" "$build/compare" "$reference" "$run"
    refused "scripts/compare, $what" "$says" "$root/scripts/compare" --build "$build" --out "$tmp/out" "$reference" "$run"
    check "... wrote nothing (no COMPARE.md, compare.tsv, compare.png)" test ! -e "$tmp/out"
}

# ------------------------------------------------------------ the CSV files
# Without results.json a run is read from meta.csv, experiments.tsv,
# runs.tsv and every <key>.csv: by compare, report and results_json alike.
# Each case: what|file|how|what the line says after the run folder's path.
csv_cases="
an empty experiments.tsv|experiments.tsv|empty|/experiments.tsv: empty: no experiment planned
a blank experiments.tsv|experiments.tsv|sed:s/.*//|/experiments.tsv: empty: no experiment planned
no experiments.tsv|experiments.tsv|missing|: not a memclaims run (no experiments.tsv)
experiments.tsv, a directory|experiments.tsv|dir|/experiments.tsv: cannot read: a directory
an experiment planned twice|experiments.tsv|sed:2p|/experiments.tsv:3: experiment 'block_rounding' planned twice
an empty meta.csv|meta.csv|empty|/meta.csv: empty: not a memclaims meta.csv
meta.csv with its header only|meta.csv|sed:2,\$d|/meta.csv: no key,value line
no meta.csv|meta.csv|missing|: not a memclaims run (no meta.csv)
meta.csv, a directory|meta.csv|dir|/meta.csv: cannot read: a directory
meta.csv, a symbolic link loop|meta.csv|loop|/meta.csv: cannot read: Too many levels of symbolic links
meta.csv, a FIFO|meta.csv|fifo|/meta.csv: cannot read: a FIFO
an empty $k.csv|$k.csv|empty|/$k.csv: empty: not a memclaims CSV
$k.csv, a directory|$k.csv|dir|/$k.csv: cannot read: a directory
$k.csv, a symbolic link loop|$k.csv|loop|/$k.csv: cannot read: Too many levels of symbolic links
$k.csv, a dangling symbolic link|$k.csv|dangling|/$k.csv: cannot read: a symbolic link to nothing
$k.csv, a FIFO|$k.csv|fifo|/$k.csv: cannot read: a FIFO
a CSV n past LONG_MAX|$k.csv|sed:3s/,bytes,1,/,bytes,99999999999999999999,/|/$k.csv:3: n '99999999999999999999' is not a count
a CSV n of 2^53|$k.csv|sed:3s/,bytes,1,/,bytes,9007199254740992,/|/$k.csv:3: n '9007199254740992' is not a count
a CSV figure past a double|$k.csv|sed:4s/,bytes,1,[0-9]*,/,bytes,1,1e999,/|/$k.csv:4: figure '1e999'
a CSV param_value past a double|$k.csv|sed:5s/,keep_all,,,/,keep_all,x,-1e400,/|/$k.csv:5: param_value '-1e400'
runs.tsv, a directory|runs.tsv|dir|/runs.tsv: cannot read: a directory
an exit code past LONG_MAX|runs.tsv|sed:2s/\tran\t0\t/\tran\t99999999999999999999\t/|/runs.tsv:2: exit code '99999999999999999999'
an exit code past 255|runs.tsv|sed:3s/\tran\t0\t/\tfailed\t256\t/|/runs.tsv:3: exit code '256'
seconds past a double|runs.tsv|sed:4s/\t[0-9.]*\tgpu$/\t1e999\tgpu/|/runs.tsv:4: seconds '1e999'
"
while IFS='|' read -r what file how says; do
    [ -n "$what" ] || continue
    fresh run csv
    spoil run "$file" "$how"
    before=$(state_of run)
    compare_refuses "$what" "$tmp/run" "$tmp/run$says"
    refused "report, $what" "$tmp/run$says" "$build/report" "$tmp/run"
    refused "scripts/report, $what" "$tmp/run$says" "$root/scripts/report" --build "$build" "$tmp/run"
    refused "results_json, $what" "$tmp/run$says" "$build/results_json" "$tmp/run"
    check_eq "... the run as it was (REPORT.md, no results.json, no temporary file)" "$(state_of run)" "$before"
done <<<"$csv_cases"

# A run whose experiments all waived, leaving no figure, still compares
# (it once handed qsort a null array).
mkdir figureless
printf 'key,value\ngpu_status,no device\n' > figureless/meta.csv
printf 'C03\tpinned_vs_pageable\tt\ts\tm\tr\n' > figureless/experiments.tsv
printf 'pinned_vs_pageable\twaived\t77\t0.1\tgpu\n' > figureless/runs.tsv
err=$("$build/compare" figureless figureless 2>&1 >/dev/null); rc=$?
check_eq "compare of a run without figures exits 0, nothing on stderr" "$rc:$err" "0:"

# ------------------------------------------------------------ results.json
# With results.json a run is read from it alone (compare); results_json
# --csv and --csv-dir read it back.
json_edit() { # RUN PYTHON: the code edits the document d
    python3 -c '
import json, sys
path = sys.argv[1]
d = json.load(open(path))
exec(sys.argv[2])
json.dump(d, open(path, "w"), indent=1)' "$1/results.json" "$2"
}
json_refuses() { # WHAT RUN SAYS
    local what=$1 run=$2 says=$3 before
    before=$(state_of "$run")
    compare_refuses "$what" "$run" "$says"
    refused "results_json --csv, $what" "$says" "$build/results_json" --csv "$k" "$run/results.json"
    rm -rf "$tmp/back" && mkdir "$tmp/back"
    refused "results_json --csv-dir, $what" "$says" "$build/results_json" --csv-dir "$tmp/back" "$run/results.json"
    check_eq "... wrote no CSV, left the run as it was" "$(ls -A "$tmp/back")$(state_of "$run")" "$before"
}
# 1e999 is no Python float: written as the string "@1e999@", then swapped in.
json_cases='
an empty results.json|empty|results.json: empty
results.json, a directory|dir|results.json: cannot read: a directory
results.json, a symbolic link loop|loop|results.json: cannot read: Too many levels of symbolic links
results.json, a dangling symbolic link|dangling|results.json: cannot read: a symbolic link to nothing
results.json, a FIFO|fifo|results.json: cannot read: a FIFO
results.json cut short (no closing brace)|sed:$d|results.json:
results.json with text after the document|sed:$s/$/ {}/|results.json:
a JSON n of 1e300|py:d["experiments"][0]["rows"][1]["n"] = 1e300|results.json: experiment 1 '"'del_empty_cache'"', row 2: n (1e+300) is not a count
a JSON n of 1e999|py:d["experiments"][0]["rows"][1]["n"] = "@1e999@"|results.json: experiment 1 '"'del_empty_cache'"', row 2: n (inf) is not a count
a JSON n of 2^53|py:d["experiments"][0]["rows"][1]["n"] = 2**53|results.json: experiment 1 '"'del_empty_cache'"', row 2: n (9.0072e+15) is not a count
a negative JSON n|py:d["experiments"][2]["rows"][0]["n"] = -3|results.json: experiment 3 '"'pinned_vs_pageable'"', row 1: n (-3) is not a count
a JSON median of 1e999|py:d["experiments"][0]["rows"][0]["median"] = "@1e999@"|results.json: experiment 1 '"'del_empty_cache'"', row 1: "median" is not a figure
a JSON median that is a word|py:d["experiments"][0]["rows"][0]["median"] = "big"|results.json: experiment 1 '"'del_empty_cache'"', row 1: "median" is not a figure
a JSON exit code past 255|py:d["experiments"][0]["exit_code"] = 1e300|results.json: experiment 1 '"'del_empty_cache'"': "exit_code" is not 0 to 255
no experiments|py:d["experiments"] = []|results.json: no experiments: not a run
a key that is a path|py:d["experiments"][1]["key"] = "../escape"|results.json: experiment 2: no "claim", or no "key" usable
an unknown state|py:d["state"] = "finished"|results.json: "state" is not
'
while IFS='|' read -r what how says; do
    [ -n "$what" ] || continue
    fresh run json
    case $how in
        py:*) json_edit run "${how#py:}" ;;
        *) spoil run results.json "$how" ;;
    esac
    [ -f run/results.json ] && [ ! -L run/results.json ] && sed -i 's/"@1e999@"/1e999/' run/results.json
    json_refuses "$what" "$tmp/run" "$tmp/run/$says"
done <<<"$json_cases"
# Where the document breaks, its line is named.
for edit in '$d' '$s/$/ {}/'; do
    fresh run json
    spoil run results.json "sed:$edit"
    err=$("$build/compare" run "$reference" 2>&1 >/dev/null)
    check "results.json edited by sed '$edit': its line is named" \
        grep -Eq "^compare: run/results.json:[0-9]+: not valid JSON$" <<<"$err"
done
summary
