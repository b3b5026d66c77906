# memcheck_errors.awk: counts the error records of a compute-sanitizer memcheck
# report (--log-file) and prints "REAL EXPECTED". EXPECTED are out-of-memory
# results of the CUDA API (cudaErrorMemoryAllocation, which the tool reports
# at cudaMalloc and again at the cudaGetLastError that clears it): the
# experiments OOM on purpose and record it. REAL is every other record: an
# invalid access, another API error, a leak, or the tool's own error. The
# tool's note that the program exited non-zero is not an error record: the
# exit code is judged on its own (77, waived, passes).
/^========= [A-Z]/ && !/ERROR SUMMARY|COMPUTE-SANITIZER|Target application returned an error/ {
    if ($0 ~ /Program hit cudaErrorMemoryAllocation/) expected++
    else real++
}
END { printf "%d %d\n", real + 0, expected + 0 }
