# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # run-all's variables, read and set (below)
# gpu_share.sh: other processes on the GPU, for scripts/run-all (which
# sources it). A time measured while another process computes on the same
# GPU reads slow by however much it took; run-all looks for them with
# nvidia-smi (NVML's compute processes and utilization, the SM clock and
# the active throttle reasons):
#   - before anything is written (gpu_share_wait): another process on a GPU,
#     or a GPU busy (utilization over GPU_SHARE_IDLE_UTIL % in two samples
#     0.5 s apart) while the suite has nothing running, makes run-all wait
#     up to MEMCLAIMS_GPU_WAIT_S seconds (default 60) with one line, then
#     stop with one line and exit 75, no run folder made; with
#     MEMCLAIMS_GPU_BUSY=run it runs anyway, marking what it measures;
#   - before and, every GPU_SHARE_POLL_S, during each experiment that uses
#     the GPU (gpu_share_begin / gpu_share_end): the compute processes that
#     are not run-all's own (a pid whose parent chain reaches run-all is its
#     own; where nvidia-smi shows pids of another pid namespace, which /proc
#     here does not have, only those listed before the experiment started
#     count: the suite then has none on the GPU);
#   - an experiment that had one beside it gets a row in its CSV (variant
#     run, metric gpu_shared, the processes in the note), which REPORT.md
#     shows under the claim and in the verdict table, and its console line
#     says so. Each experiment's clocks and throttle reasons, and what was
#     seen, go to logs/gpu_share.tsv.
# Without nvidia-smi nothing is checked (one line says so where a GPU is
# used). Uses run-all's variables: run, key, id, mode; NVIDIA_SMI names
# the program (tests put a stand-in there).

GPU_SHARE_POLL_S=1
GPU_SHARE_IDLE_UTIL=10
nvsmi=${NVIDIA_SMI:-nvidia-smi}
gs_watch=""

# gpu_share_apps: "pid<TAB>name<TAB>MiB" per compute process on any GPU.
gpu_share_apps() {
    "$nvsmi" --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits 2>/dev/null |
        awk -F', *' 'NF >= 3 && $1 ~ /^[0-9]+$/ { n = split($2, p, "/"); printf "%s\t%s\t%s\n", $1, p[n], $3 }'
}

# gpu_share_ours PID: 0 when PID is run-all or descends from it (/proc).
gpu_share_ours() {
    local p=$1 n=0
    while [ -n "$p" ] && [ "$p" -gt 1 ] && [ $n -lt 64 ]; do
        [ "$p" = "$$" ] && return 0
        p=$(awk '{ sub(/^.*\) /, ""); print $2 }' "/proc/$p/stat" 2>/dev/null)
        n=$((n + 1))
    done
    return 1
}

# gpu_share_others [BEFORE]: the compute processes that are not run-all's,
# one "pid name (MiB MiB)" a line. A pid /proc does not have (another pid
# namespace) counts only where BEFORE (a file of the list taken before
# the experiment) has it, or where there is no BEFORE (the suite idle).
gpu_share_others() {
    local before=${1:-} pid name mib
    gpu_share_apps | while IFS=$'\t' read -r pid name mib; do
        if [ -e "/proc/$pid" ]; then
            gpu_share_ours "$pid" && continue
        elif [ -n "$before" ] && ! grep -q "^$pid " "$before" 2>/dev/null; then
            continue
        fi
        printf '%s %s (%s MiB)\n' "$pid" "$name" "$mib"
    done
}

# gpu_share_busy_idle: "N%" when every GPU sample shows utilization over
# GPU_SHARE_IDLE_UTIL in two samples 0.5 s apart (the suite idle), else "".
gpu_share_busy_idle() {
    local a b
    a=$("$nvsmi" --query-gpu=utilization.gpu --format=csv,noheader,nounits 2>/dev/null | sort -n | tail -1)
    sleep 0.5
    b=$("$nvsmi" --query-gpu=utilization.gpu --format=csv,noheader,nounits 2>/dev/null | sort -n | tail -1)
    [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]] || return 0
    [ "$a" -gt "$GPU_SHARE_IDLE_UTIL" ] && [ "$b" -gt "$GPU_SHARE_IDLE_UTIL" ] && printf '%s%%' "$b"
}

# gpu_share_state: one line, the SM clock (MHz) and active throttle reasons of each GPU.
gpu_share_state() {
    "$nvsmi" --query-gpu=index,clocks.sm,clocks_throttle_reasons.active --format=csv,noheader,nounits 2>/dev/null |
        awk -F', *' '{ printf "%sgpu%s %s MHz throttle %s", (NR > 1 ? "; " : ""), $1, $2, $3 }'
}

