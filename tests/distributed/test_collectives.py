"""Backend "neuron" gives the same values as gloo on CPU tensors for every collective
(see workers/collectives.py for the list, coalesced all_reduce and object collectives
included), float32 and bfloat16, contiguous and
non-contiguous, default group and a new_group, async handles included; float8, int16 and
uint32 tensors move bit for bit in the collectives without arithmetic, and their reductions
are refused with a TypeError, as is an all_reduce of a tensor on another device (meta)."""
from __future__ import annotations

import re

from .launch import report, torchrun


def test_every_collective_matches_gloo_on_cpu():
    proc = torchrun("collectives", 3)
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    # rank 1 is outside the sub-group; rank 2 is every group's root (reduce/gather checks)
    assert set(counts) == {0, 1, 2}, report(proc)
    assert counts[1] >= 90 and counts[0] >= 160 and counts[2] > counts[0], counts
