/* trace.h: the parser of allocator traces, memclaims-trace v1 (DESIGN.md
 * "Allocator traces"), used by build/replay, the tests and the fuzzer.
 *
 *   # memclaims-trace v1             '#' starts a comment, anywhere on a line
 *   set limit 1073741823             settings, before the first operation:
 *   set max_split_size 67108864        limit, max_split_size and
 *                                      max_non_split_rounding_size (bytes)
 *   alloc 1 4000000 0x7f7209a00000   alloc <id> <bytes >= 1> [<address>]
 *   free 1                           free <id>
 *   empty_cache
 *   reset_peak
 *
 * Numbers are decimal or 0x hexadecimal (ids: decimal only), at most 2^64-1;
 * tokens are separated by spaces or tabs; a line may end in CR LF; blank
 * lines are ignored. An id may be allocated again once freed. The settings
 * must be values PyTorch accepts (ca_config_check). Parsing stops at the
 * first malformed line with "NAME:LINE: reason", where NAME is the trace's
 * name (its path, or "<stdin>"). */
#ifndef MC_TRACE_H
#define MC_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "alloc_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CA_OP_ALLOC, CA_OP_FREE, CA_OP_EMPTY_CACHE, CA_OP_RESET_PEAK } ca_op_kind;

typedef struct {
    uint64_t id;     /* alloc, free: the id as written */
    uint64_t bytes;  /* alloc: bytes requested (>= 1) */
    uint64_t addr;   /* alloc: the data_ptr the trace gives, 0 when none */
    uint64_t line;   /* 1-based line number in the trace */
    uint64_t slot;   /* alloc: its index among the trace's allocs; free: the
                        slot of the alloc whose block it frees */
    ca_op_kind kind;
} ca_trace_op;

typedef struct {
    char *name;          /* for messages */
    ca_config cfg;       /* defaults, changed by set lines */
    ca_trace_op *ops;
    size_t n_ops;
    uint64_t n_slots;    /* alloc operations */
} ca_trace;

/* Parses len bytes of buf (need not end in a newline or NUL) into t, which
 * the caller frees with ca_trace_free whatever the result. Returns 0, or -1
 * with "NAME:LINE: reason" in err. */
int ca_trace_parse(ca_trace *t, const char *name, const char *buf, size_t len, char *err,
                   size_t errlen);
/* Reads path ("-" for stdin) and parses it. Returns 0, or -1 with the reason
 * in err ("PATH: cannot read: ..." or a parse error). */
int ca_trace_load(ca_trace *t, const char *path, char *err, size_t errlen);
void ca_trace_free(ca_trace *t);

/* "alloc", "free", "empty_cache", "reset_peak". */
const char *ca_op_name(ca_op_kind k);

#ifdef __cplusplus
}
#endif
#endif
