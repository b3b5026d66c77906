/* sharded_copies.c: sharded_copies.h's plans. */
#include "sharded_copies.h"

#include <string.h>

#include "sharded_plan.h"

static void add(mc_sh_copy_plan *p, mc_sh_copy c)
{
    if (c.width && c.rows) p->c[p->n++] = c;
}

void mc_sh_chunk_cat_plan(int64_t rows, int64_t cols, int world, mc_sh_copy_plan *p)
{
    memset(p, 0, sizeof *p);
    const int64_t pr = mc_fsdp_padded_rows(rows, world);
    const uint64_t chunk = (uint64_t)(pr * (cols + 1)) * 4;  /* a rank's part of the input */
    const int64_t full = rows / pr, part = rows - full * pr; /* ranks with pr rows; the next one's rows */
    p->zero_dst = full < world;
    uint64_t off = 0;                                        /* the bias after the weight */
    for (int b = 0; b < 2; b++) {
        const uint64_t row = (uint64_t)(b ? 1 : cols) * 4, shard = (uint64_t)pr * row;
        add(p, (mc_sh_copy){.dst = 0, .src = b, .dst_off = off, .src_off = 0, .width = shard,
                            .rows = (uint64_t)full, .dpitch = chunk, .spitch = shard});
        add(p, (mc_sh_copy){.dst = 0, .src = b, .dst_off = (uint64_t)full * chunk + off,
                            .src_off = (uint64_t)full * shard, .width = (uint64_t)part * row, .rows = 1,
                            .dpitch = chunk, .spitch = shard});
        off += shard;
    }
}

void mc_sh_copy_out_plan(int64_t rows, int64_t cols, int world, mc_sh_copy_plan *p)
{
    memset(p, 0, sizeof *p);
    const int64_t pr = mc_fsdp_padded_rows(rows, world);
    const uint64_t sw = (uint64_t)(pr * cols) * 4, sb = (uint64_t)pr * 4, chunk = sw + sb;
    add(p, (mc_sh_copy){.dst = 0, .src = 0, .dst_off = 0, .src_off = 0, .width = sw, .rows = (uint64_t)world,
                        .dpitch = sw, .spitch = chunk});
    add(p, (mc_sh_copy){.dst = 1, .src = 0, .dst_off = 0, .src_off = sw, .width = sb, .rows = (uint64_t)world,
                        .dpitch = sb, .spitch = chunk});
}
