/* Tests of common/trace/timeline.c: ca_replay's CSV cut to stretches, each
 * point the largest allocated and reserved of its stretch at its last step,
 * the rows left over as a last point, whether the rows come whole or one
 * byte at a time; and the same as cutting a real replay's CSV by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/replay.h"
#include "trace/timeline.h"

/* Five rows; allocated and reserved are columns 6 and 7. */
static const char rows[] = CA_REPLAY_HEADER "\n"
                           "1,alloc,1,10,ok,100,2000,100,2000,1,100,0,0,10,0,0\n"
                           "2,alloc,2,10,ok,300,2000,300,2000,1,300,0,0,20,0,0\n"
                           "3,free,1,,ok,200,4000,300,4000,2,200,0,0,10,0,0\n"
                           "4,free,2,,ok,0,1000,300,4000,1,0,0,0,0,0,0\n"
                           "5,empty_cache,,,ok,50,500,300,4000,1,0,0,0,0,0,0\n";

/* rows through ca_timeline_open(per_point), chunk bytes a write (0: all at once). */
static char *thin(const char *csv, uint64_t per_point, size_t chunk)
{
    static char buf[4096];
    FILE *out = tmpfile();
    assert_non_null(out);
    FILE *f = ca_timeline_open(out, per_point);
    assert_non_null(f);
    setvbuf(f, NULL, _IONBF, 0); /* each fwrite reaches the cookie as it is */
    size_t n = strlen(csv);
    for (size_t at = 0; at < n;) {
        size_t k = chunk && chunk < n - at ? chunk : n - at;
        assert_int_equal(fwrite(csv + at, 1, k, f), k);
        at += k;
    }
    assert_int_equal(fclose(f), 0);
    rewind(out);
    size_t got = fread(buf, 1, sizeof buf - 1, out);
    buf[got] = '\0';
    fclose(out);
    return buf;
}

static void stretches(void **state)
{
    (void)state;
    static const size_t chunks[] = {0, 1, 2, 7, 33};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        assert_string_equal(thin(rows, 2, chunks[c]), CA_TIMELINE_HEADER "\n"
                                                      "2,300,2000\n"
                                                      "4,200,4000\n"
                                                      "5,50,500\n");
        assert_string_equal(thin(rows, 1, chunks[c]), CA_TIMELINE_HEADER "\n"
                                                      "1,100,2000\n2,300,2000\n3,200,4000\n4,0,1000\n5,50,500\n");
        assert_string_equal(thin(rows, 5, chunks[c]), CA_TIMELINE_HEADER "\n5,300,4000\n");
        assert_string_equal(thin(rows, 9, chunks[c]), CA_TIMELINE_HEADER "\n5,300,4000\n");
        assert_string_equal(thin(rows, 0, chunks[c]), thin(rows, 1, 0)); /* 0 counts as 1 */
    }
    assert_string_equal(thin(CA_REPLAY_HEADER "\n", 3, 1), CA_TIMELINE_HEADER "\n"); /* no rows, no point */
}

static void too_long_a_row_fails(void **state)
{
    (void)state;
    char *csv = malloc(3000);
    assert_non_null(csv);
    memset(csv, '1', 2999);
    csv[2999] = '\0';
    FILE *out = tmpfile();
    FILE *f = ca_timeline_open(out, 1);
    assert_non_null(f);
    fputs(CA_REPLAY_HEADER "\n", f);
    fputs(csv, f);
    assert_int_not_equal(fclose(f), 0);
    fclose(out);
    free(csv);
}

/* A real replay's CSV: the same points as taking its rows a stretch at a time. */
static void a_replay_cut_by_hand(void **state)
{
    (void)state;
    char text[8192] = "", err[256];
    for (int i = 1; i <= 40; i++) {
        char line[64];
        snprintf(line, sizeof line, "alloc %d %d\n", i, i * 300000);
        strcat(text, line);
        if (i % 4 == 0) {
            snprintf(line, sizeof line, "free %d\nfree %d\n", i - 1, i - 3);
            strcat(text, line);
        }
    }
    ca_trace t;
    assert_int_equal(ca_trace_parse(&t, "t", text, strlen(text), err, sizeof err), 0);
    FILE *csv = tmpfile(), *out = tmpfile();
    ca_replay_opts o = ca_replay_defaults();
    assert_int_equal(ca_replay(&t, &o, csv, NULL, err, sizeof err), 0);
    FILE *f = ca_timeline_open(out, 7);
    assert_int_equal(ca_replay(&t, &o, f, NULL, err, sizeof err), 0);
    assert_int_equal(fclose(f), 0);
    ca_trace_free(&t);

    char want[8192] = CA_TIMELINE_HEADER "\n", line[512], step[32] = "";
    double a = 0, r = 0;
    int in = 0;
    rewind(csv);
    assert_non_null(fgets(line, sizeof line, csv)); /* the header */
    while (fgets(line, sizeof line, csv)) {
        double v[16];
        char *p = line;
        for (int k = 0; k < 16; k++) {
            v[k] = strtod(p, NULL);
            p = strchr(p, ',');
            if (!p) break;
            p++;
        }
        snprintf(step, sizeof step, "%.0f", v[0]);
        if (v[5] > a) a = v[5];
        if (v[6] > r) r = v[6];
        if (++in == 7) {
            size_t n = strlen(want);
            snprintf(want + n, sizeof want - n, "%s,%.0f,%.0f\n", step, a, r);
            a = r = 0;
            in = 0;
        }
    }
    if (in > 0) {
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, "%s,%.0f,%.0f\n", step, a, r);
    }
    fclose(csv);
    char got[8192];
    rewind(out);
    size_t n = fread(got, 1, sizeof got - 1, out);
    got[n] = '\0';
    fclose(out);
    assert_true(strchr(want + strlen(CA_TIMELINE_HEADER) + 1, '\n') != NULL); /* some points */
    assert_string_equal(got, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stretches),
        cmocka_unit_test(too_long_a_row_fails),
        cmocka_unit_test(a_replay_cut_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
