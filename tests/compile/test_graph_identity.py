"""Recompile diagnoses name the user's function: a compiled module is its class's ``forward``, not
Dynamo's internal wrapper."""
from __future__ import annotations

import warnings

import torch

import torch_neuronx


def _recompiled_function_name(compiled, shape_of) -> str:
    """Runs ``compiled`` on two shapes (``shape_of(1)``, ``shape_of(2)``) and returns the function
    name of the one recompile it records."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for n in range(1, 3):
            compiled(torch.ones(shape_of(n), device="neuron"))
    recompiles = torch_neuronx.get_dynamo_metrics()["recompiles"]
    assert len(recompiles) == 1, recompiles
    return recompiles[0]["function"]


def test_a_compiled_module_is_named_by_its_forward():
    torch._dynamo.reset()
    torch_neuronx.reset_dynamo_metrics()
    model = torch.compile(torch.nn.Linear(4, 2).to("neuron"), backend="neuron")
    name = _recompiled_function_name(model, lambda n: (n, 4))
    assert name.startswith("'Linear.forward' (linear.py:"), name


def test_a_compiled_container_is_named_by_its_forward_not_an_inlined_helper():
    # Dynamo lists the inlined functions as each one finishes (innermost first): for
    # nn.Sequential the first is Sequential.__iter__, which the user never called.
    torch._dynamo.reset()
    torch_neuronx.reset_dynamo_metrics()
    model = torch.compile(torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.GELU()).to("neuron"),
                          backend="neuron")
    name = _recompiled_function_name(model, lambda n: (n, 4))
    assert name.startswith("'Sequential.forward' (container.py:"), name


def test_a_compiled_function_is_named_by_itself_not_a_function_it_calls():
    torch._dynamo.reset()
    torch_neuronx.reset_dynamo_metrics()

    def scale(x):
        return x * 2

    def outer(x):
        return scale(x).sum()

    compiled = torch.compile(outer, backend="neuron")
    name = _recompiled_function_name(compiled, lambda n: (n,))
    assert name.startswith("'outer' (test_graph_identity.py:"), name
