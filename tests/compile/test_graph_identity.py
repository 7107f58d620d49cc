"""Recompile diagnoses name the user's function: a compiled module is its class's ``forward``, not
Dynamo's internal wrapper."""
from __future__ import annotations

import warnings

import torch

import torch_neuronx


def test_a_compiled_module_is_named_by_its_forward():
    torch._dynamo.reset()
    torch_neuronx.reset_dynamo_metrics()
    model = torch.compile(torch.nn.Linear(4, 2).to("neuron"), backend="neuron")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for n in range(1, 3):
            model(torch.ones(n, 4, device="neuron"))
    recompiles = torch_neuronx.get_dynamo_metrics()["recompiles"]
    assert len(recompiles) == 1
    assert recompiles[0]["function"].startswith("'Linear.forward' (linear.py:"), recompiles[0]
