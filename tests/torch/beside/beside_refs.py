"""beside_refs.py: what every module here needs of the rest of tests/torch: the
reference scripts, imported (reference_module), and an exception in one
line (reason). Standard library only."""
import os
import sys


def reference_module(name):
    """tests/torch/NAME.py (mlp_reference, transformer_reference), imported."""
    here = os.path.dirname(os.path.abspath(__file__))
    parent = os.path.dirname(here)
    if parent not in sys.path:
        sys.path.insert(1, parent)
    return __import__(name)


def reason(e):
    """An exception in one line: its type and the first line of its message."""
    msg = str(e).strip().split("\n")[0][:200]
    return "%s: %s" % (type(e).__name__, msg) if msg else type(e).__name__
