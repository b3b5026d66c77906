#!/usr/bin/env python3
"""del_empty_cache.py: C01's measurement with PyTorch: seed 000's program as
it is written (tests/torch/seed_programs.py --only c01, a process of its
own): unoptimized() keeps 100 tensors of torch.randn(1000, 1000).cuda() and
returns max_memory_allocated(); optimized() deletes each and empties the
cache, and returns the largest memory_allocated(). Beside build/
c01_del_empty_cache's keep_all and free_each_empty_cache, whose peaks are
what the two functions return, and the figures the seed printed (400.00 and
3.81 MB).

Rows (variants "seed 000 program: unoptimized()" and "...optimized()", no
param): seed_program (what the function returns) and allocated_after
(memory_allocated() after it). A summary: PyTorch's figure, the suite's and
the seed's for each; the verdict-beside row: PyTorch's two figures against
the seed's, which the suite's verdict compares. The interface and the
output: beside.py. Standard library and torch only.
"""
import sys

import beside as b

CLAIM, KEY = "C01", "del_empty_cache"
FUNCS = ("unoptimized", "optimized")
NAME = "beside/" + KEY


def main(argv=None):
    args = b.parse_args(__doc__, 1, 0, None, argv)
    torch, out = b.begin(NAME, CLAIM, KEY, args)
    got = b.seed_program_rows(args, out, "c01", FUNCS)
    if got:
        mib = 1024.0 ** 2
        printed = [b.suite_median(args.suite, b.SEED_VARIANT % fn, "", 0, "seed_printed") for fn in FUNCS]
        out.verdict("Seed 000's program in %s prints %s MB%s." % (
            b.describe_torch(torch, args.device), " / ".join("%.2f" % (got[fn] / mib) for fn in FUNCS),
            "" if None in printed else " (the seed printed %s)" % " / ".join("%.2f" % (p / mib) for p in printed)))
    out.close(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
