"""Fused attention softmax(Q K^T * scale) V as an NKI kernel (one 128-row Q strip at a time) and op.

Op: ``torch.ops.neuron_kernels.attention(q, k, v, scale) -> out``
    q, k, v: [B, heads, S, d] (or [BH, S, d], [S, d]) float32 / bfloat16 on ``neuron``, all three of
    the same shape and dtype (self-attention: as many key/value heads and keys as query heads and
    queries); S a multiple of 128; d <= 128; scale: float (usually d ** -0.5). out: q's shape,
    q.dtype. Non-causal, no mask (ViT-style encoder attention). Other shapes (grouped-query heads,
    a key length other than the query length, a value head size other than d) raise ``ValueError``:
    repeat the key/value heads (``k.repeat_interleave(n_rep, dim=-3)``) or use
    ``F.scaled_dot_product_attention``. Empty inputs (no batch or head) give an empty output.
Kernel (SPMD grid: one program per batch*head): K^T loaded once by DMA transpose ([d, S], d on the
partitions); per 128-row Q strip: scores [128, S] = Q K^T in PSUM chunks of <= 512 columns, scaled
into SBUF (fp32, never written to HBM), row max (Vector), exp with fused row sum (Scalar), P cast to
the input dtype, 128x128 blocks of P transposed on the Tensor Engine and P V accumulated in PSUM over
key blocks, then scaled by 1/rowsum. Memory per strip: S * 4 bytes per partition for the scores.
Backward: PyTorch ops on ``neuron`` tensors that recompute P (registered with ``register_autograd``;
no NKI backward yet): dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)), dQ = dS K scale,
dK = dS^T Q scale.
"""
from __future__ import annotations

import torch

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.tile import NkiTensor
from torch_neuronx.nki.torch_op import nki_op

from ._common import LIB, chunk

__all__ = ["attention", "attention_kernel"]


@nki.jit
def attention_kernel(q: NkiTensor, k: NkiTensor, v: NkiTensor, scale: float) -> NkiTensor:
    """q, k, v [BH, S, d] -> [BH, S, d] q.dtype; launched with grid [BH]."""
    BH, S, d = q.shape
    assert S % 128 == 0 and d <= 128, f"attention: S={S} must be a multiple of 128, d={d} <= 128"
    SC = chunk(S, 512)
    out = nl.ndarray((BH, S, d), dtype=q.dtype, buffer=nl.shared_hbm)
    b = nl.program_id(0)
    kT = nl.load_transpose2d(k[b, :, :])                               # [d, S]
    v_tiles = [nl.load(v[b, j * 128:(j + 1) * 128, :]) for j in range(S // 128)]
    for qi in nl.affine_range(S // 128):
        qT = nl.load_transpose2d(q[b, qi * 128:(qi + 1) * 128, :])     # [d, 128]
        scores = nl.ndarray((128, S), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(S // SC):
            s_psum = nisa.nc_matmul(qT, kT[:, c * SC:(c + 1) * SC])    # [128, SC] fp32
            scores[:, c * SC:(c + 1) * SC] = nl.multiply(s_psum, scale)
        neg_max = nisa.tensor_reduce(nl.max, scores, axis=1, negate=True, keepdims=True)
        row_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        probs = nisa.activation_reduce(nl.exp, scores, reduce_op=nl.add, reduce_res=row_sum,
                                       bias=neg_max, dtype=q.dtype)
        acc = nl.zeros((128, d), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(S // 128):
            pT = nl.copy(nisa.nc_transpose(probs[:, j * 128:(j + 1) * 128]))   # [kv 128, q 128]
            acc += nisa.nc_matmul(pT, v_tiles[j])                              # [q 128, d]
        inv = nl.reciprocal(row_sum)
        nl.store(out[b, qi * 128:(qi + 1) * 128, :], value=nl.multiply(acc, inv, dtype=q.dtype))
    return out


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Raises ``ValueError`` for inputs the kernel does not take (see the module docstring): it reads
    keys and values with the query's shape, so any other shape would be silently misread."""
    if q.dim() < 2 or q.shape != k.shape or q.shape != v.shape or not q.dtype == k.dtype == v.dtype:
        raise ValueError(
            "neuron_kernels.attention: q, k and v must have the same shape [..., S, d] and dtype "
            f"(self-attention), got q {tuple(q.shape)} {q.dtype}, k {tuple(k.shape)} {k.dtype}, "
            f"v {tuple(v.shape)} {v.dtype}. For grouped-query attention repeat the key/value heads "
            "(k.repeat_interleave(n_rep, dim=-3)); for other shapes use F.scaled_dot_product_attention")
    S, d = q.shape[-2:]
    if S % 128 or d > 128:
        raise ValueError(f"neuron_kernels.attention: sequence length {S} must be a multiple of 128 and "
                         f"head dim {d} <= 128 (pad the sequence, or use F.scaled_dot_product_attention)")


@nki_op(f"{LIB}::attention", mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    _check(q, k, v)
    if q.numel() == 0:
        return torch.empty_like(q)
    S, d = q.shape[-2:]
    q3, k3, v3 = (t.reshape(-1, S, d) for t in (q, k, v))
    return attention_kernel[q3.shape[0]](q3, k3, v3, scale).reshape(q.shape)


def _setup(ctx, inputs, output):
    q, k, v, scale = inputs
    ctx.save_for_backward(q, k, v)
    ctx.scale = scale


def _backward(ctx, do):
    q, k, v = ctx.saved_tensors
    s = ctx.scale
    qf, kf, vf, dof = q.float(), k.float(), v.float(), do.float()
    p = torch.softmax(qf @ kf.transpose(-1, -2) * s, dim=-1)
    dv = p.transpose(-1, -2) @ dof
    dp = dof @ vf.transpose(-1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq = ds @ kf * s
    dk = ds.transpose(-1, -2) @ qf * s
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None


_attention.register_autograd(_backward, setup_context=_setup)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """softmax(q k^T * scale) v (see module docstring); ``scale`` defaults to d ** -0.5;
    differentiable. Raises ``ValueError`` when q, k and v differ in shape or dtype, when S is not a
    multiple of 128 or when d > 128."""
    _check(q, k, v)
    d = q.shape[-1]
    return _attention(q, k, v, float(scale if scale is not None else d ** -0.5))
