/* decimal.h: unsigned decimal text to and from uint64_t, eight digits at a
 * time in one 64-bit register (SWAR), for the hot paths of the trace parser
 * (trace.c) and the replay's CSV rows (replay.c): at millions of numbers a
 * second, a loop over digits costs more than the allocator model itself.
 *
 * Eight digits in a uint64_t are kept in memory order: the first (most
 * significant) digit in the lowest byte, as a little-endian load or store of
 * the text gives them. Loads and stores are 8 bytes wide, so callers keep 8
 * readable bytes after a number they parse and room for 24 after a number
 * they write. */
#ifndef MC_DECIMAL_H
#define MC_DECIMAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "decimal.h assumes a little-endian machine"
#endif

#define DEC_ZEROS 0x3030303030303030ULL /* '0' in every byte */

static inline uint64_t dec_load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* ------------------------------------------------------------ parsing */

/* How many of the 8 bytes of w, from the first, are digits before the first
 * non-digit (0..8). A byte is a digit when its high nibble is 3 and adding 6
 * leaves it there; the carry out of a non-digit byte only disturbs the bytes
 * after it, which do not count. */
static inline unsigned dec_run8(uint64_t w)
{
    const uint64_t hi = 0xF0F0F0F0F0F0F0F0ULL;
    uint64_t t = ((w & hi) | (((w + 0x0606060606060606ULL) & hi) >> 4)) ^ 0x3333333333333333ULL;
    return t ? (unsigned)__builtin_ctzll(t) / 8 : 8;
}

/* The value of the first n (1..8) bytes of w, all digits. The digits are
 * moved to the top (zeros before them change nothing), then pairs, quads
 * and the two halves are combined, every lane in one multiply. */
static inline uint64_t dec_value8(uint64_t w, unsigned n)
{
    uint64_t d = (w - DEC_ZEROS) << (8 * (8 - n)); /* bytes after the digits leave */
    d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFULL;
    d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFULL;
    return (d * 10000 + (d >> 32)) & 0xFFFFFFFFULL;
}

/* ------------------------------------------------------------ formatting */

/* The 8 digits of v < 10^8 (values 0..9, leading zeros included): split into
 * two halves of 4 digits, each half into 2 + 2, each pair into 1 + 1. Each
 * division is a multiply and a shift, exact over the lane's range
 * (x * 10486 >> 20 == x / 100 for x < 10^4; x * 103 >> 10 == x / 10 for
 * x < 100), and no lane overflows into the next. */
static inline uint64_t dec_digits8(uint32_t v)
{
    uint64_t x = (v / 10000) | ((uint64_t)(v % 10000) << 32);
    uint64_t q = ((x * 10486) >> 20) & 0x0000007F0000007FULL;
    x = q | ((x - q * 100) << 16);
    q = ((x * 103) >> 10) & 0x000F000F000F000FULL;
    return q | ((x - q * 10) << 8);
}

/* v < 10^8 at p without leading zeros (stores 8 bytes); returns the length.
 * The leading zeros are the lowest zero bytes of the digits; bit 56 stands
 * for the last digit so that 0 prints as "0". */
static inline size_t dec_put_short(char *p, uint32_t v)
{
    uint64_t d = dec_digits8(v);
    unsigned skip = (unsigned)__builtin_ctzll(d | (1ULL << 56)) / 8;
    uint64_t text = (d + DEC_ZEROS) >> (8 * skip);
    memcpy(p, &text, 8);
    return 8 - skip;
}

/* Exactly 8 digits of v < 10^8 at p. */
static inline void dec_put8(char *p, uint32_t v)
{
    uint64_t text = dec_digits8(v) + DEC_ZEROS;
    memcpy(p, &text, 8);
}

/* v in decimal at p (stores up to 24 bytes); returns the length (1..20).
 * Byte counts of a GPU's memory mostly have 9 or 10 digits: their first one
 * or two come from a table of pairs. */
static inline size_t dec_put(char *p, uint64_t v)
{
    static const char pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    if (v < 100000000) return dec_put_short(p, (uint32_t)v);
    if (v < 10000000000ULL) {
        uint32_t hi = (uint32_t)(v / 100000000);
        size_t one = hi < 10; /* one digit: the second of its pair */
        memcpy(p, pairs + 2 * hi + one, 2);
        dec_put8(p + 2 - one, (uint32_t)(v - (uint64_t)hi * 100000000));
        return 10 - one;
    }
    if (v < 10000000000000000ULL) {
        size_t n = dec_put_short(p, (uint32_t)(v / 100000000));
        dec_put8(p + n, (uint32_t)(v % 100000000));
        return n + 8;
    }
    uint64_t rest = v % 10000000000000000ULL;
    size_t n = dec_put_short(p, (uint32_t)(v / 10000000000000000ULL));
    dec_put8(p + n, (uint32_t)(rest / 100000000));
    dec_put8(p + n + 8, (uint32_t)(rest % 100000000));
    return n + 16;
}

#endif
