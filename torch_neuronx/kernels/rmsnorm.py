"""RMSNorm as an NKI kernel (legacy API) and torch op, forward and backward both in NKI.

    y = (x * rsqrt(mean(x^2, -1) + eps)).to(x.dtype) * weight      (transformers' LlamaRMSNorm)

Op: ``torch.ops.neuron_kernels.rms_norm(x, weight, eps) -> (y, rstd)``; :func:`rms_norm` returns ``y``.
    x: [..., H] float32 / bfloat16 / float16 on ``neuron``; weight: [H]; eps: float.
    y: [..., H], dtype float32 if x or weight is float32, else x.dtype; rstd: [...] float32.
Backward (NKI, :func:`rmsnorm_bwd_kernel`): with n = x * rstd,
    dx = rstd * (dy*w - n * mean(dy*w*n, -1)),   dweight = sum_rows(dy * n)
(dweight reduced over rows on the Tensor Engine: ones[128,1]^T @ (dy*n) accumulated in PSUM).
Limits: in backward, dweight is accumulated in at most 8 PSUM banks of a chunk of H (the largest
divisor of H <= 512): H <= 4096 and H // chunk <= 8, so H = 4096 or 4000 trains but a prime H such as
1031 does not (:func:`rms_norm` raises ``ValueError`` before the forward when a gradient is needed);
rows are any count (masked tail; no rows give empty results). weight must be [H] (``ValueError``).
"""
from __future__ import annotations

import torch

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.tile import NkiTensor
from torch_neuronx.nki.torch_op import nki_op

from ._common import LIB, chunk, rows

__all__ = ["rms_norm", "rmsnorm_fwd_kernel", "rmsnorm_bwd_kernel"]