# gpu_share_wait: before the run folder is made. Returns 0 to go on; exits
# 75 after one line where the GPU stays in use (MEMCLAIMS_GPU_BUSY=run:
# goes on, and gs_start_busy says why for the experiments' rows).
gpu_share_wait() {
    local wait_s=${MEMCLAIMS_GPU_WAIT_S:-60} others util t0 said=""
    gs_start_busy=""
    command -v "$nvsmi" >/dev/null 2>&1 && "$nvsmi" -L >/dev/null 2>&1 || return 0
    if ! [[ $wait_s =~ ^[0-9]+$ ]]; then
        echo "run-all: MEMCLAIMS_GPU_WAIT_S must be a whole number of seconds, not '$wait_s'" >&2
        exit 2
    fi
    t0=$SECONDS
    while :; do
        others=$(gpu_share_others | paste -sd ';' | sed 's/;/; /g')
        util=""
        [ -z "$others" ] && util=$(gpu_share_busy_idle)
        [ -z "$others" ] && [ -z "$util" ] && return 0
        local what=${others:+"in use by another process: $others"}
        what=${what:-"busy (utilization $util while the suite runs nothing; no process of it is listed)"}
        if [ $((SECONDS - t0)) -ge "$wait_s" ]; then
            if [ "${MEMCLAIMS_GPU_BUSY:-}" = run ]; then
                echo "run-all: the GPU is $what: running anyway (MEMCLAIMS_GPU_BUSY=run); the experiments' rows say so"
                gs_start_busy=$what
                return 0
            fi
            echo "run-all: stopped: the GPU is $what after ${wait_s} s; nothing was run (MEMCLAIMS_GPU_WAIT_S waits longer, MEMCLAIMS_GPU_BUSY=run runs anyway)" >&2
            exit 75
        fi
        [ -z "$said" ] && echo "run-all: the GPU is $what: waiting up to ${wait_s} s for it (MEMCLAIMS_GPU_WAIT_S)"
        said=1
        sleep 2
    done
}

# gpu_share_begin: before an experiment that uses the GPU: the others now,
# then a watcher that adds those it sees every GPU_SHARE_POLL_S.
gpu_share_begin() {
    gs_watch=""
    [ "$mode" = gpu ] && command -v "$nvsmi" >/dev/null 2>&1 || return 0
    gs_dir=$run/logs/.gpu_share.tmp.$$
    mkdir -p "$gs_dir"
    gpu_share_others > "$gs_dir/before"
    gs_state=$(gpu_share_state)
    : > "$gs_dir/during"
    (
        while :; do
            gpu_share_others "$gs_dir/before" >> "$gs_dir/during"
            sleep "$GPU_SHARE_POLL_S"
        done
    ) &
    gs_watch=$!
}

# gpu_share_end: after it: logs/gpu_share.tsv, and where another process
# was seen (or the run started beside one), the gpu_shared row in its CSV;
# sets gs_said to " [GPU shared: ...]" for the console line, else "".
gpu_share_end() {
    gs_said=""
    [ -n "$gs_watch" ] || return 0
    kill "$gs_watch" 2>/dev/null
    wait "$gs_watch" 2>/dev/null
    gs_watch=""
    local before during state csv note
    before=$(sort -u "$gs_dir/before" | paste -sd ';' | sed 's/;/; /g')
    during=$(sort -u "$gs_dir/during" | awk '{ k = $1 " " $2 } !seen[k]++' | paste -sd ';' | sed 's/;/; /g')
    state=$(gpu_share_state)
    rm -rf "$gs_dir"
    printf '%s\t%s\t%s\t%s\t%s\n' "$key" "${before:--}" "${during:--}" "${gs_state:--}" "${state:--}" >> "$run/logs/gpu_share.tsv"
    [ -z "$before$during$gs_start_busy" ] && return 0
    note="another process used the GPU while this experiment ran"
    [ -n "$before" ] && note="$note; before it started: $before"
    [ -n "$during" ] && note="$note; during it: $during"
    [ -n "$gs_start_busy" ] && [ -z "$before$during" ] && note="$note; at run-all's start the GPU was $gs_start_busy"
    note="$note; its time figures may read slower than this GPU alone gives (clocks at start: ${gs_state:-unknown})"
    csv=$run/$key.csv
    if [ -f "$csv" ]; then
        note=${note//\"/\'}
        { cat "$csv"; printf '%s,%s,run,,,gpu_shared,,0,,,,,,ok,"%s"\n' "$id" "$key" "$note"; } \
            > "$run/.$key.csv.tmp.$$" && mv -f "$run/.$key.csv.tmp.$$" "$csv"
        rm -f "$run/.$key.csv.tmp.$$"
    fi
    gs_said=" [GPU shared: $(printf '%s' "${during:-${before:-$gs_start_busy}}" | cut -c1-80)]"
}
