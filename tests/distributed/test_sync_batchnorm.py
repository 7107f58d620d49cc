"""nn.SyncBatchNorm trains on backend "neuron" like nn.BatchNorm2d over the whole batch on the
CPU (see workers/sync_batchnorm.py): PyTorch sends neuron inputs to its CUDA-only batch-norm
statistics ops, which the device implements."""
from __future__ import annotations

import re

from .launch import report, torchrun


def test_sync_batchnorm_matches_full_batch_batchnorm():
    proc = torchrun("sync_batchnorm", 2)
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    assert counts == {0: 13, 1: 13}, report(proc)
