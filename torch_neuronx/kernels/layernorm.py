"""LayerNorm as an NKI kernel with Vector-Engine statistics (``bn_stats`` / ``bn_aggr``) and torch op.

    y = (x - mean) * rsqrt(var + eps) * weight + bias          (torch.nn.functional.layer_norm)

Op: ``torch.ops.neuron_kernels.layer_norm(x, weight, bias, eps) -> (y, mean, rstd)``;
:func:`layer_norm` returns ``y``.
    x: [..., H] float32 / bfloat16 / float16 on ``neuron``; weight, bias: [H]; eps: float. The
    function :func:`layer_norm` also takes ``None`` for either (as ``F.layer_norm``: ones / zeros);
    other shapes raise ``ValueError``; no rows give empty results.
    y: [..., H] x.dtype; mean, rstd: [...] float32 (saved for backward).
Statistics: ``bn_stats`` over free chunks of at most 512 (``nl.tile_size.bn_stats_fmax``; the chunk is
the largest divisor of H <= 512), aggregated with ``bn_aggr`` (AWS LayerNorm tutorial: ~15% faster
than mean/variance by reductions). Backward is a PyTorch-op implementation on ``neuron`` tensors
(registered with ``register_autograd``; no NKI backward yet):
    xhat = (x - mean) * rstd, g = dy * weight,
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), dweight = sum(dy * xhat), dbias = sum(dy).
"""
from __future__ import annotations

import torch

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.tile import NkiTensor
from torch_neuronx.nki.torch_op import nki_op

from ._common import LIB, chunk, rows

__all__ = ["layer_norm", "layernorm_fwd_kernel"]


@nki.jit
def layernorm_fwd_kernel(x: NkiTensor, gamma: NkiTensor, beta: NkiTensor,
                         eps: float) -> tuple[NkiTensor, NkiTensor, NkiTensor]:
    """x [N, H], gamma/beta [H] -> (y [N, H] x.dtype, mean [N, 1] fp32, rstd [N, 1] fp32)."""
    N, H = x.shape
    FC = chunk(H, nl.tile_size.bn_stats_fmax)
    n_chunks = H // FC
    SD = nl.tile_size.bn_stats_dim
    y = nl.ndarray((N, H), dtype=x.dtype, buffer=nl.shared_hbm)
    mean_out = nl.ndarray((N, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    rstd_out = nl.ndarray((N, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_h = nl.arange(H)[None, :]
    i_one = nl.arange(1)[:, None]
    i_0 = nl.arange(1)[None, :]
    i_s = nl.arange(SD)[None, :]
    i_c = nl.arange(FC)[None, :]
    g = nl.load(gamma.reshape((1, H))[i_one, i_h], dtype=nl.float32).broadcast_to((128, H))
    b = nl.load(beta.reshape((1, H))[i_one, i_h], dtype=nl.float32).broadcast_to((128, H))
    for t in nl.affine_range((N + 127) // 128):
        r_ = t * 128 + i_p
        live = r_ < N
        tile = nl.load(x[r_, i_h], mask=live, dtype=nl.float32)
        stats = nl.ndarray((128, SD * n_chunks), dtype=nl.float32)
        for c in nl.affine_range(n_chunks):
            stats[i_p, c * SD + i_s] = nisa.bn_stats(tile[i_p, c * FC + i_c], mask=live)
        mv = nisa.bn_aggr(stats, mask=live)                               # [128, 2]: mean, var
        mean = mv[i_p, 0]
        rstd = nl.rsqrt(nl.add(mv[i_p, 1], eps, mask=live), mask=live)
        norm = nisa.tensor_scalar(tile, nl.subtract, mean, op1=nl.multiply, operand1=rstd, mask=live,
                                  dtype=nl.float32)
        out = nl.add(nl.multiply(norm, g, mask=live), b, mask=live, dtype=x.dtype)
        nl.store(y[r_, i_h], value=out, mask=live)
        nl.store(mean_out[r_, i_0], value=mean, mask=live)
        nl.store(rstd_out[r_, i_0], value=rstd, mask=live)
    return y, mean_out, rstd_out


@nki_op(f"{LIB}::layer_norm", mutates_args=())
def _layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    H = x.shape[-1] if x.dim() else -1
    if tuple(weight.shape) != (H,) or tuple(bias.shape) != (H,):
        raise ValueError(f"neuron_kernels.layer_norm: needs x [..., H], weight [H] and bias [H], got x "
                         f"{tuple(x.shape)}, weight {tuple(weight.shape)}, bias {tuple(bias.shape)}")
    if x.numel() == 0:
        stats = x.new_empty(x.shape[:-1], dtype=torch.float32)
        return torch.empty_like(x), stats, stats.clone()
    y, mean, rstd = layernorm_fwd_kernel(rows(x), weight, bias, eps)
    return y.reshape(x.shape), mean.reshape(x.shape[:-1]), rstd.reshape(x.shape[:-1])


def _setup(ctx, inputs, output):
    x, weight, _, _ = inputs
    ctx.save_for_backward(x, weight, output[1], output[2])


def _backward(ctx, dy, _dmean, _drstd):
    """PyTorch ops on neuron tensors (see module docstring)."""
    x, weight, mean, rstd = ctx.saved_tensors
    H = x.shape[-1]
    xhat = (x.float() - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)
    dyf = dy.float()
    g = dyf * weight.float()
    dx = rstd.unsqueeze(-1) * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    dw = (dyf * xhat).reshape(-1, H).sum(0)
    db = dyf.reshape(-1, H).sum(0)
    return dx.to(x.dtype), dw.to(weight.dtype), db.to(weight.dtype), None


_layer_norm.register_autograd(_backward, setup_context=_setup)


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
               eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm of ``x`` [..., H] over the last axis (see module docstring); differentiable.

    ``weight`` / ``bias`` ``None`` mean ones / zeros of x's dtype (``nn.LayerNorm(elementwise_affine=False)``
    or ``bias=False``). Raises ``ValueError`` when a given weight or bias is not [H].
    """
    if weight is None or bias is None:
        H = x.shape[-1] if x.dim() else 0
        weight = x.new_ones(H) if weight is None else weight
        bias = torch.zeros_like(weight) if bias is None else bias
    return _layer_norm(x, weight, bias, float(eps))[0]
