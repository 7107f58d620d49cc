"""Row softmax over the last axis as an NKI kernel and torch op.

Op: ``torch.ops.neuron_kernels.softmax(x) -> y``, x: [..., C] float32 / bfloat16 / float16 on
``neuron``; y: same shape and dtype. Any row count (masked tail tile; none gives an empty y); C up
to ~8K (one [128, C] fp32 tile per row strip in SBUF). Engines: row max on the Vector Engine
(negated, so it is the bias of the next step), exp(x - max) with its row sum fused on the Scalar
Engine (``activation_reduce``), reciprocal and scale on the Vector Engine. Math in fp32.
Backward: PyTorch ops on ``neuron`` tensors, ``dx = y * (dy - sum(dy * y, -1))`` (registered with
``register_autograd``; no NKI backward yet).
"""
from __future__ import annotations

import torch

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.tile import NkiTensor
from torch_neuronx.nki.torch_op import nki_op

from ._common import LIB, rows

__all__ = ["softmax", "softmax_kernel"]


@nki.jit
def softmax_kernel(x: NkiTensor) -> NkiTensor:
    """x [R, C] -> softmax along C, [R, C] x.dtype."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    for t in nl.affine_range((R + 127) // 128):
        r_ = t * 128 + i_p
        live = r_ < R
        tile = nl.load(x[r_, i_f], mask=live, dtype=nl.float32)
        neg_max = nisa.tensor_reduce(nl.max, tile, axis=1, negate=True, keepdims=True, mask=live)
        row_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        e = nisa.activation_reduce(nl.exp, tile, reduce_op=nl.add, reduce_res=row_sum, bias=neg_max,
                                   mask=live)
        inv = nl.reciprocal(row_sum, mask=live)
        nl.store(out[r_, i_f], value=nisa.tensor_scalar(e, nl.multiply, inv, dtype=x.dtype, mask=live),
                 mask=live)
    return out


@nki_op(f"{LIB}::softmax", mutates_args=())
def _softmax(x: torch.Tensor) -> torch.Tensor:
    if x.numel() == 0:                    # no rows or no columns: nothing to compute, as torch.softmax
        return torch.empty_like(x)
    return softmax_kernel(rows(x)).reshape(x.shape)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _backward(ctx, dy):
    (y,) = ctx.saved_tensors
    yf = y.float()
    dyf = dy.float()
    return (yf * (dyf - (dyf * yf).sum(-1, keepdim=True))).to(y.dtype)


_softmax.register_autograd(_backward, setup_context=_setup)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax of ``x`` [..., C] over the last axis (see module docstring); differentiable."""
    return _softmax(x)
