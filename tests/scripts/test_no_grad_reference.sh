#!/usr/bin/env bash
# tests/torch/no_grad_reference.py (C27's PyTorch figures) without torch or a
# GPU: its configurations (the MLP in two modes, the Transformer and the
# encoder in four), waivers (77) without torch or CUDA, bad input refused
# with exit 2, and, over the stand-in torch module (tests/torch/stub/torch.py,
# which counts the bytes of its tensors alive and takes a fast path on its
# encoder in eval() without autograd), its whole control flow: the JSON it
# writes, one record per configuration in the listed order whatever --jobs
# runs at once, the graph only with autograd, inference tensors under
# inference_mode, the fast path's calls counted, --only.
#   tests/scripts/test_no_grad_reference.sh [BUILD_DIR]   (BUILD_DIR unused)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 2
export PYTHONDONTWRITEBYTECODE=1
ref=tests/torch/no_grad_reference.py
stub=$root/tests/torch/stub

# ------------------------------------------------------------ configurations
python3 "$ref" --list > "$tmp/list" 2>"$tmp/err"; rc=$?
check_eq "--list without torch: exit 0" "$rc" 0
check_eq "--list: 24 configurations" "$(grep -c . "$tmp/list")" 24
check_eq "... each named once" "$(cut -f1 "$tmp/list" | sort -u | wc -l)" 24
check_eq "... the MLP with grad and no_grad at 4 batches" \
    "$(awk -F'\t' '$2 ~ /^mlp / { print $NF }' "$tmp/list" | awk '{ print $NF }' | sort | uniq -c | tr -s ' ' | tr '\n' ';')" \
    " 4 grad; 4 no_grad;"
for wl in transformer encoder; do
    check_eq "... the $wl in 4 modes at 2 batches" \
        "$(awk -F'\t' -v w="$wl" 'index($2, w " ") == 1 { n = split($2, f, " "); print f[n] }' "$tmp/list" | sort | uniq -c | tr -s ' ' | tr '\n' ';')" \
        " 2 eval_no_grad; 2 grad; 2 inference_mode; 2 no_grad;"
done
check "... the Transformer is seed 000's (d_model 256, seq 64, not batch_first), built on the host as the seed builds it" \
    grep -q $'^tfm_b100_grad\ttransformer d_model=256 heads=8 enc_layers=6 dec_layers=6 ff=2048 dropout=0.1 seq=64 batch_first=False build=host batch=100 grad$' "$tmp/list"
check "... the encoder, which no seed builds, made on the device" \
    grep -q $'^enc_b16_grad\tencoder .* build=device batch=16 grad$' "$tmp/list"

# ------------------------------------------------------------ waivers, bad input
mkdir -p "$tmp/notorch"
echo 'raise ImportError("no torch here")' > "$tmp/notorch/torch.py"
PYTHONPATH=$tmp/notorch python3 "$ref" "$tmp/w1" --only mlp_b256_grad > /dev/null 2>&1; rc=$?
check_eq "no torch: waived (77)" "$rc" 77
STUB_NO_CUDA=1 PYTHONPATH=$stub python3 "$ref" "$tmp/w2" --only mlp_b256_grad,enc_b16_grad > /dev/null 2>&1; rc=$?
check_eq "no CUDA device: waived (77)" "$rc" 77
check_eq "... and no JSON written" "$(ls "$tmp/w2" 2>/dev/null | grep -c json)" 0

refused() { # WHAT ARGS...: exit 2, one usage line, nothing written
    local what=$1 rc
    shift
    PYTHONPATH=$stub python3 "$ref" "$@" > /dev/null 2> "$tmp/err"; rc=$?
    if [ "$rc" -eq 2 ] && [ ! -e "$tmp/bad" ]; then pass "refused: $what ($(tail -1 "$tmp/err"))"
    else failure "refused: $what" "exit $rc; $(tail -1 "$tmp/err")"; fi
}
refused "no OUTDIR"
refused "an unknown configuration" "$tmp/bad" --only mlp_b256_grad,tfm_b7_grad
refused "--jobs 0" "$tmp/bad" --jobs 0
refused "--device -1" "$tmp/bad" --device -1

# ------------------------------------------------------------ a whole run, over the stand-in
PYTHONPATH=$stub python3 "$ref" "$tmp/out" --jobs 3 > "$tmp/stdout" 2> "$tmp/stderr"; rc=$?
check_eq "a whole run over the stand-in torch: exit 0" "$rc" 0
check_eq "... nothing on stdout" "$(cat "$tmp/stdout")" ""
check_eq "... one line per configuration on stderr, and the summary" "$(grep -c '^no_grad_reference: ' "$tmp/stderr")" 25
python3 - "$tmp/out/no_grad_reference.json" "$tmp/list" > "$tmp/checks" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
listed = [line.split("\t")[0] for line in open(sys.argv[2])]
c = d["configs"]
def ok(what, cond):
    print("%s\t%s" % ("ok" if cond else "bad", what))
ok("records in the listed order", [x["name"] for x in c] == listed)
need = {"name", "workload", "batch", "mode", "allocated_before", "peak_allocated", "allocated_out",
        "allocated_end", "peak_reserved", "output_bytes", "has_graph", "fast_path_layers",
        "fast_path_mha", "forward_time_s", "status"}
ok("every record has every field", all(need <= set(x) for x in c))
ok("the MLP's records keep the first version's shape fields",
   all({"layers", "in", "width", "out"} <= set(x) for x in c if x["workload"] == "mlp"))
ok("the Transformer's records give its shape",
   all({"d_model", "heads", "enc_layers", "dec_layers", "ff", "dropout", "seq", "batch_first"} <= set(x)
       for x in c if x["workload"] != "mlp"))
ok("a graph with autograd only", all(x["has_graph"] == (x["mode"] == "grad") for x in c))
ok("the fast path counted: the encoder's 4 layers in eval(), nothing elsewhere",
   all(x["fast_path_layers"] == (4 if x["workload"] == "encoder" and x["mode"] in ("eval_no_grad", "inference_mode")
                                 else 0) and x["fast_path_mha"] == 0 for x in c))
ok("every status ok", all(x["status"] == "ok" for x in c))
ok("the peak at least what the model returned with", all(x["peak_allocated"] >= x["allocated_out"] for x in c))
ok("the meta says how many ran at once", d["meta"].get("jobs") == 3 and "torch_version" in d["meta"])
PY
while IFS=$'\t' read -r state what; do
    if [ "$state" = ok ]; then pass "... $what"; else failure "... $what"; fi
done < "$tmp/checks"
check_eq "... the JSON's temporary is gone" "$(ls "$tmp/out")" "no_grad_reference.json"

PYTHONPATH=$stub python3 "$ref" "$tmp/only" --only enc_b64_inference_mode,mlp_b256_grad > /dev/null 2>&1; rc=$?
check_eq "--only: exit 0" "$rc" 0
check_eq "... those two, in the order given" \
    "$(python3 -c 'import json,sys; print(" ".join(x["name"] for x in json.load(open(sys.argv[1]))["configs"]))' "$tmp/only/no_grad_reference.json")" \
    "enc_b64_inference_mode mlp_b256_grad"

summary
