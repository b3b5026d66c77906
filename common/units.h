/* units.h: byte sizes as text for findings and logs ("64 MiB"), one
 * formatter for every experiment. Binary units, named as such. */
#ifndef MC_UNITS_H
#define MC_UNITS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_UNIT_KIB (1ULL << 10)
#define MC_UNIT_MIB (1ULL << 20)
#define MC_UNIT_GIB (1ULL << 30)

/* bytes in the largest unit, at most `largest` (MC_UNIT_GIB, MC_UNIT_MIB or
 * MC_UNIT_KIB), that divides it exactly, else in bytes: 512 -> "512 B",
 * 65536 -> "64 KiB", 2^30 -> "1 GiB" (largest GiB) or "1024 MiB" (largest
 * MiB), 1.5 MiB -> "1536 KiB". Writes buf (len bytes) and returns it. */
const char *mc_bytes_str(uint64_t bytes, uint64_t largest, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
