"""The C++ process group's Python call forms (single tensor, ReduceOp, root as int) on backend "neuron",
and DDP + Join with uneven inputs and an unused parameter, which calls one of them
(workers/pg_python_forms.py lists the checks)."""
from __future__ import annotations

import re

from .launch import report, torchrun


def test_single_tensor_forms_and_ddp_join_with_unused_parameters():
    proc = torchrun("pg_python_forms", 2)
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    assert counts == {0: 6, 1: 6}, report(proc)
