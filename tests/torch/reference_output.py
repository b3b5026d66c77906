"""reference_output.py: what the PyTorch reference scripts write, in the
suite's formats: figures as build/workload prints them, and a memory
history as a memclaims-trace v1 (docs/TRACE.md). Imported by
mlp_reference.py and transformer_reference.py (Python puts a script's own
folder first on sys.path). Standard library only.
"""
import os
import sys


def torch_or_waive(script):
    """torch with a CUDA device, or None after one line on stderr (the
    caller exits 77: waived)."""
    try:
        import torch
    except ImportError:
        print("%s: torch is not installed here: waived" % script, file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print("%s: no CUDA device: waived" % script, file=sys.stderr)
        return None
    return torch


def number(v):
    """A figure as build/workload writes it: integers bare, others %.10g, None empty."""
    if v is None:
        return ""
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53):
        return str(int(v))
    return "%.10g" % v


# ---------------------------------------------------------------- trace

def frame_note(frames, script):
    """The innermost Python frame of a request, and this script's frame if another."""
    if not frames:
        return ""
    def fmt(f):
        return "%s@%s:%s" % (f.get("name", "?"), os.path.basename(f.get("filename", "?")),
                             f.get("line", "?"))
    out = [fmt(frames[0])]
    for f in frames[1:]:
        if os.path.basename(f.get("filename", "")) == script:
            out.append(fmt(f))
            break
    return " < ".join(out)


def write_trace(path, entries, marks, script, stacks="python"):
    """Writes path (memclaims-trace v1, via a temporary file) from
    entries: device_traces[dev] of a memory snapshot (dicts with action,
    addr, size, frames); marks: [(index into entries, label, reset_peak?)],
    in order; script: the calling script's file name, for the header and
    its frames; stacks: how the history was recorded ("python", or "none"
    for context=None, whose requests carry no frames)."""
    live = {}
    next_id = 1
    lines = ["# memclaims-trace v1",
             "# PyTorch's caching-allocator requests (torch.cuda.memory._record_memory_history),",
             "# written by tests/torch/%s; ids count requests in order" % script]
    if stacks != "python":
        lines.append("# recorded without Python stacks (context=None): no frames")
    mi = 0
    for i, e in enumerate(entries + [None]):
        while mi < len(marks) and marks[mi][0] <= i:
            lines.append("# %s" % marks[mi][1])
            if marks[mi][2]:
                lines.append("reset_peak")
            mi += 1
        if e is None:
            break
        act, addr, size = e.get("action"), int(e.get("addr", 0)), int(e.get("size", 0))
        note = frame_note(e.get("frames"), script)
        if act == "alloc":
            live[addr] = next_id
            lines.append("alloc %d %d 0x%x%s" % (next_id, size, addr, "  # " + note if note else ""))
            next_id += 1
        elif act == "free_completed":
            if addr in live:
                lines.append("free %d" % live.pop(addr))
            else:
                lines.append("# free_completed of a block allocated before recording: %d 0x%x"
                             % (size, addr))
        elif act in ("free_requested", "snapshot"):
            continue
        else:  # segment_alloc, segment_free, segment_map, segment_unmap, oom
            lines.append("# %s %d 0x%x" % (act, size, addr))
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)
