/* trace.h: the parser of allocator traces, memclaims-trace v1 and v2
 * (docs/TRACE.md), used by build/replay, the tests and the fuzzer. v2 adds,
 * and a v1 file uses none of:
 *
 *   set conf max_split_size_mb:64,expandable_segments:True
 *                                    PYTORCH_CUDA_ALLOC_CONF settings (one token)
 *   segment 0x7f0000000000 20971520 [stream=S] [pool=small|large]
 *                                    a cached segment from before the recording
 *   live 7 4000000 0x7f0000000000 [stream=S] [block=BYTES]
 *                                    a block live in it from before (id 7)
 *   alloc ID BYTES [ADDR] [stream=S] [oom]
 *                                    on stream S (default 0); oom: PyTorch
 *                                    refused it (OutOfMemoryError)
 *   free ID [stream=S]               S, if given, must be the alloc's stream
 *
 * segment and live lines come before the first operation, like set lines.
 *
 *   # memclaims-trace v1             '#' starts a comment, anywhere on a line
 *   set limit 1073741823             settings, before the first operation:
 *   set max_split_size 67108864        limit, max_split_size and
 *                                      max_non_split_rounding_size (bytes;
 *                                      the rows of CA_SETTINGS with a trace
 *                                      name, alloc_settings.h)
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

#include "alloc/alloc_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CA_OP_ALLOC, CA_OP_FREE, CA_OP_EMPTY_CACHE, CA_OP_RESET_PEAK } ca_op_kind;

typedef struct {
    uint64_t id;     /* alloc, free: the id as written */
    uint64_t stream; /* alloc, free: the stream (0 when none is given) */
    uint64_t bytes;  /* alloc: bytes requested (>= 1) */
    uint64_t addr;   /* alloc: the data_ptr the trace gives, 0 when none */
    uint64_t line;   /* 1-based line number in the trace */
    uint64_t slot;   /* alloc: its index among the trace's allocs; free: the
                        slot of the alloc whose block it frees */
    ca_op_kind kind;
    bool expect_oom; /* alloc: PyTorch refused it ("oom") */
    bool has_stream; /* free: a stream was given */
} ca_trace_op;

/* A segment from before the recording, with its live blocks
 * lives[first_live .. first_live + n_live). */
typedef struct {
    uint64_t addr, bytes, stream, line;
    bool small;
    size_t first_live, n_live;
} ca_trace_seg;

typedef struct {
    uint64_t id, bytes, addr, stream, line, slot;
    uint64_t block;      /* the block's size if given, else 0 */
} ca_trace_live;

typedef struct {
    char *name;          /* for messages */
    ca_config cfg;       /* defaults, changed by set lines */
    ca_trace_op *ops;
    size_t n_ops;
    uint64_t n_slots;    /* alloc operations and live blocks */
    ca_trace_seg *segs;  /* by address */
    size_t n_segs;
    ca_trace_live *lives; /* by segment, then address */
    size_t n_lives;
    uint64_t n_expect_oom; /* alloc lines marked oom */
    bool uses_streams;   /* some line names a stream */
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

/* cfg's `set NAME BYTES` lines, for a trace's header: one for each setting
 * of CA_SETTINGS that has a trace name (limit, max_split_size,
 * max_non_split_rounding_size) and differs from its default, in the table's
 * order, separated by newlines (none after the last; "" when all are
 * defaults). The settings that only `set conf` carries are not written.
 * Returns the length snprintf would. */
int ca_trace_format_settings(const ca_config *cfg, char *out, size_t len);

/* "alloc", "free", "empty_cache", "reset_peak". */
const char *ca_op_name(ca_op_kind k);

#ifdef __cplusplus
}
#endif
#endif