@nki.jit
def rmsnorm_fwd_kernel(x: NkiTensor, w: NkiTensor, eps: float) -> tuple[NkiTensor, NkiTensor]:
    """x [N, H], w [H], eps -> (y [N, H], rstd [N, 1] fp32). One 128-row tile per iteration."""
    N, H = x.shape
    out_dtype = nl.float32 if nl.float32 in (x.dtype, w.dtype) else x.dtype
    y = nl.ndarray((N, H), dtype=out_dtype, buffer=nl.shared_hbm)
    rstd = nl.ndarray((N, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_h = nl.arange(H)[None, :]
    i_0 = nl.arange(1)[None, :]
    w_all = nl.load(w.reshape((1, H))[nl.arange(1)[:, None], i_h], dtype=nl.float32).broadcast_to((128, H))
    for t in nl.affine_range((N + 127) // 128):
        r_ = t * 128 + i_p
        live = r_ < N
        xt = nl.load(x[r_, i_h], mask=live, dtype=nl.float32)
        ms = nl.mean(nl.square(xt, mask=live), axis=1, keepdims=True, mask=live)
        r = nl.rsqrt(nl.add(ms, eps, mask=live), mask=live)                   # [128, 1] fp32
        n = nl.multiply(xt, r, mask=live, dtype=x.dtype)                      # .to(input dtype)
        nl.store(y[r_, i_h], value=nl.multiply(n, w_all, mask=live, dtype=out_dtype), mask=live)
        nl.store(rstd[r_, i_0], value=r, mask=live)
    return y, rstd


@nki.jit
def rmsnorm_bwd_kernel(dy: NkiTensor, x: NkiTensor, w: NkiTensor,
                       rstd: NkiTensor) -> tuple[NkiTensor, NkiTensor]:
    """dy, x [N, H], w [H], rstd [N, 1] -> (dx [N, H] x.dtype, dw [1, H] fp32)."""
    N, H = x.shape
    FC = chunk(H, 512)
    n_chunks = H // FC
    assert n_chunks <= 8, f"rms_norm backward: H={H} needs {n_chunks} PSUM banks (max 8)"
    dx = nl.ndarray((N, H), dtype=x.dtype, buffer=nl.shared_hbm)
    dw = nl.ndarray((1, H), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_h = nl.arange(H)[None, :]
    i_0 = nl.arange(1)[None, :]
    i_one = nl.arange(1)[:, None]
    i_fc = nl.arange(FC)[None, :]
    w_all = nl.load(w.reshape((1, H))[i_one, i_h], dtype=nl.float32).broadcast_to((128, H))
    ones = nl.ones((128, 1), dtype=nl.float32)
    accs = [nl.zeros((1, FC), dtype=nl.float32, buffer=nl.psum) for _ in range(n_chunks)]
    for t in nl.affine_range((N + 127) // 128):
        r_ = t * 128 + i_p
        live = r_ < N
        xt = nl.zeros((128, H), dtype=nl.float32)              # dead rows stay 0 (column sums)
        xt[i_p, i_h] = nl.load(x[r_, i_h], mask=live, dtype=nl.float32)
        gt = nl.zeros((128, H), dtype=nl.float32)
        gt[i_p, i_h] = nl.load(dy[r_, i_h], mask=live, dtype=nl.float32)
        r = nl.zeros((128, 1), dtype=nl.float32)
        r[i_p, i_0] = nl.load(rstd[r_, i_0], mask=live)
        n = nl.multiply(xt, r)
        dn = nl.multiply(gt, w_all)
        c = nl.mean(nl.multiply(dn, n), axis=1, keepdims=True)
        dxt = nl.multiply(nl.subtract(dn, nl.multiply(n, c)), r, dtype=x.dtype)
        nl.store(dx[r_, i_h], value=dxt, mask=live)
        p = nl.multiply(gt, n)
        for j in nl.static_range(n_chunks):
            accs[j] += nisa.nc_matmul(ones, p[i_p, j * FC + i_fc])   # column sums on the PE
    for j in nl.static_range(n_chunks):
        nl.store(dw[i_one, j * FC + i_fc], value=nl.copy(accs[j]))
    return dx, dw


def _check(x: torch.Tensor, weight: torch.Tensor) -> None:
    """Raises ``ValueError`` unless ``weight`` is [H] for ``x`` [..., H]."""
    if x.dim() == 0 or tuple(weight.shape) != (x.shape[-1],):
        raise ValueError(f"neuron_kernels.rms_norm: needs x [..., H] and weight [H], got x {tuple(x.shape)} "
                         f"and weight {tuple(weight.shape)}")


def _backward_check(H: int) -> None:
    """Raises ``ValueError`` when the backward kernel cannot hold dweight for ``H`` (module docstring)."""
    banks = H // chunk(H, 512)
    if banks > 8:
        raise ValueError(f"neuron_kernels.rms_norm: the backward kernel needs H // (largest divisor of H "
                         f"<= 512) <= 8 PSUM banks for dweight; H={H} needs {banks}. Train with "
                         "torch.nn.RMSNorm (or LlamaRMSNorm), or call rms_norm under torch.no_grad()")


@nki_op(f"{LIB}::rms_norm", mutates_args=())
def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    _check(x, weight)
    if x.numel() == 0:
        out_dtype = torch.float32 if torch.float32 in (x.dtype, weight.dtype) else x.dtype
        return x.new_empty(x.shape, dtype=out_dtype), x.new_empty(x.shape[:-1], dtype=torch.float32)
    y, rstd = rmsnorm_fwd_kernel(rows(x), weight, eps)
    return y.reshape(x.shape), rstd.reshape(x.shape[:-1])


@nki_op(f"{LIB}::rms_norm_backward", mutates_args=())
def _rms_norm_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                       rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _check(x, weight)
    _backward_check(x.shape[-1])
    if x.numel() == 0:
        return torch.empty_like(x), torch.zeros_like(weight)
    dx, dw = rmsnorm_bwd_kernel(rows(dy), rows(x), weight, rstd.reshape(-1, 1))
    return dx.reshape(x.shape), dw.reshape(weight.shape).to(weight.dtype)


def _setup(ctx, inputs, output):
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output[1])


def _backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = _rms_norm_backward(dy, x, weight, rstd)
    return dx, dw, None


_rms_norm.register_autograd(_backward, setup_context=_setup)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of ``x`` [..., H] with ``weight`` [H] (see module docstring); differentiable.

    Raises:
        ValueError: ``weight`` is not [H]; or a gradient is needed (grad mode on and ``x`` or
            ``weight`` requires grad) and H is beyond the backward kernel's limit (module docstring),
            raised here rather than after the forward, in the backward.
    """
    _check(x, weight)
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
        _backward_check(x.shape[-1])
    return _rms_norm(x, weight, float(eps))[0]
