"""beside_refs.py: what every module here needs of the rest of tests/torch: the
reference scripts, imported (reference_module), and an exception in one
line (reason). Standard library only."""
import os
import sys


def reference_module(name):
    """tests/torch/NAME.py (mlp_reference, transformer_reference), imported;
    transformer_reference's models made on the host are kept for reuse
    (its HOST_MODELS: the counterparts build the same few ~25 times)."""
    here = os.path.dirname(os.path.abspath(__file__))
    parent = os.path.dirname(here)
    if parent not in sys.path:
        sys.path.insert(1, parent)
    mod = __import__(name)
    if getattr(mod, "HOST_MODELS", False) is None:
        mod.HOST_MODELS = {}
    return mod


def reason(e):
    """An exception in one line: its type and the first line of its message."""
    msg = str(e).strip().split("\n")[0][:200]
    return "%s: %s" % (type(e).__name__, msg) if msg else type(e).__name__
