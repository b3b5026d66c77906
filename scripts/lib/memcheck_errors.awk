# memcheck_errors.awk: counts the error records of a compute-sanitizer memcheck
# report (--log-file) and prints "REAL EXPECTED". EXPECTED are
#   - out-of-memory results of the CUDA API (cudaErrorMemoryAllocation, which
#     the tool reports at cudaMalloc and again at the cudaGetLastError that
#     clears it): the experiments OOM on purpose and record it;
#   - NCCL's probe of its own kernels when a communicator is made
#     (cudaErrorNoKernelImageForDevice whose first host frame is NCCL's
#     ncclInitKernelsForDevice): NCCL asks each kernel's attributes, takes
#     the error for the ones it did not build for this GPU, clears it and
#     goes on (seen on two H100s with PyTorch's NCCL 2.28).
# REAL is every other record: an invalid access, another API error (the same
# error anywhere else included), a leak, or the tool's own error. The tool's
# note that the program exited non-zero is not an error record: the exit
# code is judged on its own (77, waived, passes).
function close_record() {
    if (kind == "oom" || (kind == "probe" && in_nccl_probe)) expected++
    else if (kind != "") real++
    kind = ""
    in_nccl_probe = 0
    first_frame = 0
}
/^========= [A-Z]/ && !/ERROR SUMMARY|COMPUTE-SANITIZER|Target application returned an error/ {
    close_record()
    if ($0 ~ /Program hit cudaErrorMemoryAllocation/) kind = "oom"
    else if ($0 ~ /Program hit cudaErrorNoKernelImageForDevice/) kind = "probe"
    else kind = "other"
    first_frame = 1
    next
}
first_frame && /Host Frame:/ {
    in_nccl_probe = ($0 ~ /Host Frame: ncclInitKernelsForDevice\(/ && $0 ~ /libnccl/)
    first_frame = 0
}
END {
    close_record()
    printf "%d %d\n", real + 0, expected + 0
}
