"""Compiled data, fully sharded and tensor parallelism on 2 ranks over backend "neuron": DDP
(backend auto-selected, and a BatchNorm model whose buffers DDP broadcasts inside the compiled
region), FSDP2 with compiled blocks, and DTensor tensor parallelism; the loss of two SGD steps and
the first step's gradients equal the same step on the CPU (worker
``tests/distributed/workers/compiled.py``)."""
from __future__ import annotations

import re

from .launch import report, torchrun

MODES = ("ddp", "ddp_bn", "fsdp2", "tp")


def test_compiled_ddp_fsdp2_tp_match_cpu():
    proc = torchrun("compiled", 2, *MODES, timeout=420)
    assert proc.returncode == 0, report(proc)
    rows = re.findall(r"\[rank (\d)\] RESULT (\w+) (\S+) (\S+) (\S+)", proc.stdout)
    assert sorted((rank, mode) for rank, mode, *_ in rows) == sorted(
        (str(r), m) for r in range(2) for m in MODES), report(proc)
    for rank, mode, loss_err, grad_err, loss2_err in rows:
        assert float(loss_err) <= 1e-5, f"rank {rank} {mode}: loss differs from CPU by {loss_err}"
        assert float(grad_err) <= 1e-5, f"rank {rank} {mode}: gradients differ from CPU by {grad_err}"
        assert float(loss2_err) <= 1e-5, f"rank {rank} {mode}: second-step loss differs by {loss2_err}"
