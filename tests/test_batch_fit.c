/* Tests of the fit of a program's requests over the batch and the search
 * for the largest batch that fits (common/trace/batch_fit.c): a synthetic
 * training program written at three batches, its fit exact at every other
 * batch, the search equal to trying every batch, and each way two traces
 * fail to pair refused with one line naming the file and line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/batch_fit.h"
#include "trace/trace.h"

/* A training-like program at batch b: weights (fixed), per layer an
 * activation of act * b bytes kept for the backward, a workspace, the
 * gradients; `steps` steps; streams and an odd request where asked. */
static int64_t reduce_from = INT64_MAX; /* the batch from which the program adds a reduction's buffer */

static char *program(int64_t b, int layers, int64_t act, int steps, const char *extra)
{
    size_t cap = 1 << 20, n = 0;
    char *s = malloc(cap);
    uint64_t id = 1;
#define P(...) n += (size_t)snprintf(s + n, cap - n, __VA_ARGS__)
    P("# memclaims-trace v2\n%s", extra ? extra : "");
    for (int l = 0; l < layers; l++) P("alloc %llu %lld\n", (unsigned long long)id++, 4LL << 20); /* weights */
    for (int st = 0; st < steps; st++) {
        uint64_t acts[64];
        for (int l = 0; l < layers; l++) {
            acts[l] = id;
            P("alloc %llu %lld\n", (unsigned long long)id++, (long long)(act * b + 512));
            if (b >= reduce_from) { /* a buffer and semaphores, as PyTorch's reductions take once rows are many */
                P("alloc %llu 64\nalloc %llu 4\nfree %llu\nfree %llu\n", (unsigned long long)id,
                  (unsigned long long)id + 1, (unsigned long long)id + 1, (unsigned long long)id);
                id += 2;
            }
        }
        P("alloc %llu %d stream=140000000000\nfree %llu\n", (unsigned long long)id, 33554432,
          (unsigned long long)id);
        id++;
        for (int l = layers - 1; l >= 0; l--) {
            P("alloc %llu %lld\n", (unsigned long long)id, (long long)(act * b)); /* grad of the input */
            P("free %llu\n", (unsigned long long)acts[l]);
            P("free %llu\n", (unsigned long long)id++);
        }
    }
#undef P
    return s;
}

