"""``_c10d_functional.all_gather_into_tensor_out`` on a "neuron" group: the ranks' inputs gathered into
the given tensor, as on gloo (workers/functional_out.py lists the checks)."""
from __future__ import annotations

import re

from .launch import report, torchrun


def test_all_gather_into_tensor_out():
    proc = torchrun("functional_out", 2)
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    assert counts == {0: 6, 1: 6}, report(proc)
