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
static void run_plan(const mc_sh_copy_plan *p, char *dst[2], uint64_t dst0_bytes, char *const src[2])
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_world),
        cmocka_unit_test(test_layouts_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
