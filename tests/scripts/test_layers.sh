#!/usr/bin/env bash
# The include directions of README "Layout": each folder includes only the
# folders below it (and itself), so no layer reaches up and no model builds
# on another model. Every "#include "..."" of the project's own headers in
# common/, experiments/ and tools/ is resolved as the compiler does (the
# includer's folder, then -Icommon, then -Iexperiments) and its folder is
# checked against the table below.
#   tests/scripts/test_layers.sh [BUILD_DIR]   (BUILD_DIR unused)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
cd "$root" || exit 2

# FOLDER: the folders its files may include (besides its own), or one
# header of a folder (a path ending in .h).
allowed() {
    case $1 in
        common) echo "" ;;
        common/results|common/alloc) echo "common" ;;
        common/trace) echo "common common/alloc" ;;
        common/workload/core) echo "common common/alloc common/trace" ;;
        common/workload/mlp|common/workload/sharded|common/workload/transformer/kernels)
            echo "common common/alloc common/trace common/workload/core" ;;
        # the float64 reference draws the kernels' dropout decisions (tfm_rng.h), nothing else of them
        common/workload/transformer/reference)
            echo "common common/alloc common/trace common/workload/core common/workload/transformer/kernels/tfm_rng.h" ;;
        common/workload/transformer)
            echo "common common/alloc common/trace common/workload/core common/workload/transformer/kernels common/workload/transformer/reference" ;;
        common/workload) echo "common common/alloc common/trace common/workload/core common/workload/mlp common/workload/transformer common/workload/sharded" ;;
        experiments/support) echo "ANY_COMMON" ;;
        experiments) echo "ANY_COMMON experiments/support" ;;
        tools|tools/*) echo "ANY_COMMON ANY_TOOLS" ;;   # a tool and its own parts (tools/NAME/)
        *) echo "UNKNOWN" ;;
    esac
}

# violations: the files listed on stdin (paths from the current folder)
# checked; prints "FILE->FOLDER" for each include against the table, and
# sets n to the includes of project headers seen.
violations() {
    local f d ok inc t tf td bad=""
    n=0
    while IFS= read -r f; do
        d=$(dirname "$f")
        ok=$(allowed "$d")
        if [ "$ok" = UNKNOWN ]; then bad="$bad $f(folder not in the table)"; continue; fi
        while IFS= read -r inc; do
            if [ -f "$d/$inc" ]; then t=$d/$inc
            elif [ -f "common/$inc" ]; then t=common/$inc
            elif [ -f "experiments/$inc" ]; then t=experiments/$inc
            else continue; fi          # a system or CUDA header
            n=$((n + 1))
            tf=$(realpath --relative-to=. "$t")
            td=$(dirname "$tf")
            [ "$td" = "$d" ] && continue
            case " $ok " in *" $td "*|*" $tf "*) continue ;; esac
            case " $ok " in *" ANY_COMMON "*) case $td in common|common/*) continue ;; esac ;; esac
            case " $ok " in *" ANY_TOOLS "*) case $td in tools|tools/*) continue ;; esac ;; esac
            bad="$bad $f->$td"
        done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
    done
    echo "${bad# }"
}

# The checker first finds what it must: a made-up tree where a model includes
# another model, core includes a model, and the harness includes the allocator.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/common/alloc" "$tmp/common/workload/core" "$tmp/common/workload/mlp" "$tmp/common/workload/transformer"
: > "$tmp/common/alloc/alloc_model.h"; : > "$tmp/common/workload/transformer/tfm.h"; : > "$tmp/common/workload/core/wl_ctx.h"
printf '#include "workload/transformer/tfm.h"\n#include "workload/core/wl_ctx.h"\n' > "$tmp/common/workload/mlp/mlp.c"
printf '#include "workload/transformer/tfm.h"\n' > "$tmp/common/workload/core/wl_ctx.c"
printf '#include "alloc/alloc_model.h"\n#include <stdio.h>\n' > "$tmp/common/check.c"
got=$(cd "$tmp" && printf '%s\n' common/workload/mlp/mlp.c common/workload/core/wl_ctx.c common/check.c | violations)
check_eq "the checker finds a model on another model, core on a model, the harness on the allocator (and no allowed one)" \
    "$got" "common/workload/mlp/mlp.c->common/workload/transformer common/workload/core/wl_ctx.c->common/workload/transformer common/check.c->common/alloc"
# ... and inside the Transformer: its kernels/ and reference/ reach nothing of
# the model (tfm_internal.h) and the reference nothing of the kernels but
# tfm_rng.h, while the model includes both.
m=$tmp/common/workload/transformer
mkdir -p "$m/kernels" "$m/reference"
: > "$m/tfm_internal.h"; : > "$m/kernels/tfm_kernels.h"; : > "$m/kernels/tfm_rng.h"; : > "$m/reference/tfm_host_ref.h"
printf '#include "workload/transformer/tfm_internal.h"\n#include "tfm_rng.h"\n' > "$m/kernels/tfm_ln.cu"
printf '#include "workload/transformer/kernels/tfm_rng.h"\n#include "workload/transformer/kernels/tfm_kernels.h"\n' > "$m/reference/tfm_ref.c"
printf '#include "workload/transformer/kernels/tfm_kernels.h"\n#include "workload/transformer/reference/tfm_host_ref.h"\n' > "$m/tfm_seq.c"
got=$(cd "$tmp" && printf '%s\n' common/workload/transformer/kernels/tfm_ln.cu common/workload/transformer/reference/tfm_ref.c common/workload/transformer/tfm_seq.c | violations)
check_eq "... a kernel on the model, the reference on the kernels' API (and not on tfm_rng.h; the model on both)" \
    "$got" "common/workload/transformer/kernels/tfm_ln.cu->common/workload/transformer common/workload/transformer/reference/tfm_ref.c->common/workload/transformer/kernels"

bad=$(git ls-files 'common/*' 'experiments/*' 'tools/*' | grep -E '\.(c|cu|h|cuh)$' | violations)
n=$(git ls-files 'common/*' 'experiments/*' 'tools/*' | grep -E '\.(c|cu|h|cuh)$' | { violations > /dev/null; echo "$n"; })
check "includes of the project's own headers found ($n)" test "$n" -gt 100
check_eq "every include goes down the layers (README Layout), none from one model to another" "${bad# }" ""

# The library never includes the experiment harness's descriptor.
lib_exp=$(git ls-files 'common/*' | grep -E '\.(c|cu|h|cuh)$' | grep -v -e '^common/experiment\.[ch]$' -e '^common/options\.c$' |
          xargs grep -l '#include "experiment.h"' 2>/dev/null | tr '\n' ' ')
check_eq "no library file includes experiment.h (only the harness's experiment.c and options.c)" "${lib_exp% }" ""
summary
