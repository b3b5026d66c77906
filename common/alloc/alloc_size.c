/* alloc_size.c: the caching allocator's size rules, round_size (with
 * roundup_power2_divisions: roundup_power2_next_division) and
 * get_allocation_size in c10/cuda/CUDACachingAllocator.cpp (alloc_model.h).
 * Pure functions of a size and a ca_config; the rules that use them are in
 * alloc_model.c, the configuration's defaults and checks in
 * alloc_settings.c. */
#include "alloc_internal.h"

uint64_t ca_round_size(uint64_t bytes)  /* round_size, roundup_power2_divisions off */
{
    if (bytes < CA_MIN_BLOCK_SIZE) return CA_MIN_BLOCK_SIZE;
    uint64_t r = bytes % CA_MIN_BLOCK_SIZE;
    if (r == 0) return bytes;
    if (bytes > UINT64_MAX - CA_MIN_BLOCK_SIZE) return UINT64_MAX - (CA_MIN_BLOCK_SIZE - 1);
    return bytes - r + CA_MIN_BLOCK_SIZE;
}

/* roundup_power2_next_division: size rounded up to the next of `divisions`
 * equal steps between the powers of two around it (1200 with 4 divisions:
 * 1024, 1280, 1536, 1792 -> 1280). */
static uint64_t roundup_power2_next_division(uint64_t size, uint64_t divisions)
{
    if ((size & (size - 1)) == 0) return size;
    uint64_t floor2 = 1ULL << (63 - __builtin_clzll(size));
    uint64_t step = floor2 >> (63 - __builtin_clzll(divisions));
    if (step == 0) return floor2 << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

/* AllocatorConfig::roundup_power2_divisions(size): the interval of size's
 * power of two, counted from 1 MiB and clamped to the 16 intervals. */
static unsigned roundup_interval(uint64_t size)
{
    int i = (63 - __builtin_clzll(size)) - 20;
    return i < 0 ? 0u : i >= CA_ROUNDUP_INTERVALS ? CA_ROUNDUP_INTERVALS - 1u : (unsigned)i;
}

uint64_t ca_round_size_cfg(const ca_config *c, uint64_t size) /* round_size */
{
    if (size < CA_MIN_BLOCK_SIZE) return CA_MIN_BLOCK_SIZE;
    uint64_t divisions = c->roundup_divisions[roundup_interval(size)];
    if (divisions > 1 && size > CA_MIN_BLOCK_SIZE * divisions && size <= (1ULL << 62))
        return roundup_power2_next_division(size, divisions);
    return ca_round_size(size);
}

uint64_t ca_allocation_size(uint64_t size)  /* get_allocation_size */
{
    if (size <= CA_SMALL_SIZE) return CA_SMALL_BUFFER;
    if (size < CA_MIN_LARGE_ALLOC) return CA_LARGE_BUFFER;
    uint64_t r = size % CA_ROUND_LARGE;
    return r ? size - r + CA_ROUND_LARGE : size;
}
