# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # run-all's variables, read and set (below)
# beside.sh: PyTorch's figure beside the suite's, for scripts/run-all
# --pytorch (which sources it; its --help says what the option does).
# Uses run-all's variables: run (the run folder), here (scripts/), beside
# (tests/torch/beside), quick, pt_timeout, exps; sets child while a
# counterpart runs, so that run-all's signal handler stops it.

# beside_check: decides once, up front, whether the counterparts run: sets
# pt_ok when python3 imports torch and torch sees a CUDA device, and prints
# one line either way (without: the reason).
beside_check() {
    local pt_err=$run/logs/.pytorch-check.tmp.$$ pt_version with name exe why
    pt_ok=""
    # shellcheck disable=SC2016
    if pt_version=$(PYTHONDONTWRITEBYTECODE=1 python3 -c '
import sys
try:
    import torch
except Exception as e:
    sys.exit("python3 cannot import torch: %s" % e)
if not torch.cuda.is_available():
    sys.exit("torch %s sees no CUDA device" % torch.__version__)
print(torch.__version__)' 2>"$pt_err"); then
        pt_ok=1
        pt_version=${pt_version##*$'\n'} # what torch printed on import left out
        with=""
        for exe in "${exps[@]}"; do
            name=$(basename "$exe")
            [ -f "$beside/${name#c[0-9][0-9]_}.py" ] && with="$with${with:+, }$(printf '%s' "$name" | cut -c1-3 | tr c C)"
        done
        echo "PyTorch beside: torch $pt_version; ${with:-no experiment of this run has a counterpart}${with:+ measured again with PyTorch after the suite (tests/torch/beside/)}"
    else
        why=$(grep -v '^[[:space:]]*$' "$pt_err" 2>/dev/null | tail -1 | cut -c1-200)
        command -v python3 >/dev/null 2>&1 || why="python3 not found"
        echo "PyTorch beside: not available (${why:-python3 failed}); the verdicts rest on the suite alone"
    fi
    rm -f "$pt_err"
}

# A CSV field as the suite's writer writes it (csv.h): quoted where it holds
# a comma or a quote, quotes doubled.
csv_field() {
    case $1 in
        *[,\"]*) local q=${1//\"/\"\"}; printf '"%s"' "$q" ;;
        *) printf '%s' "$1" ;;
    esac
}

# run_beside ID KEY: runs tests/torch/beside/KEY.py after experiment KEY and
# appends the rows it printed (checked by lib/beside_rows.awk) to RUN/KEY.csv:
# the CSV and the rows to a temporary file, renamed over the CSV. A failure,
# a timeout or dropped lines add one pytorch_beside row of status failed.
run_beside() {
    local id=$1 key=$2 csv=$run/$2.csv log=$run/logs/$2.pytorch.log rows=$run/.$2.pytorch.tmp.$$
    local t0 rc secs state note kept nfail dropped
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    PYTHONDONTWRITEBYTECODE=1 timeout -k 10 "$pt_timeout" python3 "$beside/$key.py" --suite-csv "$csv" \
        --csv-header "$(head -1 "$csv")" $quick > "$rows" 2> "$log" &
    child=$!
    wait "$child"
    rc=$?
    child=""
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    # A last line without its newline was cut off mid-write (a crash, the timeout).
    if [ -s "$rows" ] && [ -n "$(tail -c 1 "$rows")" ]; then sed -i '$d' "$rows"; fi
    awk -v claim="$id" -v key="$key" -v dropped="$rows.dropped" -v failed="$rows.failed" \
        -f "$here/lib/csv.awk" -f "$here/lib/beside_rows.awk" "$rows" > "$rows.kept"
    kept=$(wc -l < "$rows.kept")
    nfail=$(cat "$rows.failed")
    dropped=$(cat "$rows.dropped")
    case $rc in
        0) state=ran; note="" ;;
        124|137) state=timeout; note="timed out after $pt_timeout s" ;;
        *) state=failed
           note=$(grep -v '^[[:space:]]*$' "$log" | tail -1 | cut -c1-200)
           note="failed (exit $rc)${note:+: $note}" ;;
    esac
    [ "$dropped" -gt 0 ] && note="${note:+$note; }$dropped lines of its output were not PyTorch rows of $id (dropped)"
    [ -s "$log" ] || rm -f "$log"
    [ -n "$note" ] && [ -f "$log" ] && note="$note (logs/$key.pytorch.log)"
    if [ -n "$note" ]; then
        printf '%s,%s,pytorch,,,pytorch_beside,,0,,,,,,failed,%s\n' "$id" "$key" \
            "$(csv_field "tests/torch/beside/$key.py $note")" >> "$rows.kept"
    fi
    if ! { cat "$csv" "$rows.kept" > "$run/.$key.csv.tmp.$$" && mv -f "$run/.$key.csv.tmp.$$" "$csv"; }; then
        rm -f "$run/.$key.csv.tmp.$$"
        note="${note:+$note; }its rows could not be added to $key.csv"
    fi
    rm -f "$rows" "$rows.kept" "$rows.dropped" "$rows.failed"
    printf '%s\t%s\t%s\t%s\t%s\n' "$key" "$state" "$rc" "$secs" "$kept" >> "$run/logs/pytorch.tsv"
    if [ -n "$note" ]; then
        printf '      PyTorch beside: %s s %s\n' "$secs" "$note"
    else
        printf '      PyTorch beside: %s s, %d rows%s\n' "$secs" "$kept" \
            "$([ "$nfail" -gt 0 ] && printf ', %d points failed or ran out of memory (see %s.csv)' "$nfail" "$key")"
    fi
}
