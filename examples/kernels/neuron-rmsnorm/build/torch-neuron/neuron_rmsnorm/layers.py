"""Layers of the neuron-rmsnorm kernel repository (``kernels`` replaces a layer's ``forward`` with
these; the layer keeps its own parameters and attributes).

``RMSNorm``: forward for any module with ``weight`` [H] and ``variance_epsilon`` (transformers'
``LlamaRMSNorm`` and its copies): x [..., H] float32/bfloat16 on ``neuron`` -> [..., H], computed by
the NKI RMSNorm kernel (forward and backward on the simulated NeuronCore). ``kernels`` requires a
stateless class: no ``__init__``, no members besides ``forward``, ``can_torch_compile`` and
``has_backward``.
"""
import torch
from torch import nn

from torch_neuronx.kernels import rms_norm


class RMSNorm(nn.Module):
    can_torch_compile: bool = True    # an nki_op with a fake implementation: one node in a graph
    has_backward: bool = True         # NKI backward registered with register_autograd

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return rms_norm(hidden_states, self.weight, self.variance_epsilon)


__all__ = ["RMSNorm"]
