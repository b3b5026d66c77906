/* units.c: units.h's formatter. */
#include <stdio.h>

#include "units.h"

const char *mc_bytes_str(uint64_t bytes, uint64_t largest, char *buf, size_t len)
{
    static const struct {
        uint64_t size;
        const char *name;
    } U[] = {{MC_UNIT_GIB, "GiB"}, {MC_UNIT_MIB, "MiB"}, {MC_UNIT_KIB, "KiB"}};
    for (size_t i = 0; i < sizeof U / sizeof U[0]; i++)
        if (U[i].size <= largest && bytes >= U[i].size && bytes % U[i].size == 0) {
            snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / U[i].size), U[i].name);
            return buf;
        }
    snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    return buf;
}
