#!/usr/bin/env python3
"""beside_paired_frees.py (test_beside.sh): paired() and compare_steps() leave
no training alive, a training in a reference cycle included, on success
and where a step fails; prints: alive after paired, rounds of a, of b,
alive after a failed compare_steps, how it measured."""
import sys, weakref
import beside as b
import torch
class Cfg:
    accum = 1
class Tr:
    """A training in a reference cycle, as C23's offload training (its forward's closure)."""
    def __init__(self, fail=False):
        self.cfg, self.me, self.fail = Cfg(), self, fail
    def step(self, loss_host):
        if self.fail:
            raise RuntimeError("out of memory")
refs = []
def make(fail=False):
    t = Tr(fail)
    refs.append(weakref.ref(t))
    return t
p = b.paired(torch, make, make, 1)
ok = sum(r() is not None for r in refs)
rec = {"times": [1.0, 2.0, 2.0], "warm": 1}
got = b.compare_steps(torch, "t", make, lambda: make(True), 1, rec, rec)
print(ok, len(p["a"]), len(p["b"]), sum(r() is not None for r in refs), got[-1])
