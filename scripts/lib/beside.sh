# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # run-all's variables, read and set (below)
# beside.sh: PyTorch's figure beside the suite's, for scripts/run-all
# (which sources it; its --help says what it does, on by default).
# Uses run-all's variables: run (the run folder), here (scripts/), beside
# (tests/torch/beside), quick, pt_timeout, pt_budget, exps, pt_keys and
# pt_ids (the claims to measure, filled as the experiments run); sets child
# while the counterparts run, so that run-all's signal handler stops them.

# beside_check: decides once, up front, whether the counterparts run: sets
# pt_ok when python3 finds torch (without importing it: that takes ~5 s,
# paid once, by the runner) and torch is built with CUDA, and prints one
# line either way (without: the reason). Whether torch sees a GPU the
# runner finds out: where it does not, it says so in one line after the
# suite (beside_run_all). C24's is named "on two GPUs": on one, the suite's
# C24 waives, and so does its counterpart.
beside_check() {
    local pt_err=$run/logs/.pytorch-check.tmp.$$ pt_version with name exe why
    pt_ok=""
    # shellcheck disable=SC2016
    if pt_version=$(PYTHONDONTWRITEBYTECODE=1 python3 -c '
import importlib.metadata, importlib.util, os, re, sys
try:
    spec = importlib.util.find_spec("torch")
except Exception as e:
    sys.exit("python3 cannot find torch: %s" % e)
if spec is None or not spec.origin:
    sys.exit("python3 cannot import torch: no module named torch")
def assigned(path, name):
    """The string assigned to name in path (torch/version.py), None where it
    is assigned None, "" where it is not found."""
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return ""
    m = re.search(r"^%s\s*(?::[^=\n]*)?=\s*(None|[\x27\"]([^\x27\"]*)[\x27\"])" % name, text, re.M)
    return "" if m is None else (None if m.group(1) == "None" else m.group(2))
ver = os.path.join(os.path.dirname(spec.origin), "version.py") if spec.submodule_search_locations else spec.origin
version = assigned(ver, "__version__")
if not version:
    try:
        version = importlib.metadata.version("torch")
    except Exception:
        version = "(version unknown)"
if assigned(ver, "cuda") is None:
    sys.exit("torch %s is built without CUDA" % version)
print(version)' 2>"$pt_err"); then
        pt_ok=1
        pt_version=${pt_version##*$'\n'}
        with=""
        for exe in "${exps[@]}"; do
            name=$(basename "$exe")
            [ -f "$beside/${name#c[0-9][0-9]_}.py" ] || continue
            with="$with${with:+, }$(printf '%s' "$name" | cut -c1-3 | tr c C)"
            [ "$name" = c24_sharded_training ] && with="$with (on two GPUs)"
        done
        echo "PyTorch beside: torch $pt_version; ${with:-no experiment of this run has a counterpart}${with:+ measured again with PyTorch after the suite, in one process (tests/torch/beside/)}"
    else
        why=$(grep -v '^[[:space:]]*$' "$pt_err" 2>/dev/null | tail -1 | cut -c1-200)
        command -v python3 >/dev/null 2>&1 || why="python3 not found"
        echo "PyTorch beside: not available (${why:-python3 failed}); the verdicts rest on the suite alone"
    fi
    rm -f "$pt_err"
}

# beside_budget: the seconds the counterparts may take (run_many.py's
# --budget-s): MEMCLAIMS_PYTORCH_BUDGET_S (pt_budget) where it is a number;
# auto (the default): what is left of pt_target (MEMCLAIMS_PYTORCH_TARGET_S,
# default 110) seconds since run-all began, at least 1 (their first points
# are measured whatever it is).
beside_budget() {
    if [ "$pt_budget" = auto ]; then
        awk -v z="$t_begin" -v now="$(date +%s.%N)" -v t="$pt_target" \
            'BEGIN { s = t - (now - z); printf "%.1f\n", s < 1 ? 1 : s }'
    else
        printf '%s\n' "$pt_budget"
    fi
}

# A CSV field as the suite's writer writes it (csv.h): quoted where it holds
# a comma or a quote, quotes doubled.
csv_field() {
    case $1 in
        *[,\"]*) local q=${1//\"/\"\"}; printf '"%s"' "$q" ;;
        *) printf '%s' "$1" ;;
    esac
}

# beside_timeline FILE T_GO: FILE's "EPOCH<TAB>WHAT" lines (run_many.py's
# Timeline, and the go file and each runner's exit from here) as "SECONDS
# since T_GO<TAB>WHAT", in time order (ties as written): where the PyTorch
# part's time went outside its counterparts (logs/pytorch-timeline.tsv).
beside_timeline() {
    [ -f "$1" ] || return 0
    sort -s -t "$(printf '\t')" -k1,1g "$1" | awk -F'\t' -v t0="$2" '{ printf "%.1f\t%s\n", $1 - t0, $2 }'
}

# beside_append ID KEY STATE RC SECS ROWS LOG: appends the rows a
# counterpart printed (ROWS, checked by lib/beside_rows.awk) to RUN/KEY.csv:
# the CSV and the rows to a temporary file, renamed over the CSV. A failure,
# a timeout or dropped lines add one pytorch_beside row of status failed.
# A counterpart that waived (77: C24's where torch sees fewer GPUs than the
# suite used, or has no NCCL) adds one of status skipped, with its reason.
# Its log goes to logs/KEY.pytorch.log; one console line, one line of
# logs/pytorch.tsv.
beside_append() {
    local id=$1 key=$2 state=$3 rc=$4 secs=$5 rows=$6 src_log=$7
    local csv=$run/$2.csv log=$run/logs/$2.pytorch.log note kept nfail dropped row_status=failed
    [ -f "$src_log" ] && mv -f "$src_log" "$log"
    [ -f "$rows" ] || : > "$rows"
    # A last line without its newline was cut off mid-write (a crash, the timeout).
    if [ -s "$rows" ] && [ -n "$(tail -c 1 "$rows")" ]; then sed -i '$d' "$rows"; fi
    awk -v claim="$id" -v key="$key" -v dropped="$rows.dropped" -v failed="$rows.failed" \
        -f "$here/lib/csv.awk" -f "$here/lib/beside_rows.awk" "$rows" > "$rows.kept"
    kept=$(wc -l < "$rows.kept")
    nfail=$(cat "$rows.failed")
    dropped=$(cat "$rows.dropped")
    case $state in
        ran) note="" ;;
        timeout) note="timed out after $pt_timeout s" ;;
        waived) note=$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -1 | cut -c1-200)
                note="not measured (exit 77)${note:+: $note}"
                row_status=skipped ;;
        *) note=$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -1 | cut -c1-200)
           note="failed (exit $rc)${note:+: $note}" ;;
    esac
    [ "$dropped" -gt 0 ] && note="${note:+$note; }$dropped lines of its output were not PyTorch rows of $id (dropped)"
    [ -s "$log" ] || rm -f "$log"
    [ -n "$note" ] && [ -f "$log" ] && note="$note (logs/$key.pytorch.log)"
    if [ -n "$note" ]; then
        [ "$dropped" -gt 0 ] && row_status=failed
        printf '%s,%s,pytorch,,,pytorch_beside,,0,,,,,,%s,%s\n' "$id" "$key" "$row_status" \
            "$(csv_field "tests/torch/beside/$key.py $note")" >> "$rows.kept"
    fi
    if ! { cat "$csv" "$rows.kept" > "$run/.$key.csv.tmp.$$" && mv -f "$run/.$key.csv.tmp.$$" "$csv"; }; then
        rm -f "$run/.$key.csv.tmp.$$"
        note="${note:+$note; }its rows could not be added to $key.csv"
    fi
    rm -f "$rows" "$rows.kept" "$rows.dropped" "$rows.failed"
    printf '%s\t%s\t%s\t%s\t%s\n' "$key" "$state" "$rc" "$secs" "$kept" >> "$run/logs/pytorch.tsv"
    if [ -n "$note" ]; then
        printf 'PyTorch beside: %s %s %s s %s\n' "$id" "$key" "$secs" "$note"
    else
        printf 'PyTorch beside: %s %s %s s, %d rows%s\n' "$id" "$key" "$secs" "$kept" \
            "$([ "$nfail" -gt 0 ] && printf ', %d points failed or ran out of memory (see %s.csv)' "$nfail" "$key")"
    fi
}

