"""``nki.isa`` (import as ``nisa``): the legacy ``neuronxcc.nki.isa`` API.

Each call allocates its result tile and runs the matching destination-passing instruction of
:mod:`.instructions` (where the checks and cost formulas are documented). Signatures follow AWS's
``nki.isa`` API pages of Neuron SDK 2.2x.
"""
from __future__ import annotations

from . import dtypes as _dt
from . import instructions as I
from .instructions import engine, nc_version, reduce_cmd
from .memory import psum, sbuf
from .platforms import get_platform
from .simulator import active

__all__ = ["engine", "reduce_cmd", "nc_version", "get_nc_version", "nc_matmul", "nc_transpose",
           "activation", "activation_reduce", "tensor_tensor", "tensor_scalar", "tensor_reduce",
           "tensor_copy", "iota", "memset", "affine_select", "bn_stats", "bn_aggr", "dma_copy"]


def _result(shape, dtype, buffer=sbuf, mask=None):
    from .language import _result as r
    return r(shape, dtype, buffer, mask)


def get_nc_version() -> nc_version:
    """NeuronCore generation of the simulated platform: gen2 (trn1) or gen3 (trn2; trn3 modelled as gen3)."""
    sim = active()
    p = sim.platform if sim else get_platform()
    return nc_version.gen2 if p.nc_version == 2 else nc_version.gen3


def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, mask=None, **kwargs):
    """``stationary[K, M].T @ moving[K, N]`` -> new fp32 PSUM tile [M, N] (Tensor Engine)."""
    I.check_matmul_operands(stationary, moving)
    dst = _result((stationary.shape[1], moving.shape[1]),
                  _dt.float32 if not is_transpose else moving.dtype, psum, mask)
    I.nc_matmul(dst, stationary, moving, is_transpose=is_transpose, mask=mask)
    return dst


def nc_transpose(data, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """Partition<->free transpose of a 2-D tile. Tensor Engine (-> PSUM, <= 128x128) or Vector
    Engine (-> SBUF, <= 32x32); ``engine.unknown`` picks Vector when both dims are <= 32."""
    p, f = data.shape
    eng = I._engine(engine, "unknown")
    if eng == "unknown":
        eng = "vector" if p <= 32 and f <= 32 else "tensor"
    I.check_transpose_shape(data, eng)
    dst = _result((f, p), dtype or data.dtype, psum if eng == "tensor" else sbuf, mask)
    I.nc_transpose(dst, data, engine=eng, mask=mask)
    return dst


def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=reduce_cmd.idle, mask=None, dtype=None, **kwargs):
    """``op(data * scale + bias)`` -> new SBUF tile (Scalar Engine); optional add-reduction into
    ``reduce_res``."""
    dst = _result(data.shape, dtype or data.dtype, sbuf, mask)
    I.activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                 mask=mask)
    return dst


def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None,
                      dtype=None, **kwargs):
    """activation plus a reduction of its result along the free axes into ``reduce_res`` (P, 1)."""
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                      mask=mask, dtype=dtype)


def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=engine.unknown, **kwargs):
    """Element-wise ``op(data1, data2)`` -> new SBUF tile (Vector or GpSimd Engine)."""
    from .language import _tile_shape
    dst = _result(_tile_shape(data1, data2), dtype or _dt.promote(data1.dtype, data2.dtype), sbuf, mask)
    I.tensor_tensor(dst, data1, data2, op, engine=engine, mask=mask)
    return dst


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, *,
                  dtype=None, mask=None, engine=engine.unknown, **kwargs):
    """``(data op0 operand0) op1 operand1`` with scalar / (P, 1) operands -> new SBUF tile."""
    dst = _result(data.shape, dtype or data.dtype, sbuf, mask)
    I.tensor_scalar(dst, data, op0, operand0, reverse0=reverse0, op1=op1, operand1=operand1,
                    reverse1=reverse1, engine=engine, mask=mask)
    return dst


def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **kwargs):
    """Reduction over trailing free ``axis`` -> new SBUF tile (Vector Engine); ``negate`` negates."""
    axes = I._reduce_axes(axis, len(data.shape), "tensor_reduce", data.describe())
    shape = tuple(1 if i in axes else s for i, s in enumerate(data.shape)) if keepdims else \
        tuple(s for i, s in enumerate(data.shape) if i not in axes)
    dst = _result(shape, dtype or data.dtype, sbuf, mask)
    I.tensor_reduce(dst, op, data, axes, negate=negate, keepdims=keepdims, mask=mask)
    return dst


def tensor_copy(src, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """Copy (with dtype conversion) -> new SBUF tile."""
    dst = _result(src.shape, dtype or src.dtype, sbuf, mask)
    I.tensor_copy(dst, src, engine=engine, mask=mask)
    return dst


def iota(expr, dtype, *, mask=None, **kwargs):
    """Values of an index expression (``nl.arange`` / ``nl.mgrid`` arithmetic) -> new SBUF tile
    (GpSimd Engine, 150 + N cycles)."""
    import numpy as np
    vals = expr.values if hasattr(expr, "values") else np.asarray(expr)
    shape = vals.shape if vals.ndim >= 2 else (vals.size, 1) if vals.ndim == 1 else (1, 1)
    dst = _result(shape, dtype, sbuf, mask)
    I.iota(dst, vals.reshape(shape), mask=mask)
    return dst


def memset(shape, value, dtype, *, mask=None, engine=engine.unknown, **kwargs):
    """New SBUF tile of ``shape`` filled with ``value``."""
    dst = _result(tuple(shape), dtype, sbuf, mask)
    I.memset(dst, value, engine=engine, mask=mask)
    return dst


def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **kwargs):
    """``where(pred, on_true_tile, on_false_value)`` with an affine predicate of index expressions
    (GpSimd Engine) -> new SBUF tile."""
    dst = _result(on_true_tile.shape, dtype or on_true_tile.dtype, sbuf, mask)
    I.affine_select(dst, pred, on_true_tile, on_false_value, mask=mask)
    return dst


def bn_stats(data, *, mask=None, dtype=None, **kwargs):
    """Per-partition mean/variance statistics of ``data`` (free size <= 512) -> new (P, 6) tile."""
    dst = _result((data.shape[0], 6), dtype or _dt.float32, sbuf, mask)
    I.bn_stats(dst, data, mask=mask)
    return dst


def bn_aggr(data, *, mask=None, dtype=None, **kwargs):
    """Aggregate bn_stats results (P, 6k) -> new (P, 2) tile of mean and variance."""
    dst = _result((data.shape[0], 2), dtype or _dt.float32, sbuf, mask)
    I.bn_aggr(dst, data, mask=mask)
    return dst


def dma_copy(dst=None, src=None, *, mask=None, dge_mode=None, **kwargs):
    """DMA ``src`` -> ``dst`` (HBM/SBUF, not PSUM). Both are given (destination-passing)."""
    if dst is None or src is None:
        raise TypeError("nisa.dma_copy needs dst= and src=")
    I.dma_copy(dst, src, mask)
