"""A ``"gloo"`` process group given ``neuron`` tensors runs its collectives on their zero-copy CPU aliases,
as gloo serves CUDA tensors on a CUDA machine: the values are those of the same calls on CPU tensors, and the
outputs stay on ``neuron``. The worker (workers/gloo_neuron_tensors.py, which lists the checks) runs on
``neuron`` tensors with ``"gloo"`` and with ``"cpu:gloo,neuron:gloo"``, and on CPU tensors with ``"gloo"``,
the reference the same assertions describe."""
from __future__ import annotations

import re

import pytest

from .launch import report, torchrun


@pytest.mark.parametrize(("backend", "device", "n"), [
    ("gloo", "neuron", 17),
    ("cpu:gloo,neuron:gloo", "neuron", 17),
    ("gloo", "cpu", 16),
])
def test_gloo_group_runs_collectives_of_neuron_tensors(backend, device, n):
    proc = torchrun("gloo_neuron_tensors", 2, backend, device)
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(c) for r, c in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    # rank 0 checks reduce and gather's root results, rank 1 the received tensor
    assert counts == {0: n + 2, 1: n}, report(proc)