# runner_launch TMPD WAIT_S OPTION VALUE KEY...: tests/torch/beside/run_many.py
# on the KEYs in the background (pt_child), with OPTION VALUE (--go-file F
# or --budget-s S), its output in TMPD, under a time limit for a hang:
# MEMCLAIMS_PYTORCH_TIMEOUT_S a key, and WAIT_S more (what a --go-file
# waits for).
runner_launch() {
    local tmpd=$1 wait_s=$2 opt=$3 val=$4
    shift 4
    : > "$tmpd/progress.tsv"
    # shellcheck disable=SC2086
    PYTHONDONTWRITEBYTECODE=1 timeout -k 10 $(( pt_timeout * $# + 60 + wait_s )) python3 "$beside/run_many.py" \
        --run "$run" --out "$tmpd" $quick --timeout-s "$pt_timeout" "$opt" "$val" "$@" >> "$run/logs/pytorch-runner.log" 2>&1 &
    pt_child=$!
}

# beside_start: as the experiments begin, starts the runner with --go-file
# on every claim of this run that has a counterpart (the C24 one too: it
# waives on one GPU): torch's import, and Dynamo's and Inductor's where C25
# has one (~10 s on an H100's host, CPU only: no CUDA call before the go),
# overlap the first phase, whose verdicts read memory only. beside_run_all
# writes the go file, with the budget and the claims to measure (those
# whose experiment left a CSV and was not waived), when the last ends.
beside_start() {
    local exe name keys=()
    [ -z "$pt_child" ] || return 0
    for exe in "${exps[@]}"; do
        name=$(basename "$exe")
        [ -f "$beside/${name#c[0-9][0-9]_}.py" ] && keys+=("${name#c[0-9][0-9]_}")
    done
    [ ${#keys[@]} -gt 0 ] || return 0
    pt_tmpd=$run/.pytorch.tmp.$$
    mkdir -p "$pt_tmpd" || return 0
    pt_go=$pt_tmpd/go
    runner_launch "$pt_tmpd" 1800 --go-file "$pt_go" "${keys[@]}"
}

# beside_run_all: after the last experiment, every counterpart of pt_keys
# (the claims whose experiment left a CSV and was not waived) in one
# process (tests/torch/beside/run_many.py, in its order: C25 last), under
# run-all's time budget (beside_budget); each key's rows appended as it is
# read back (beside_append). A process started early (beside_start) is
# told to go; a key that crashes the process or runs past
# MEMCLAIMS_PYTORCH_TIMEOUT_S gets its failed row; the keys after it run in
# a new process. A runner that finds no torch or no CUDA device (exit 77)
# gets one line, as beside_check's, and no rows. Sets pt_child while the
# runner runs, so that run-all's signal handler stops it; pt_seconds: the
# counterparts' wall time.
# drop_key KEY: KEY out of beside_run_all's list of keys still to measure.
drop_key() {
    local k rest=()
    for k in "${left[@]}"; do [ "$k" = "$1" ] || rest+=("$k"); done
    left=("${rest[@]}")
}

beside_run_all() {
    local tmpd=${pt_tmpd:-$run/.pytorch.tmp.$$} left=("${pt_keys[@]}") rc k st code secs line id started t0 done_s n0
    local early=$pt_child t_go
    if [ ${#left[@]} -eq 0 ]; then  # nothing to measure: a runner started early goes without a key
        [ -n "$early" ] && { printf '0\n\n' > "$pt_go.tmp" && mv -f "$pt_go.tmp" "$pt_go"; wait "$pt_child"; }
        pt_child=""
        rm -rf "$tmpd"
        return 0
    fi
    mkdir -p "$tmpd" || return 0
    t_go=$(date +%s.%N)
    printf '%s\tgo file written\n' "$t_go" >> "$tmpd/timeline.tsv"
    if [ -n "$early" ]; then  # the budget, then the claims to measure
        { beside_budget; printf '%s\n' "${left[*]}"; } > "$pt_go.tmp" && mv -f "$pt_go.tmp" "$pt_go"
    fi
    while [ ${#left[@]} -gt 0 ]; do
        t0=$(date +%s.%N)
        if [ -n "$early" ]; then
            early=""  # already running: it measures the keys the go file names
        else
            runner_launch "$tmpd" 0 --budget-s "$(beside_budget)" "${left[@]}"
        fi
        n0=${#left[@]}
        wait "$pt_child"
        rc=$?
        printf '%s\trunner exited (exit %s)\n' "$(date +%s.%N)" "$rc" >> "$tmpd/timeline.tsv"
        pt_child=""
        started=""
        done_s=0
        while IFS=$'\t' read -r k st code secs; do
            [ -n "$k" ] || continue
            if [ "$st" = start ]; then started=$k; continue; fi
            started=""
            done_s=$(awk -v a="$done_s" -v b="$secs" 'BEGIN { print a + b }')
            id=${pt_ids[$k]}
            beside_append "$id" "$k" "$st" "$code" "$secs" "$tmpd/$k.rows" "$tmpd/$k.log"
            drop_key "$k"
        done < "$tmpd/progress.tsv"
        line=$(grep -v '^[[:space:]]*$' "$run/logs/pytorch-runner.log" 2>/dev/null | tail -1 | cut -c1-200)
        if [ -n "$started" ]; then  # the process ended in it: a crash, or run-all's own timeout
            [ -s "$tmpd/$started.log" ] || printf '%s\n' "${line:-the process ended (exit $rc)}" > "$tmpd/$started.log"
            secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" -v d="$done_s" 'BEGIN { printf "%.1f", b - a - d }')
            beside_append "${pt_ids[$started]}" "$started" "$([ "$rc" = 124 ] && echo timeout || echo failed)" "$rc" \
                "$secs" "$tmpd/$started.rows" "$tmpd/$started.log"
            drop_key "$started"
        elif [ "$rc" = 77 ] && [ ${#left[@]} = "$n0" ]; then
            # no torch after all (it failed to import) or no CUDA device: as beside_check says it
            line=${line#run_many: }
            echo "PyTorch beside: not available (${line%: waived}); the verdicts rest on the suite alone"
            rm -f "$run/logs/pytorch-runner.log"
            left=()
        elif { [ "$rc" != 0 ] && [ "$rc" != 3 ] && [ "$rc" != 124 ]; } || [ ${#left[@]} = "$n0" ]; then
            # ended before any key (usage), or made no progress
            for k in "${left[@]}"; do
                printf '%s\n' "${line:-run_many.py ended (exit $rc)}" > "$tmpd/$k.log"
                beside_append "${pt_ids[$k]}" "$k" failed "$rc" "" "$tmpd/$k.rows" "$tmpd/$k.log"
            done
            left=()
        fi
    done
    # (none where nothing was measured: torch not there after all)
    [ -f "$run/logs/pytorch.tsv" ] && beside_timeline "$tmpd/timeline.tsv" "$t_go" > "$run/logs/pytorch-timeline.tsv"
    rm -rf "$tmpd"
    [ -s "$run/logs/pytorch-runner.log" ] || rm -f "$run/logs/pytorch-runner.log"
    pt_seconds=$(awk -v a="$t_go" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}
