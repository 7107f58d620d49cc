"""``CommDebugMode`` counts the C10D-API collectives (``dist.all_reduce``, ``dist.broadcast``, ...) of a
"neuron" group as it counts gloo's: one ``c10d`` op per call, with the same values. The worker
(workers/comm_debug_mode.py, which lists the checks) runs once on backend "neuron" with ``neuron`` tensors
and once on "gloo" with CPU tensors, the reference the same assertions describe."""
from __future__ import annotations

import re

import pytest

from .launch import report, torchrun


@pytest.mark.parametrize("backend", ["neuron", "gloo"])
def test_comm_debug_mode_counts_c10d_collectives(backend):
    proc = torchrun("comm_debug_mode", 2, backend)
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    assert counts == {0: 22, 1: 22}, report(proc)
