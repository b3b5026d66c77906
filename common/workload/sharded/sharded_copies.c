/* sharded_copies.c: sharded_copies.h's plans. */
#include "sharded_copies.h"

#include <string.h>

#include "check.h"
#include "sharded_plan.h"

static void add(mc_sh_copy_plan *p, mc_sh_copy c)
{
    if (c.width && c.rows) p->c[p->n++] = c;
}

/* A rank's chunk: the padded shards of the unit's parameters, bytes. */
static uint64_t chunk_bytes(int n, const int64_t *rows, const int64_t *cols, int world)
{
    uint64_t chunk = 0;
    for (int k = 0; k < n; k++) chunk += (uint64_t)(mc_fsdp_padded_rows(rows[k], world) * cols[k]) * 4;
    return chunk;
}

void mc_sh_chunk_cat_plan_n(int n, const int64_t *rows, const int64_t *cols, int world, mc_sh_copy_plan *p)
{
    CHECK(n >= 1 && n <= MC_SH_UNIT_MAX, "chunk_cat of %d parameters (1 to %d)", n, MC_SH_UNIT_MAX);
    memset(p, 0, sizeof *p);
    const uint64_t chunk = chunk_bytes(n, rows, cols, world);
    uint64_t off = 0; /* parameter k's place in a rank's chunk */
    for (int k = 0; k < n; k++) {
        const int64_t pr = mc_fsdp_padded_rows(rows[k], world);
        const int64_t full = rows[k] / pr, part = rows[k] - full * pr; /* ranks with pr rows; the next one's rows */
        const uint64_t row = (uint64_t)cols[k] * 4, shard = (uint64_t)pr * row;
        if (full < world) p->zero_dst = true;
        add(p, (mc_sh_copy){.dst = 0, .src = k, .dst_off = off, .src_off = 0, .width = shard,
                            .rows = (uint64_t)full, .dpitch = chunk, .spitch = shard});
        add(p, (mc_sh_copy){.dst = 0, .src = k, .dst_off = (uint64_t)full * chunk + off,
                            .src_off = (uint64_t)full * shard, .width = (uint64_t)part * row, .rows = 1,
                            .dpitch = chunk, .spitch = shard});
        off += shard;
    }
}

void mc_sh_copy_out_plan_n(int n, const int64_t *rows, const int64_t *cols, int world, mc_sh_copy_plan *p)
{
    CHECK(n >= 1 && n <= MC_SH_UNIT_MAX, "copy-out of %d parameters (1 to %d)", n, MC_SH_UNIT_MAX);
    memset(p, 0, sizeof *p);
    const uint64_t chunk = chunk_bytes(n, rows, cols, world);
    uint64_t off = 0;
    for (int k = 0; k < n; k++) {
        const uint64_t shard = (uint64_t)(mc_fsdp_padded_rows(rows[k], world) * cols[k]) * 4;
        add(p, (mc_sh_copy){.dst = k, .src = 0, .dst_off = 0, .src_off = off, .width = shard,
                            .rows = (uint64_t)world, .dpitch = shard, .spitch = chunk});
        off += shard;
    }
}

void mc_sh_chunk_cat_plan(int64_t rows, int64_t cols, int world, mc_sh_copy_plan *p)
{
    const int64_t r[2] = {rows, rows}, c[2] = {cols, 1};
    mc_sh_chunk_cat_plan_n(2, r, c, world, p);
}

void mc_sh_copy_out_plan(int64_t rows, int64_t cols, int world, mc_sh_copy_plan *p)
{
    const int64_t r[2] = {rows, rows}, c[2] = {cols, 1};
    mc_sh_copy_out_plan_n(2, r, c, world, p);
}
