/* meta: writes a run's provenance (meta.csv) or its GPU slug.
 *
 *   build/meta [--device N] [--git-sha SHA] --out DIR   DIR/meta.csv, atomically
 *   build/meta [--device N] --slug                       prints the GPU slug
 *
 * Exit 0, or 2 on bad usage. Without a GPU it still writes the host facts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "csv.h"
#include "options.h"
#include "provenance.h"
#include "workload/transformer/kernels/tfm_kernels.h"

static int usage(const char *msg)
{
    fprintf(stderr, "meta: %s\nusage: meta [--device N] [--git-sha SHA] (--out DIR | --slug)\n", msg);
    return MC_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    int device = 0;
    const char *out_dir = NULL, *sha = NULL;
    int slug = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--slug")) {
            slug = 1;
        } else if (!strcmp(a, "--device") && val) {
            if (mc_parse_int(val, 0, 1023, &device) != 0) return usage("--device needs a number >= 0");
            i++;
        } else if (!strcmp(a, "--out") && val) {
            out_dir = val;
            i++;
        } else if (!strcmp(a, "--git-sha") && val) {
            sha = val;
            i++;
        } else {
            return usage("unknown or incomplete option");
        }
    }
    if (slug) {
        char s[128];
        mc_gpu_slug(device, s, sizeof s);
        puts(s);
        return MC_EXIT_OK;
    }
    if (!out_dir) return usage("--out DIR or --slug is required");
    mc_file f;
    if (mc_file_open(&f, out_dir, "meta.csv") != 0) {
        fprintf(stderr, "meta: cannot write in '%s': %s\n", out_dir, strerror(errno));
        return MC_EXIT_USAGE;
    }
    mc_provenance_write(f.fp, device, argc, argv, sha);
    char att[128]; /* which kernels timed the Transformer's fp16/bf16 attention */
    tfm_cudnn_describe(att, sizeof att);
    mc_provenance_put(f.fp, "half_attention", att);
    if (mc_file_commit(&f) != 0) {
        fprintf(stderr, "meta: cannot write %s/meta.csv: %s\n", out_dir, strerror(errno));
        return MC_EXIT_USAGE;
    }
    return MC_EXIT_OK;
}
