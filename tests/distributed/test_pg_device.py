"""The "neuron" process group records its device type as gloo ("cpu") and NCCL ("cuda") do, so
the PyTorch paths that ask a group for its device work (see workers/pg_device.py): FSDP's sharded
state dict saved and loaded back, and ``set_model_state_dict(broadcast_from_rank0=True)``,
compared with the same model on the CPU."""
from __future__ import annotations

import re

from .launch import report, torchrun


def test_group_device_and_state_dict_paths():
    proc = torchrun("pg_device", 2)
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    assert counts == {0: 15, 1: 15}, report(proc)


def test_cpu_gloo_in_the_backend_string_serves_cpu_and_async_save(tmp_path):
    """"cpu:gloo,neuron:neuron" keeps its cpu:gloo part (c10d drops it for a Python group): the group
    lists both devices and DCP's async_save, which requires a CPU backend, saves and loads back."""
    proc = torchrun("pg_cpu_gloo", 2, str(tmp_path / "ckpt"))
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    assert counts == {0: 8, 1: 8}, report(proc)
