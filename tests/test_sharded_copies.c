/* Tests of sharded_copies.h: FSDP2's chunk_cat and copy-out plans, run on
 * host buffers, against the layouts written out element by element, for
 * every world of 1 to 8 ranks and shapes whose shards are padded, uneven or
 * empty on the last ranks (10 rows over 8 ranks: 2, 2, 2, 2, 2, 0, 0, 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "workload/sharded/sharded_copies.h"
#include "workload/sharded/sharded_plan.h"

/* A plan on the host: the 2-D copies row by row, as cudaMemcpy2D does. */
static void run_plan(const mc_sh_copy_plan *p, char *const *dst, uint64_t dst0_bytes, char *const *src)
{
    if (p->zero_dst) memset(dst[0], 0, dst0_bytes);
    for (int i = 0; i < p->n; i++) {
        const mc_sh_copy *c = &p->c[i];
        assert_true(c->width > 0 && c->rows > 0 && c->width <= c->dpitch && c->width <= c->spitch);
        for (uint64_t r = 0; r < c->rows; r++)
            memcpy(dst[c->dst] + c->dst_off + r * c->dpitch, src[c->src] + c->src_off + r * c->spitch, c->width);
    }
}

static void one_shape(int64_t rows, int64_t cols, int world)
{
    const int64_t p = mc_fsdp_padded_rows(rows, world), chunk = p * (cols + 1);
    float *gW = malloc((size_t)(rows * cols) * sizeof(float)), *gb = malloc((size_t)rows * sizeof(float));
    const size_t in_bytes = (size_t)(world * chunk) * sizeof(float);
    float *in = malloc(in_bytes), *want = calloc((size_t)(world * chunk), sizeof(float));
    assert_true(gW && gb && in && want);
    for (int64_t i = 0; i < rows * cols; i++) gW[i] = (float)(i + 1);
    for (int64_t i = 0; i < rows; i++) gb[i] = (float)(-i - 1);
    memset(in, 0x7f, in_bytes); /* whatever the buffer held: the padding must come out zero */
    for (int q = 0; q < world; q++)
        for (int64_t i = 0; i < p; i++) {
            const int64_t r = q * p + i;
            for (int64_t j = 0; j < cols; j++) want[q * chunk + i * cols + j] = r < rows ? gW[r * cols + j] : 0.0f;
            want[q * chunk + p * cols + i] = r < rows ? gb[r] : 0.0f;
        }
    mc_sh_copy_plan plan;
    mc_sh_chunk_cat_plan(rows, cols, world, &plan);
    char *dst[2] = {(char *)in, NULL}, *src[2] = {(char *)gW, (char *)gb};
    run_plan(&plan, dst, in_bytes, src);
    if (memcmp(in, want, in_bytes) != 0)
        fail_msg("chunk_cat of %lld x %lld over %d ranks", (long long)rows, (long long)cols, world);

    /* The copy-out of what the all-gather would hold (every rank's part, as above). */
    float *uW = malloc((size_t)(world * p * cols) * sizeof(float)), *ub = malloc((size_t)(world * p) * sizeof(float));
    assert_true(uW && ub);
    mc_sh_copy_out_plan(rows, cols, world, &plan);
    char *out[2] = {(char *)uW, (char *)ub}, *ag[2] = {(char *)in, NULL};
    run_plan(&plan, out, 0, ag);
    for (int64_t r = 0; r < world * p; r++) {
        for (int64_t j = 0; j < cols; j++)
            if (uW[r * cols + j] != (r < rows ? gW[r * cols + j] : 0.0f))
                fail_msg("copy-out weight row %lld of %lld x %lld over %d ranks", (long long)r, (long long)rows,
                         (long long)cols, world);
        if (ub[r] != (r < rows ? gb[r] : 0.0f))
            fail_msg("copy-out bias row %lld of %lld over %d ranks", (long long)r, (long long)rows, world);
    }
    free(gW);
    free(gb);
    free(in);
    free(want);
    free(uW);
    free(ub);
}

static void test_every_world(void **state)
{
    (void)state;
    for (int world = 1; world <= 8; world++)
        for (int64_t rows = 1; rows <= 41; rows++)
            for (int64_t cols = 1; cols <= 3; cols++) one_shape(rows, cols, world);
}

static void test_layouts_by_hand(void **state)
{
    (void)state;
    mc_sh_copy_plan p;
    /* 999 rows over 2 ranks: 500 and 499, padded to 500: the input is cleared first */
    mc_sh_chunk_cat_plan(999, 100, 2, &p);
    assert_true(p.zero_dst);
    /* 1024 rows over 4: even, no padding, one strided copy each for the weight and the bias */
    mc_sh_chunk_cat_plan(1024, 1024, 4, &p);
    assert_false(p.zero_dst);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.c[0].rows, 4);
    assert_int_equal(p.c[0].width, 256 * 1024 * 4);
    assert_int_equal(p.c[0].dpitch, 256 * 1025 * 4);
    mc_sh_copy_out_plan(1024, 1024, 4, &p);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.c[1].src_off, 256 * 1024 * 4);
}