static void parse_ok(ca_trace *t, const char *name, const char *text)
{
    char err[256] = "";
    int rc = ca_trace_parse(t, name, text, strlen(text), err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
}

typedef struct {
    ca_trace t[3];
    const ca_trace *p[3];
    int64_t b[3];
    const char *names[3];
} set;

static void make_set(set *s, const int64_t *b, size_t n, int layers, int64_t act, const char *extra)
{
    static const char *names[3] = {"a.pickle", "b.pickle", "c.pickle"};
    for (size_t i = 0; i < n; i++) {
        char *text = program(b[i], layers, act, 2, extra);
        parse_ok(&s->t[i], names[i], text);
        free(text);
        s->p[i] = &s->t[i];
        s->b[i] = b[i];
        s->names[i] = names[i];
    }
}

static void free_set(set *s, size_t n)
{
    for (size_t i = 0; i < n; i++) ca_trace_free(&s->t[i]);
}

/* The fit from batches 2, 4 and 8 gives batch 37's trace byte for byte. */
static void fit_equals_the_program_elsewhere(void **state)
{
    (void)state;
    set s;
    const int64_t b[3] = {4, 2, 8};
    make_set(&s, b, 3, 6, 3 << 20, NULL);
    ca_batch_fit f;
    char err[256] = "";
    assert_int_equal(ca_batch_fit_build(&f, s.p, s.b, s.names, 3, err, sizeof err), 0);
    assert_int_equal(f.lo, 2);
    assert_int_equal(f.hi, 8);
    assert_int_equal(f.n_nonaffine, 0);
    assert_int_equal(f.n_grow, 2 * 6 * 2);
    ca_trace want;
    char *text = program(37, 6, 3 << 20, 2, NULL);
    parse_ok(&want, "want", text);
    free(text);
    ca_trace work;
    ca_batch_work(&f, &work);
    ca_batch_at(&f, &work, 37);
    const ca_trace *got = &work;
    assert_int_equal(got->n_ops, want.n_ops);
    for (size_t k = 0; k < want.n_ops; k++) {
        assert_int_equal(got->ops[k].kind, want.ops[k].kind);
        assert_int_equal(got->ops[k].bytes, want.ops[k].bytes);
        assert_int_equal(got->ops[k].addr, 0);
    }
    ca_trace_free(&want);
    ca_trace_free(&work);
    ca_batch_fit_free(&f);
    free_set(&s, 3);
}

/* The search's answer is the largest batch that fits, found by trying every
 * batch, under a limit and on a small device, for several limits. */
static void search_equals_trying_every_batch(void **state)
{
    (void)state;
    set s;
    const int64_t b[2] = {2, 4};
    make_set(&s, b, 2, 4, 5 << 20, NULL);
    ca_batch_fit f;
    char err[256] = "";
    assert_int_equal(ca_batch_fit_build(&f, s.p, s.b, s.names, 2, err, sizeof err), 0);
    const uint64_t limits[] = {300ULL << 20, 1ULL << 30, 2500ULL << 20};
    ca_trace work;
    ca_batch_work(&f, &work);
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        for (int on_device = 0; on_device < 2; on_device++) {
            ca_config cfg = f.tmpl.cfg;
            uint64_t cap = 80ULL << 30;
            if (on_device) cap = limits[i];
            else cfg.limit_bytes = limits[i];
            ca_max_batch_result r;
            assert_int_equal(ca_max_batch(&f, &work, &cfg, cap, &r, err, sizeof err), 0);
            int64_t brute = 0;
            for (int64_t bb = 1; bb <= 400; bb++) {
                bool fits;
                int64_t pa, pr;
                assert_int_equal(ca_batch_replay(&f, &work, bb, &cfg, cap, &fits, &pa, &pr, err, sizeof err), 0);
                if (!fits) break;
                brute = bb;
            }
            assert_true(brute > 0 && brute < 400);
            assert_int_equal(r.max_batch, brute);
            assert_false(r.unbounded);
            assert_true(r.peak_reserved[0] <= (int64_t)limits[i]);
            assert_true(r.replays <= 2 * 9 + 2);
        }
    }
    ca_trace_free(&work);
    ca_batch_fit_free(&f);
    free_set(&s, 2);
}

/* A request off the line through the batches is named, with its line. */
static void a_request_off_the_line_is_named(void **state)
{
    (void)state;
    set s;
    const int64_t b[3] = {2, 4, 8};
    make_set(&s, b, 3, 2, 1 << 20, NULL);
    s.t[2].ops[3].bytes += 4096; /* batch 8's third activation: a workspace of another algorithm */
    ca_batch_fit f;
    char err[256] = "";
    assert_int_equal(ca_batch_fit_build(&f, s.p, s.b, s.names, 3, err, sizeof err), 0);
    assert_int_equal(f.n_nonaffine, 1);
    assert_int_equal(f.named[0].line, s.t[0].ops[3].line);
    assert_int_equal(f.named[0].bytes[2], (int64_t)s.t[2].ops[3].bytes);
    /* elsewhere: the line through the smallest and largest batch, rounded up */
    ca_trace work;
    ca_batch_work(&f, &work);
    ca_batch_at(&f, &work, 5);
    const ca_trace *t = &work;
    int64_t lo = (int64_t)s.t[0].ops[3].bytes, hi = (int64_t)s.t[2].ops[3].bytes;
    assert_int_equal(t->ops[3].bytes, lo + ((hi - lo) * 3 + 5) / 6);
    ca_trace_free(&work);
    ca_batch_fit_free(&f);
    free_set(&s, 3);
}

