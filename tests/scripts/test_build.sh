#!/usr/bin/env bash
# The build's choice of CUDA architecture (scripts/cuda-arch and the
# Makefile), with a fake nvidia-smi and a fake nvcc on PATH: no GPU and no
# real compile needed.
# Also: no program in BUILD_DIR is linked with cuBLAS (common/cublas_lazy.c
# loads it at the first call, so --help, bad input and --model-only never
# pay for loading it).
#   tests/scripts/test_build.sh [BUILD_DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/bin
mkdir -p "$bin"

# Fake nvidia-smi: prints $FAKE_CAPS (one compute capability a line) or
# fails like a machine without a driver when FAKE_CAPS is "fail".
cat > "$bin/nvidia-smi" <<'FAKE'
#!/usr/bin/env bash
[ "$FAKE_CAPS" = fail ] && { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" ; exit 9; }
printf '%b' "$FAKE_CAPS"
FAKE
# Fake nvcc: CUDA 13's list of real architectures; a compile writes its
# arguments into the -o file.
cat > "$bin/nvcc" <<'FAKE'
#!/usr/bin/env bash
case " $* " in *" --list-gpu-code "*) printf 'sm_%s\n' 75 80 86 87 88 89 90 100 110 103 120 121; exit 0;; esac
args="$*"
while [ $# -gt 0 ]; do [ "$1" = -o ] && echo "$args" > "$2"; shift; done
FAKE
chmod +x "$bin/nvidia-smi" "$bin/nvcc"
export PATH="$bin:$PATH" NVCC="$bin/nvcc"
arch() { FAKE_CAPS=$1 "$root/scripts/cuda-arch" ${2:+"$2"} 2>"$tmp/err"; }
FAT="-gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 -gencode arch=compute_87,code=sm_87 -gencode arch=compute_88,code=sm_88 -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"

# ---------------------------------------------------------- scripts/cuda-arch
check_eq "an explicit architecture wins over the GPU" "$(arch '8.6\n' sm_75)" "-arch=sm_75"
check_eq "one GPU: its own architecture (T4, 7.5)" "$(arch '7.5\n')" "-arch=sm_75"
check_eq "one GPU: its own architecture (H100, 9.0)" "$(arch '9.0\n')" "-arch=sm_90"
check_eq "two GPUs of one kind: one architecture" "$(arch '8.9\n8.9\n')" "-arch=sm_89"
check_eq "mixed GPUs: machine code for each, PTX of the newest" "$(arch '8.6\n7.5\n')" \
    "-gencode arch=compute_75,code=sm_75 -gencode arch=compute_86,code=sm_86 -gencode arch=compute_86,code=compute_86"
check_eq "a GPU newer than nvcc knows (sm_130): PTX of nvcc's newest" "$(arch '13.0\n')" \
    "-gencode arch=compute_121,code=compute_121"
check_eq "no GPU (nvidia-smi fails): sm_90 only, as make test (a fresh clone builds in minutes)" "$(arch fail)" "-arch=sm_90"
check_eq "nvidia-smi prints nothing: sm_90" "$(arch '')" "-arch=sm_90"
check_eq "a GPU older than CUDA 13 supports (sm_70): sm_90" "$(arch '7.0\n')" "-arch=sm_90"
check "... and it says why on stderr" grep -q "sm_70 is older than this nvcc supports" "$tmp/err"
check_eq "fat asked for: machine code up to sm_90 with compute_90 PTX" "$(arch '8.6\n' fat)" "$FAT"
check_that() { if [ "$2" -eq 0 ]; then pass "$1"; else failure "$1"; fi; }
if arch fail fat | tr ' ' '\n' | grep -q 'sm_1[0-9][0-9]'; then failure "fat build has no machine code past sm_90"
else pass "fat build has no machine code past sm_90"; fi
FAKE_CAPS=fail NVCC=/nonexistent "$root/scripts/cuda-arch" fat > "$tmp/out" 2>&1
check "an nvcc that cannot list falls back to a known list" grep -q "code=sm_75 .*compute_90,code=compute_90" "$tmp/out"

# ---------------------------------------------------------- the Makefile
cd "$root" || exit 2
mk() { FAKE_CAPS=$1; shift; FAKE_CAPS=$FAKE_CAPS make --no-print-directory NVCC="$bin/nvcc" V=1 "$@" 2>&1; }
b=$tmp/b
out=$(mk '8.6\n' -n all BUILD="$b")
check "make all builds for the GPU it finds (sm_86)" grep -q "nvcc -arch=sm_86 " <<<"$out"
check_eq "... and records the flags in BUILD/.cuda-arch" "$(cat "$b/.cuda-arch")" "-arch=sm_86"
out=$(mk fail -n all BUILD="$tmp/fat")
check "make all without a GPU: sm_90 only" grep -qF "nvcc -arch=sm_90 " <<<"$out"
out=$(mk fail -n all BUILD="$tmp/fat2" CUDA_ARCH=fat)
check "CUDA_ARCH=fat: every architecture" grep -qF "nvcc $FAT " <<<"$out"
# Goals other than all, run-all and test-gpu take the folder's flags: after
# make all for an sm_86 GPU, make compare or whatif recompile nothing.
mk '8.6\n' -n all BUILD="$tmp/k" > /dev/null
out=$(mk '8.6\n' -n test-build BUILD="$tmp/k")
check "after make all (sm_86), another goal builds with the folder's flags" grep -q "nvcc -arch=sm_86 " <<<"$out"
check_eq "... and leaves its stamp" "$(cat "$tmp/k/.cuda-arch")" "-arch=sm_86"
out=$(mk '8.6\n' -n run-all BUILD="$tmp/r" DEPS_CHECK=:)
check_eq "make run-all chooses the same way" "$(cat "$tmp/r/.cuda-arch")" "-arch=sm_86"
out=$(mk '8.6\n' -n test-build BUILD="$tmp/t")
check "make test-build stays on sm_90 (fast; runs no kernel)" grep -q "nvcc -arch=sm_90 " <<<"$out"
out=$(mk '8.6\n' -n all BUILD="$tmp/c" CUDA_ARCH=sm_80)
check "CUDA_ARCH on the command line overrides the GPU" grep -q "nvcc -arch=sm_80 " <<<"$out"
out=$(CUDA_ARCH=sm_87 mk '8.6\n' -n all BUILD="$tmp/e")
check "CUDA_ARCH in the environment overrides too" grep -q "nvcc -arch=sm_87 " <<<"$out"

# cuDNN: found where CUDNN_HOME has it, else built without (the suite's own
# attention kernels, tfm_attention_cudnn.cu's fallback).
fake=$tmp/cudnn
mkdir -p "$fake/include" "$fake/lib"
: >"$fake/include/cudnn.h"
: >"$fake/lib/libcudnn.so.9"
out=$(mk '8.6\n' -n all BUILD="$tmp/d1" CUDNN_HOME="$fake")
check "CUDNN_HOME with cuDNN 9: compiled in" grep -q "nvcc .*-DMC_HAVE_CUDNN" <<<"$out"
check "... and linked from its lib/" grep -qF -- "-L$fake/lib -Wl,-rpath,$fake/lib -l:libcudnn.so.9" <<<"$out"
out=$(mk '8.6\n' -n all BUILD="$tmp/d2" CUDNN_HOME=)
check_that "CUDNN_HOME empty: built without cuDNN" $(grep -q -e "-DMC_HAVE_CUDNN" -e "libcudnn" <<<"$out"; echo $((!$?)))
out=$(mk '8.6\n' -n all BUILD="$tmp/d3" CUDNN_HOME="$tmp/none")
check_that "CUDNN_HOME without cuDNN in it: built without" $(grep -q -e "-DMC_HAVE_CUDNN" -e "libcudnn" <<<"$out"; echo $((!$?)))
# unset, PyTorch's pip package is looked for (python3's nvidia namespace), as for NCCL
pip=$tmp/pip
mkdir -p "$pip/nvidia/cudnn/include" "$pip/nvidia/cudnn/lib"
: >"$pip/nvidia/cudnn/include/cudnn.h"
: >"$pip/nvidia/cudnn/lib/libcudnn.so.9"
out=$(env -u CUDNN_HOME PYTHONPATH="$pip" FAKE_CAPS='8.6\n' make --no-print-directory NVCC="$bin/nvcc" V=1 -n all BUILD="$tmp/d4" 2>&1)
check "CUDNN_HOME unset: cuDNN from PyTorch's pip package" grep -qF -- "-L$pip/nvidia/cudnn/lib -Wl,-rpath,$pip/nvidia/cudnn/lib -l:libcudnn.so.9" <<<"$out"
# Built without cuDNN, its file is the fallback's stubs: compiled for real (CI has cuDNN, so only this builds them)
out=$(make --no-print-directory V=1 BUILD="$tmp/d5" CUDNN_HOME= CUDA_ARCH=sm_90 \
    "$tmp/d5/obj/common/workload/transformer/kernels/tfm_attention_cudnn.cu.o" 2>&1); rc=$?
check_eq "without cuDNN, tfm_attention_cudnn.cu compiles" "$rc" 0
check_that "... without a warning" $(grep -qi warning <<<"$out"; echo $((!$?)))

# A change of architecture rebuilds CUDA objects; the same one does not.
o=$b/obj/common/gate.cu.o
mk '' "$o" BUILD="$b" CUDA_ARCH=sm_90 >/dev/null
check "the fake compile wrote the object" grep -q "arch=sm_90" "$o"
mk '' -q "$o" BUILD="$b" CUDA_ARCH=sm_90 >/dev/null
check_that "same architecture: the object is up to date" $?
stamp_before=$(stat -c %Y.%y "$b/.cuda-arch")
sleep 0.01
mk '' -q "$o" BUILD="$b" CUDA_ARCH=sm_90 >/dev/null
check_eq "same architecture: the stamp is not rewritten" "$(stat -c %Y.%y "$b/.cuda-arch")" "$stamp_before"
mk '' -q "$o" BUILD="$b" CUDA_ARCH=sm_80 >/dev/null
check_that "another architecture: the object must be rebuilt" $((!$?))
mk '' "$o" BUILD="$b" CUDA_ARCH=sm_80 >/dev/null
check "... and is rebuilt for it" grep -q "arch=sm_80" "$o"

# One build of the CUDA objects: after the plain build made them, make
# test's (SAN=1, BUILD/san) compiles none again and links the plain ones.
u=$tmp/u
cu_objs=$(git ls-files '*.cu' | sed "s|^|$u/obj/|; s|\$|.o|")
# shellcheck disable=SC2086
mk '' $cu_objs BUILD="$u" CUDA_ARCH=sm_90 >/dev/null
check "the plain build made every CUDA object" test "$(ls $cu_objs 2>/dev/null | wc -l)" -eq "$(wc -w <<<"$cu_objs")"
out=$(mk '' -n SAN=1 test-build BUILD="$u/san")
check_that "make test's build after it compiles no CUDA object" $(grep -q "nvcc " <<<"$out"; echo $((!$?)))
check "... and links the plain build's" grep -qF "$u/obj/common/gate.cu.o" <<<"$out"
check_that "... and none of its own" $(grep -qF "$u/san/obj/common/gate.cu.o" <<<"$out"; echo $((!$?)))

# An object and dependency file whose source is gone (a .cu renamed .c, as
# c05_mixed_precision in b9a968d): make deletes them before reading
# the .d files, which named the old source and stopped make ("No rule to
# make target experiments/c05_mixed_precision.cu"); those whose source is
# there stay.
mkdir -p build/obj/experiments build/san/obj/experiments
printf 'build/obj/experiments/c99_gone.cu.o : experiments/c99_gone.cu\n' > build/obj/experiments/c99_gone.cu.d
: > build/obj/experiments/c99_gone.cu.o
: > build/san/obj/experiments/c99_gone.c.o
: > build/obj/experiments/c01_del_empty_cache.c.d.keep
kept=$(ls build/obj/common/*.c.o 2>/dev/null | head -1)
out=$(make --no-print-directory -n help 2>&1); rc=$?
check_eq "make with the objects of a source that is gone: exit 0, no missing-source stop" \
    "$rc:$(grep -c 'No rule to make target' <<<"$out")" 0:0
check_eq "... their .o and .d deleted" \
    "$(ls build/obj/experiments/c99_gone.cu.d build/obj/experiments/c99_gone.cu.o build/san/obj/experiments/c99_gone.c.o 2>/dev/null | wc -l)" 0
check "... the others kept (an object whose source is there; a file of another name)" \
    bash -c "{ [ -z '$kept' ] || [ -e '$kept' ]; } && [ -e build/obj/experiments/c01_del_empty_cache.c.d.keep ]"
rm -f build/obj/experiments/c01_del_empty_cache.c.d.keep

# Programs are not linked with cuBLAS: it is loaded at the first call.
build=${1:-build/san}
linked=""
count=0
for exe in "$build"/c[0-9][0-9]_* "$build"/workload "$build"/tests/test_*; do
    [ -x "$exe" ] || continue
    count=$((count + 1))
    ldd "$exe" 2>/dev/null | grep -q 'libcublas' && linked="$linked $(basename "$exe")"
done
check "found programs in $build" test "$count" -gt 0
check_eq "no program is linked with libcublas (loaded at first use)" "$linked" ""

summary
