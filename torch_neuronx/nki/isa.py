"""``nki.isa`` (import as ``nisa``): the legacy ``neuronxcc.nki.isa`` API.

Each call allocates its result tile and runs the matching destination-passing instruction of
:mod:`.instructions` (where the checks and cost formulas are documented). Signatures follow AWS's
``nki.isa`` API pages of Neuron SDK 2.2x.
"""
from __future__ import annotations

import numpy as np

from . import dtypes, instructions
from .context import active
from .instructions import engine, fresh_result, nc_version, reduce_cmd
from .memory import psum, sbuf
from .platforms import get_platform
from .tile import broadcast_shape

__all__ = ["engine", "reduce_cmd", "nc_version", "get_nc_version", "nc_matmul", "nc_transpose",
           "activation", "activation_reduce", "tensor_tensor", "tensor_scalar", "tensor_reduce",
           "tensor_copy", "iota", "memset", "affine_select", "bn_stats", "bn_aggr", "dma_copy"]


def get_nc_version() -> nc_version:
    """NeuronCore generation of the platform: of the running kernel's simulator inside a kernel, of
    the default platform outside (the ``neuron`` device's, see :mod:`.platforms`): gen2 on trn1 and
    inf2, gen3 on trn2, gen4 on trn3."""
    sim = active()
    p = sim.platform if sim else get_platform()
    return nc_version(p.core.generation)


def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, mask=None, **kwargs):
    """``stationary[K, M].T @ moving[K, N]`` -> new fp32 PSUM tile [M, N] (Tensor Engine)."""
    instructions.check_matmul_operands(stationary, moving)
    dst = fresh_result((stationary.shape[1], moving.shape[1]),
                       dtypes.float32 if not is_transpose else moving.dtype, psum, mask)
    instructions.nc_matmul(dst, stationary, moving, is_transpose=is_transpose, mask=mask)
    return dst


def nc_transpose(data, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """Partition<->free transpose of a 2-D tile. Tensor Engine (-> PSUM, <= 128x128) or Vector
    Engine (-> SBUF, <= 32x32); ``engine.unknown`` picks Vector when both dims are <= 32."""
    p, f = data.shape
    eng = instructions.engine_name(engine, "unknown")
    if eng == "unknown":
        eng = "vector" if p <= 32 and f <= 32 else "tensor"
    instructions.check_transpose_shape(data, eng)
    dst = fresh_result((f, p), dtype or data.dtype, psum if eng == "tensor" else sbuf, mask)
    instructions.nc_transpose(dst, data, engine=eng, mask=mask)
    return dst


def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=reduce_cmd.idle, mask=None, dtype=None, **kwargs):
    """``op(data * scale + bias)`` -> new SBUF tile (Scalar Engine); optional add-reduction into
    ``reduce_res``."""
    dst = fresh_result(data.shape, dtype or data.dtype, sbuf, mask)
    instructions.activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                            reduce_res=reduce_res, mask=mask)
    return dst


def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None,
                      dtype=None, **kwargs):
    """activation plus a reduction of its result along the free axes into ``reduce_res`` (P, 1)."""
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                      mask=mask, dtype=dtype)


def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=engine.unknown, **kwargs):
    """Element-wise ``op(data1, data2)`` -> new SBUF tile (Vector or GpSimd Engine)."""
    dst = fresh_result(broadcast_shape(data1, data2), dtype or dtypes.promote(data1.dtype, data2.dtype),
                       sbuf, mask)
    instructions.tensor_tensor(dst, data1, data2, op, engine=engine, mask=mask)
    return dst


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, *,
                  dtype=None, mask=None, engine=engine.unknown, **kwargs):
    """``(data op0 operand0) op1 operand1`` with scalar / (P, 1) operands -> new SBUF tile."""
    dst = fresh_result(data.shape, dtype or data.dtype, sbuf, mask)
    instructions.tensor_scalar(dst, data, op0, operand0, reverse0=reverse0, op1=op1, operand1=operand1,
                               reverse1=reverse1, engine=engine, mask=mask)
    return dst


def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **kwargs):
    """Reduction over trailing free ``axis`` -> new SBUF tile (Vector Engine); ``negate`` negates."""
    axes = instructions.reduce_axes(axis, len(data.shape), "tensor_reduce", data.describe())
    shape = tuple(1 if i in axes else s for i, s in enumerate(data.shape)) if keepdims else \
        tuple(s for i, s in enumerate(data.shape) if i not in axes)
    dst = fresh_result(shape, dtype or data.dtype, sbuf, mask)
    instructions.tensor_reduce(dst, op, data, axes, negate=negate, keepdims=keepdims, mask=mask)
    return dst


def tensor_copy(src, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """Copy (with dtype conversion) -> new SBUF tile."""
    dst = fresh_result(src.shape, dtype or src.dtype, sbuf, mask)
    instructions.tensor_copy(dst, src, engine=engine, mask=mask)
    return dst


def iota(expr, dtype, *, mask=None, **kwargs):
    """Values of an index expression (``nl.arange`` / ``nl.mgrid`` arithmetic) -> new SBUF tile
    (GpSimd Engine, 150 + N cycles)."""
    vals = expr.values if hasattr(expr, "values") else np.asarray(expr)
    shape = vals.shape if vals.ndim >= 2 else (vals.size, 1) if vals.ndim == 1 else (1, 1)
    dst = fresh_result(shape, dtype, sbuf, mask)
    instructions.iota(dst, vals.reshape(shape), mask=mask)
    return dst


def memset(shape, value, dtype, *, mask=None, engine=engine.unknown, **kwargs):
    """New SBUF tile of ``shape`` filled with ``value``."""
    dst = fresh_result(tuple(shape), dtype, sbuf, mask)
    instructions.memset(dst, value, engine=engine, mask=mask)
    return dst


def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **kwargs):
    """``where(pred, on_true_tile, on_false_value)`` with an affine predicate of index expressions
    (GpSimd Engine) -> new SBUF tile."""
    dst = fresh_result(on_true_tile.shape, dtype or on_true_tile.dtype, sbuf, mask)
    instructions.affine_select(dst, pred, on_true_tile, on_false_value, mask=mask)
    return dst


def bn_stats(data, *, mask=None, dtype=None, **kwargs):
    """Per-partition mean/variance statistics of ``data`` (free size <= 512) -> new (P, 6) tile."""
    dst = fresh_result((data.shape[0], 6), dtype or dtypes.float32, sbuf, mask)
    instructions.bn_stats(dst, data, mask=mask)
    return dst


def bn_aggr(data, *, mask=None, dtype=None, **kwargs):
    """Aggregate bn_stats results (P, 6k) -> new (P, 2) tile of mean and variance."""
    dst = fresh_result((data.shape[0], 2), dtype or dtypes.float32, sbuf, mask)
    instructions.bn_aggr(dst, data, mask=mask)
    return dst


def dma_copy(dst=None, src=None, *, mask=None, dge_mode=None, **kwargs):
    """DMA ``src`` -> ``dst`` (HBM/SBUF, not PSUM). Both are given (destination-passing)."""
    if dst is None or src is None:
        raise TypeError("nisa.dma_copy needs dst= and src=")
    instructions.dma_copy(dst, src, mask)
