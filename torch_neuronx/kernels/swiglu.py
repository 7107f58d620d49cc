"""SwiGLU MLP as one fused NKI kernel and torch op: out = (silu(x @ w_gate) * (x @ w_up)) @ w_down.

Op: ``torch.ops.neuron_kernels.swiglu_mlp(x, w_gate, w_up, w_down) -> out``
    x: [..., H]; w_gate, w_up: [H, I]; w_down: [I, H] (``x @ W`` layout: pass ``linear.weight.T`` for
    ``nn.Linear`` weights); float32 / bfloat16 on ``neuron``; out: [..., H] x.dtype.
    H and I: multiples of min(128, H) / min(128, I) (contraction tiles on the partitions); one dtype
    for all four. Other shapes or mixed dtypes raise ``ValueError`` (the kernel reads the weights with
    x's H and w_gate's I, so a mismatched weight would otherwise be read in part); no rows give an
    empty output.
Per 128-row strip (rows padded with zeros to a multiple of 128 by the wrapper): x strip loaded
transposed ([H-tile, 128], the contraction on partitions), gate and up matmuls accumulated in PSUM over
H tiles (fp32), silu(gate) * up on the Scalar/Vector engines straight from PSUM into an SBUF [128, I]
tile (never written to HBM), transposed 128x128 blocks on the Tensor Engine, down projection
accumulated in PSUM over I tiles. Weights are loaded once when they fit in half of SBUF
(<= 96 KiB per partition), else once per strip.
Backward: PyTorch ops on ``neuron`` tensors that recompute gate/up (registered with
``register_autograd``; no NKI backward yet).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.tile import NkiTensor
from torch_neuronx.nki.torch_op import nki_op

from ._common import LIB, chunk, pad_rows, rows

__all__ = ["swiglu_mlp", "swiglu_kernel"]


@nki.jit
def swiglu_kernel(x: NkiTensor, wg: NkiTensor, wu: NkiTensor, wd: NkiTensor) -> NkiTensor:
    """x [N, H] (N a multiple of 128), wg/wu [H, I], wd [I, H] -> [N, H] x.dtype."""
    N, H = x.shape
    I = wg.shape[1]  # noqa: E741  (the intermediate size, named as in the shapes above)
    KT, IT = min(128, H), min(128, I)
    assert N % 128 == 0 and H % KT == 0 and I % IT == 0, f"swiglu: N={N}, H={H}, I={I}"
    IC, HC = chunk(I, 512), chunk(H, 512)
    nk, ni = H // KT, I // IT
    out = nl.ndarray((N, H), dtype=x.dtype, buffer=nl.shared_hbm)
    wbytes = (2 * nk * I + ni * H) * (2 if x.dtype != nl.float32 else 4)
    hoist = wbytes <= 96 * 1024

    def load_weights():
        g = [nl.load(wg[k * KT:(k + 1) * KT, :]) for k in range(nk)]
        u = [nl.load(wu[k * KT:(k + 1) * KT, :]) for k in range(nk)]
        d = [nl.load(wd[j * IT:(j + 1) * IT, :]) for j in range(ni)]
        return g, u, d
    if hoist:
        W = load_weights()
    for t in nl.affine_range(N // 128):
        r0 = t * 128
        wg_t, wu_t, wd_t = W if hoist else load_weights()
        xT = [nl.load_transpose2d(x[r0:r0 + 128, k * KT:(k + 1) * KT]) for k in range(nk)]
        h = nl.ndarray((128, I), dtype=x.dtype)
        for c in nl.affine_range(I // IC):
            g_ps = nl.zeros((128, IC), dtype=nl.float32, buffer=nl.psum)
            u_ps = nl.zeros((128, IC), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(nk):
                g_ps += nisa.nc_matmul(xT[k], wg_t[k][:, c * IC:(c + 1) * IC])
                u_ps += nisa.nc_matmul(xT[k], wu_t[k][:, c * IC:(c + 1) * IC])
            h[:, c * IC:(c + 1) * IC] = nl.multiply(nl.silu(g_ps, dtype=nl.float32), u_ps, dtype=x.dtype)
        hT = [nl.copy(nisa.nc_transpose(h[:, j * IT:(j + 1) * IT])) for j in range(ni)]
        for c in nl.affine_range(H // HC):
            o_ps = nl.zeros((128, HC), dtype=nl.float32, buffer=nl.psum)
            for j in nl.affine_range(ni):
                o_ps += nisa.nc_matmul(hT[j], wd_t[j][:, c * HC:(c + 1) * HC])
            nl.store(out[r0:r0 + 128, c * HC:(c + 1) * HC], value=nl.copy(o_ps, dtype=x.dtype))
    return out


def _check(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> None:
    """Raises ``ValueError`` for shapes or dtypes the kernel does not take (module docstring)."""
    H = x.shape[-1] if x.dim() else 0
    I = w_gate.shape[-1] if w_gate.dim() == 2 else 0  # noqa: E741  (the intermediate size)
    got = (f"got x {tuple(x.shape)}, w_gate {tuple(w_gate.shape)}, w_up {tuple(w_up.shape)}, "
           f"w_down {tuple(w_down.shape)}")
    if not (x.dim() >= 1 and H > 0 and I > 0 and tuple(w_gate.shape) == (H, I)
            and tuple(w_up.shape) == (H, I) and tuple(w_down.shape) == (I, H)):
        raise ValueError(f"neuron_kernels.swiglu_mlp: needs x [..., H], w_gate [H, I], w_up [H, I], "
                         f"w_down [I, H] (x @ W layout: pass nn.Linear weights as linear.weight.T); {got}")
    if H % min(128, H) or I % min(128, I):
        raise ValueError(f"neuron_kernels.swiglu_mlp: H={H} and I={I} must each be at most 128 or a "
                         "multiple of 128 (the contraction is tiled over 128 partitions); pad the weights "
                         "with zeros, or use the reference (F.silu(x @ w_gate) * (x @ w_up)) @ w_down")
    if not x.dtype == w_gate.dtype == w_up.dtype == w_down.dtype:
        raise ValueError(f"neuron_kernels.swiglu_mlp: x and the weights must share one dtype, got "
                         f"{x.dtype}, {w_gate.dtype}, {w_up.dtype}, {w_down.dtype}: convert the weights "
                         "with .to(x.dtype)")


@nki_op(f"{LIB}::swiglu_mlp", mutates_args=())
def _swiglu_mlp(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor,
                w_down: torch.Tensor) -> torch.Tensor:
    _check(x, w_gate, w_up, w_down)
    if x.numel() == 0:
        return torch.empty_like(x)
    x2 = rows(x)
    n = x2.shape[0]
    out = swiglu_kernel(pad_rows(x2), w_gate, w_up, w_down)
    return out[:n].reshape(x.shape)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward(ctx, dy):
    """Recompute in PyTorch: g = x wg, u = x wu, s = silu(g), h = s u; out = h wd."""
    x, wg, wu, wd = ctx.saved_tensors
    xf, dyf = rows(x).float(), rows(dy).float()
    g, u = xf @ wg.float(), xf @ wu.float()
    sig = torch.sigmoid(g)
    s = g * sig
    h = s * u
    dwd = h.T @ dyf
    dh = dyf @ wd.float().T
    du = dh * s
    dg = dh * u * sig * (1 + g * (1 - sig))
    dx = dg @ wg.float().T + du @ wu.float().T
    return (dx.reshape(x.shape).to(x.dtype), (xf.T @ dg).to(wg.dtype), (xf.T @ du).to(wu.dtype),
            dwd.to(wd.dtype))


_swiglu_mlp.register_autograd(_backward, setup_context=_setup)


def swiglu_mlp(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """Fused SwiGLU MLP (see module docstring); differentiable. Reference:
    ``(F.silu(x @ w_gate) * (x @ w_up)) @ w_down``. Raises ``ValueError`` for shapes or dtypes the
    kernel does not take (module docstring)."""
    return _swiglu_mlp(x, w_gate, w_up, w_down)


def reference(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """The unfused PyTorch op sequence this kernel replaces."""
    return (F.silu(x @ w_gate) * (x @ w_up)) @ w_down
