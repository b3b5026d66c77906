# report.awk (with csv.awk): REPORT.md from a run folder's files, given in
# this order: meta.csv, experiments.tsv, runs.tsv, then every <key>.csv.
# Variables: pngs = space-separated keys that have a chart.
BEGIN { FS = "\n" }
FILENAME ~ /meta\.csv$/ { if (FNR > 1) { csv_split($0, f); meta[f[1]] = f[2] }; next }
FILENAME ~ /experiments\.tsv$/ {
    split($0, f, "\t")
    nexp++; key[nexp] = f[2]; claim[f[2]] = f[1]; title[f[2]] = f[3]
    seed[f[2]] = f[4]; method[f[2]] = f[5]; rule[f[2]] = f[6]
    next
}
FILENAME ~ /runs\.tsv$/ {
    split($0, f, "\t")
    state[f[1]] = f[2]; rc[f[1]] = f[3]; secs[f[1]] = f[4]; mode[f[1]] = f[5]
    next
}
FNR == 1 { next }
{
    csv_split($0, f)
    k = f[2]
    if (f[6] == "verdict") { verdict[k] = f[14]; shows[k] = f[15] }
    else if (f[6] == "finding") { nf[k]++; finding[k, nf[k]] = f[15] }
    else if (f[6] == "verification" && f[14] == "failed") { nv[k]++; vfail[k, nv[k]] = f[3] ": " f[15] }
}
function cell(s) { gsub(/\|/, "\\|", s); return s }
function model_only(k) { return (k in verdict) && verdict[k] != "waived" && mode[k] == "model-only" }
# What the report says when an experiment has no verdict row.
function outcome(k) {
    if (model_only(k)) return verdict[k] " (computed by the allocator model, no GPU)"
    if (k in verdict) return verdict[k]
    if (!(k in state)) return "not run"
    if (state[k] == "interrupted") return "interrupted"
    return state[k] " (exit " rc[k] ")"
}
END {
    gpu = ("gpu_name" in meta) ? meta["gpu_name"] : "no GPU"
    printf "# memclaims report: %s\n\n", gpu
    # Without a GPU, first what a GPU run would add.
    if (meta["gpu_status"] != "ok" && nexp > 0) {
        nm = 0; nw = 0; mlist = ""; wlist = ""
        for (i = 1; i <= nexp; i++) {
            k = key[i]
            if (model_only(k)) { nm++; mlist = mlist (nm > 1 ? ", " : "") claim[k] }
            else if (!(k in verdict) || verdict[k] == "waived") { nw++; wlist = wlist (nw > 1 ? ", " : "") claim[k] }
        }
        printf "**What a GPU run would add.**"
        if (nw > 0) printf " %d claim%s need%s a GPU and %s waived or not run here: %s; a GPU run measures %s and states %s verdict%s.", nw, (nw > 1 ? "s" : ""), (nw > 1 ? "" : "s"), (nw > 1 ? "were" : "was"), wlist, (nw > 1 ? "them" : "it"), (nw > 1 ? "their" : "its"), (nw > 1 ? "s" : "")
        if (nm > 0) printf " %d verdict%s (%s) %s computed by the allocator model with no GPU (`--model-only`); on a GPU the same experiments also take real cudaMalloc segments and add the driver's memory figures and the timings.", nm, (nm > 1 ? "s" : ""), mlist, (nm > 1 ? "were" : "was")
        printf "\n\n"
    }
    if ("gpu_name" in meta)
        printf "%s, %.1f GiB, compute capability %s, driver %s, CUDA runtime %s. ", gpu,
            meta["gpu_memory_bytes"] / 1073741824, meta["compute_capability"],
            meta["driver_version"], meta["cuda_runtime_version"]
    else
        printf "No usable GPU: %s. ", meta["gpu_status"]
    printf "Run %s on host %s, commit %s.\n\n", meta["utc_time"], meta["host"], substr(meta["git_sha"], 1, 12)

    waived = 0; missing = 0
    for (i = 1; i <= nexp; i++) {
        k = key[i]
        if ((k in verdict) && verdict[k] == "waived") {
            waived++; why_waived = shows[k]
            wlist_why = wlist_why (waived > 1 ? "; " : "") claim[k] ": " shows[k]
        }
        if (!(k in verdict)) missing++
    }
    if (nexp > 0 && waived == nexp)
        printf "**Every experiment was waived** (%s): nothing was measured. Run on a machine with a CUDA GPU.\n\n", why_waived
    else if (waived > 0)
        printf "**%d of %d experiments were waived** (%s).\n\n", waived, nexp, wlist_why
    if (missing > 0)
        printf "**%d of %d experiments have no verdict** (not run, interrupted or failed): see the table and logs/.\n\n", missing, nexp

    printf "| Claim | What the seeds say | What this %s shows | Verdict |\n", (meta["gpu_status"] == "ok" ? "GPU" : "run")
    print "|---|---|---|---|"
    for (i = 1; i <= nexp; i++) {
        k = key[i]
        if (model_only(k))
            printf "| %s | %s | %s | **%s** (computed by the allocator model, no GPU) |\n", claim[k], cell(seed[k]), cell(shows[k]), verdict[k]
        else
            printf "| %s | %s | %s | **%s** |\n", claim[k], cell(seed[k]), cell((k in shows) ? shows[k] : "-"), outcome(k)
    }
    print ""
    print "Verdicts are computed by each experiment from its own figures, by the rule given below; every figure is in `<key>.csv` (median, min, max, mean, stdev, n)."
    print ""
    print "## Why, claim by claim"
    for (i = 1; i <= nexp; i++) {
        k = key[i]
        printf "\n### %s %s: %s\n\n", claim[k], title[k], outcome(k)
        printf "Measured: %s Rule: %s\n\n", method[k], rule[k]
        for (j = 1; j <= nf[k]; j++) printf "- %s\n", finding[k, j]
        for (j = 1; j <= nv[k]; j++) printf "- **verification failed**: %s\n", vfail[k, j]
        if (index(" " pngs " ", " " k " ")) printf "\n![%s](%s.png)\n", k, k
        if (k in secs) printf "\n`%s.csv`, log `logs/%s.log`, %s s.\n", k, k, secs[k]
    }
}
