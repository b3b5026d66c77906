#!/usr/bin/env bash
# scripts/lib/memcheck_errors.awk (scripts/test-gpu's memcheck verdict) on
# reports from a real H100 run and one written in the tool's format: a
# deliberate out-of-memory is expected, anything else is a real error.
#   tests/scripts/test_memcheck_errors.sh [BUILD_DIR]   (BUILD_DIR unused)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
fx=$root/tests/fixtures/memcheck
count() { awk -f "$root/scripts/lib/memcheck_errors.awk" "$fx/$1"; }
check_eq "C28's deliberate OOMs (cudaMalloc and the cudaGetLastError that clears it): 0 real, 6 expected" "$(count oom_recovery.report)" "0 6"
check_eq "a clean run: no error" "$(count clean.report)" "0 0"
check_eq "a waived run (exit 77 noted by the tool): no error" "$(count waived.report)" "0 0"
check_eq "the tool's own error (a program that makes no CUDA call) is not passed as clean" "$(count no_cuda.report)" "1 0"
check_eq "an invalid write and an invalid-argument API error are real, the OOM beside them expected" "$(count invalid_write.report)" "2 1"
check_eq "C24 on two H100s: NCCL's probe of its kernel images (96 records) is expected, nothing real" "$(count nccl_probe.report)" "0 96"
check_eq "the same 'no kernel image' from the program's own launch is real; NCCL's first frame is not" "$(count probe_elsewhere.report)" "1 1"
check_eq "test-gpu uses this classifier" "$(grep -c 'lib/memcheck_errors.awk' "$root/scripts/test-gpu")" 1
summary