/* Traces that do not pair, or cannot be fitted: one line naming the file. */
static void bad_pairs_refused(void **state)
{
    (void)state;
    set s;
    const int64_t b[2] = {2, 4};
    ca_batch_fit f;
    char err[256];

    make_set(&s, b, 2, 3, 1 << 20, NULL);
    int64_t same[2] = {4, 4};
    assert_int_equal(ca_batch_fit_build(&f, s.p, same, s.names, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "both at batch 4"));
    int64_t zero[2] = {0, 4};
    assert_int_equal(ca_batch_fit_build(&f, s.p, zero, s.names, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "a.pickle: batch 0"));
    assert_int_equal(ca_batch_fit_build(&f, s.p, s.b, s.names, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "2 to 16 snapshots"));
    free_set(&s, 2);

    /* different programs: 3 layers and 60, most operations differ */
    make_set(&s, b, 2, 3, 1 << 20, NULL);
    ca_trace_free(&s.t[1]);
    char *text = program(4, 64, 1 << 20, 2, NULL);
    parse_ok(&s.t[1], "b.pickle", text);
    free(text);
    assert_int_equal(ca_batch_fit_build(&f, s.p, s.b, s.names, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "a.pickle and b.pickle: more than"));
    assert_non_null(strstr(err, "do not pair"));
    assert_null(strchr(err, '\n'));
    free_set(&s, 2);

    /* nothing grows: batch 2's trace given as batch 4's too */
    const int64_t twice[2] = {2, 2};
    make_set(&s, twice, 2, 3, 1 << 20, NULL);
    assert_int_equal(ca_batch_fit_build(&f, s.p, b, s.names, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "nothing grows"));
    free_set(&s, 2);

    /* a snapshot begun mid-run */
    make_set(&s, b, 2, 3, 1 << 20, "segment 0x7f0000000000 20971520\n");
    assert_int_equal(ca_batch_fit_build(&f, s.p, s.b, s.names, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "a.pickle:2: segments from before the recording"));
    free_set(&s, 2);
}

/* Requests only a larger batch makes (a reduction's buffer once the rows
 * are many): the largest run is the template, the smaller ones pair with
 * it around them, and its extra requests are held at their size. */
static void requests_of_the_largest_batch_kept(void **state)
{
    (void)state;
    reduce_from = 8;
    set s;
    const int64_t b[3] = {2, 4, 8};
    make_set(&s, b, 3, 5, 2 << 20, NULL);
    assert_true(s.t[2].n_ops > s.t[0].n_ops);
    ca_batch_fit f;
    char err[256] = "";
    assert_int_equal(ca_batch_fit_build(&f, s.p, s.b, s.names, 3, err, sizeof err), 0);
    assert_int_equal(f.n_only_top, 2 * 2 * 5); /* two requests per layer and step */
    assert_int_equal(f.n_nonaffine, 0);
    assert_int_equal(f.n_dropped, 0);
    ca_trace want, work;
    char *text = program(29, 5, 2 << 20, 2, NULL);
    parse_ok(&want, "want", text);
    free(text);
    ca_batch_work(&f, &work);
    ca_batch_at(&f, &work, 29);
    assert_int_equal(work.n_ops, want.n_ops);
    for (size_t k = 0; k < want.n_ops; k++) {
        assert_int_equal(work.ops[k].kind, want.ops[k].kind);
        assert_int_equal(work.ops[k].bytes, want.ops[k].bytes);
    }
    ca_trace_free(&want);
    ca_trace_free(&work);
    ca_batch_fit_free(&f);
    free_set(&s, 3);
    reduce_from = INT64_MAX;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fit_equals_the_program_elsewhere),
        cmocka_unit_test(search_equals_trying_every_batch),
        cmocka_unit_test(a_request_off_the_line_is_named),
        cmocka_unit_test(bad_pairs_refused),
        cmocka_unit_test(requests_of_the_largest_batch_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
