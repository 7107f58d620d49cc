"""The Inductor registration of the ``neuron`` device: the one patch of a private torch method
(``BaseSchedulerNode.is_cpu``) is pinned to torch 2.13, written against the original's source,
treats ``neuron`` (and only CPU-like devices) as CPU, and is applied once."""
from __future__ import annotations

import inspect

import torch

from torch_neuronx.compile import inductor_device


def test_scheduler_patch_is_pinned_and_treats_neuron_as_cpu():
    inductor_device.register()
    from torch._inductor import scheduler

    assert torch.__version__.startswith(inductor_device.PINNED_TORCH + ".")
    assert scheduler.BaseSchedulerNode.is_cpu is inductor_device.patched_is_cpu
    original = inspect.getsource(inductor_device.original_is_cpu())
    assert 'device.type == "cpu"' in original  # what the patch was written against

    class Node:
        def __init__(self, device):
            self.device = device

        def get_device(self):
            return self.device

    patched = inductor_device.patched_is_cpu
    assert patched(Node(torch.device("neuron", 0))) and patched(Node(torch.device("cpu")))
    assert not patched(Node(torch.device("meta"))) and not patched(Node(None))
    inductor_device.register()  # idempotent
    assert scheduler.BaseSchedulerNode.is_cpu is inductor_device.patched_is_cpu