/* A unit of parameters of different shapes (the Transformer's layer:
 * matrices and vectors whose rows shard unevenly, each padded on its own):
 * chunk_cat lays each rank's chunk out as its padded shard of every
 * parameter in turn, and the copy-out of that layout gives every parameter
 * back, zero past its rows. */
static void unit_of(int n, const int64_t *rows, const int64_t *cols, int world)
{
    float *g[MC_SH_UNIT_MAX], *u[MC_SH_UNIT_MAX];
    int64_t chunk = 0, off[MC_SH_UNIT_MAX];
    for (int k = 0; k < n; k++) {
        off[k] = chunk;
        chunk += mc_fsdp_padded_rows(rows[k], world) * cols[k];
        g[k] = malloc((size_t)(rows[k] * cols[k]) * sizeof(float));
        u[k] = malloc((size_t)(world * mc_fsdp_padded_rows(rows[k], world) * cols[k]) * sizeof(float));
        assert_true(g[k] && u[k]);
        for (int64_t i = 0; i < rows[k] * cols[k]; i++) g[k][i] = (float)(1000 * k + i + 1);
    }
    const size_t bytes = (size_t)(world * chunk) * sizeof(float);
    float *in = malloc(bytes), *want = calloc((size_t)(world * chunk), sizeof(float));
    assert_true(in && want);
    memset(in, 0x7f, bytes);
    for (int q = 0; q < world; q++)
        for (int k = 0; k < n; k++) {
            const int64_t p = mc_fsdp_padded_rows(rows[k], world);
            for (int64_t i = 0; i < p && q * p + i < rows[k]; i++)
                memcpy(want + q * chunk + off[k] + i * cols[k], g[k] + (q * p + i) * cols[k],
                       (size_t)cols[k] * sizeof(float));
        }
    mc_sh_copy_plan plan;
    mc_sh_chunk_cat_plan_n(n, rows, cols, world, &plan);
    char *dst[1] = {(char *)in};
    run_plan(&plan, dst, bytes, (char *const *)g);
    if (memcmp(in, want, bytes) != 0) fail_msg("chunk_cat of a unit of %d over %d ranks", n, world);
    mc_sh_copy_out_plan_n(n, rows, cols, world, &plan);
    char *ag[1] = {(char *)in};
    run_plan(&plan, (char *const *)u, 0, ag);
    for (int k = 0; k < n; k++) {
        const int64_t p = mc_fsdp_padded_rows(rows[k], world);
        for (int64_t i = 0; i < world * p * cols[k]; i++)
            if (u[k][i] != (i < rows[k] * cols[k] ? g[k][i] : 0.0f))
                fail_msg("copy-out of parameter %d (%lld x %lld) over %d ranks, element %lld", k,
                         (long long)rows[k], (long long)cols[k], world, (long long)i);
        free(g[k]);
        free(u[k]);
    }
    free(in);
    free(want);
}

static void test_unit_of_many(void **state)
{
    (void)state;
    /* an encoder layer's 12 at d_model 6, ff 5 (in_proj [18, 6], [18]; out_proj [6, 6], [6];
       linear1 [5, 6], [5]; linear2 [6, 5], [6]; the norms' [6] x 4), and odd shapes */
    const int64_t lr[12] = {18, 18, 6, 6, 5, 5, 6, 6, 6, 6, 6, 6}, lc[12] = {6, 1, 6, 1, 6, 1, 5, 1, 1, 1, 1, 1};
    const int64_t orow[5] = {7, 21, 3, 1, 40}, ocol[5] = {5, 1, 9, 1, 2};
    for (int world = 1; world <= 8; world++) {
        unit_of(12, lr, lc, world);
        unit_of(5, orow, ocol, world);
        unit_of(1, orow + 1, ocol + 1, world);
    }
    /* the MLP's plans are the unit of a weight and its bias */
    mc_sh_copy_plan a, b;
    const int64_t r[2] = {999, 999}, c[2] = {100, 1};
    mc_sh_chunk_cat_plan(999, 100, 3, &a);
    mc_sh_chunk_cat_plan_n(2, r, c, 3, &b);
    assert_memory_equal(&a, &b, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_world),
        cmocka_unit_test(test_layouts_by_hand),
        cmocka_unit_test(test_unit_of_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
