"""``nki.isa`` of the legacy front end (``neuronxcc.nki.isa``; import as ``nisa``).

Each call allocates its result tile (:func:`..instructions.fresh_result`; its dtype is ``dtype=`` or
the input's) and runs the destination-passing instruction of :mod:`..instructions`, where the rules
and cost formulas are documented. Signatures are AWS's legacy ``nki.isa`` reference (Neuron SDK 2.26)
without the catch-all ``**kwargs``. Where AWS's legacy compiler legalises a call (a PSUM operand of
``affine_select`` or ``nl.store``), this front end inserts the same copy and charges it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import arguments, dtypes, highlevel, instructions
from ..context import active
from ..dtypes import fp32
from ..errors import err_invalid_instruction_argument
from ..indexing import IndexExpr
from ..instructions import (dge_mode, dma_engine, engine, fresh_result, gpsimd_engine, nc_version, oob_mode,
                            reduce_cmd, scalar_engine, tensor_engine, unknown_engine, vector_engine)
from ..memory import psum, sbuf
from ..platforms import get_platform
from ..tile import NkiTensor, broadcast_shape, is_tile

__all__ = ["engine", "reduce_cmd", "nc_version", "dge_mode", "oob_mode", "dma_engine", "fp32", "tensor_engine",
           "vector_engine", "scalar_engine", "gpsimd_engine", "unknown_engine", "get_nc_version", "nc_matmul",
           "nc_transpose", "activation", "activation_reduce", "tensor_tensor", "tensor_scalar", "tensor_reduce",
           "tensor_copy", "iota", "memset", "affine_select", "bn_stats", "bn_aggr", "dma_copy", "dma_transpose",
           "reciprocal", "tensor_scalar_reduce", "max8", "scalar_tensor_tensor", "tensor_tensor_scan",
           "tensor_copy_predicated", "select_reduce", "tensor_partition_reduce", "dropout", "local_gather",
           "nc_find_index8", "nc_match_replace8", "nc_stream_shuffle", "range_select", "sequence_bounds",
           "tensor_copy_dynamic_src", "tensor_copy_dynamic_dst", "tensor_scalar_cumulative", "builtin_custom_op"]


def get_nc_version() -> nc_version:
    """NeuronCore generation of the platform: the running kernel's inside a kernel, else the default
    platform's (:mod:`..platforms`): gen2 on trn1 and inf2, gen3 on trn2, gen4 on trn3."""
    sim = active()
    p = sim.platform if sim else get_platform()
    return nc_version(p.core.generation)


def _dt(dtype: Any, default: Any) -> Any:
    return dtypes.as_dtype(dtype) if dtype is not None else default


def nc_matmul(stationary: NkiTensor, moving: NkiTensor, *, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False, tile_position: Any = (),
              tile_size: Any = (), mask: Any = None, perf_mode: Any = None) -> NkiTensor:
    """``stationary[K, M].T @ moving[K, N]`` -> a new fp32 PSUM tile [M, N] (Tensor Engine);
    ``perf_mode='double_row*'``: [K, 2, M] x [K, 2, N] FP8 operands. A PSUM operand (e.g. the result of
    a Tensor Engine ``nc_transpose``, as AWS's flash-attention backward passes) is copied to SBUF first,
    as AWS's legacy compiler does (the copy is charged to the Vector Engine)."""
    double = (getattr(perf_mode, "value", perf_mode) or "none") != "none"
    stationary = highlevel.to_sbuf(stationary, "nc_matmul")
    moving = highlevel.to_sbuf(moving, "nc_matmul")
    instructions.check_matmul_operands(stationary, moving, "nc_matmul", double)
    m = stationary.shape[-1]
    n = moving.shape[-1]
    dst = fresh_result((m, n), dtypes.float32 if not is_transpose else moving.dtype, psum, mask)
    instructions.nc_matmul(dst, stationary, moving, is_transpose=is_transpose, mask=mask,
                           tile_position=tile_position, tile_size=tile_size, perf_mode=perf_mode,
                           is_stationary_onezero=is_stationary_onezero, is_moving_onezero=is_moving_onezero)
    return dst


def nc_transpose(data: NkiTensor, *, mask: Any = None, dtype: Any = None, engine: Any = engine.unknown) -> NkiTensor:
    """Partition<->free transpose of a 2-D tile. Tensor Engine (-> PSUM, <= 128x128) or Vector Engine
    (-> SBUF, <= 32x32); ``engine.unknown`` picks Vector when both dims are <= 32."""
    p = data.shape[0]
    f = int(np.prod(data.shape[1:], dtype=np.int64))
    eng = instructions.engine_name(engine, "unknown")
    if eng == "unknown":
        eng = "vector" if p <= 32 and f <= 32 else "tensor"
    instructions.check_transpose_shape(data, eng)
    dst = fresh_result((f, p), _dt(dtype, data.dtype), psum if eng == "tensor" else sbuf, mask)
    instructions.nc_transpose(dst, data, engine=eng, mask=mask)
    return dst


def activation(op: Any, data: NkiTensor, *, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, mask: Any = None,
               dtype: Any = None) -> NkiTensor:
    """``op(data * scale + bias)`` -> a new SBUF tile (Scalar Engine); optional reduction into
    ``reduce_res``."""
    dst = fresh_result(data.shape, _dt(dtype, data.dtype), sbuf, mask)
    instructions.activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                            reduce_cmd=reduce_cmd, mask=mask)
    return dst


def activation_reduce(op: Any, data: NkiTensor, *, reduce_op: Any, reduce_res: Any, bias: Any = None,
                      scale: Any = 1.0, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """activation plus a reduction of its result along the free axes into ``reduce_res`` (P, 1)."""
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                      reduce_cmd=reduce_cmd.reset_reduce, mask=mask, dtype=dtype)


def tensor_tensor(data1: NkiTensor, data2: NkiTensor, op: Any, *, dtype: Any = None, mask: Any = None,
                  engine: Any = engine.unknown) -> NkiTensor:
    """Element-wise ``op(data1, data2)`` -> a new SBUF tile (Vector or GpSimd Engine)."""
    dst = fresh_result(broadcast_shape(data1, data2), _dt(dtype, dtypes.promote(data1.dtype, data2.dtype)), sbuf,
                       mask)
    instructions.tensor_tensor(dst, data1, data2, op, engine=engine, mask=mask)
    return dst


def tensor_scalar(data: NkiTensor, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, *, dtype: Any = None, mask: Any = None,
                  engine: Any = engine.unknown) -> NkiTensor:
    """``(data op0 operand0) op1 operand1`` with scalar / (P, 1) operands -> a new SBUF tile."""
    dst = fresh_result(data.shape, _dt(dtype, data.dtype), sbuf, mask)
    instructions.tensor_scalar(dst, data, op0, operand0, reverse0=reverse0, op1=op1, operand1=operand1,
                               reverse1=reverse1, engine=engine, mask=mask)
    return dst


def tensor_reduce(op: Any, data: NkiTensor, axis: Any, *, mask: Any = None, dtype: Any = None,
                  negate: bool = False, keepdims: bool = False) -> NkiTensor:
    """Reduction over trailing free ``axis`` -> a new SBUF tile (Vector Engine); ``negate`` negates."""
    axes = instructions.reduce_axes(axis, len(data.shape), "tensor_reduce", data.describe())
    shape = tuple(1 if i in axes else s for i, s in enumerate(data.shape)) if keepdims else \
        tuple(s for i, s in enumerate(data.shape) if i not in axes)
    if len(shape) == 1:
        shape = (shape[0], 1)
    dst = fresh_result(shape, _dt(dtype, data.dtype), sbuf, mask)
    instructions.tensor_reduce(dst, op, data, axes, negate=negate, keepdims=keepdims, mask=mask)
    return dst


def tensor_copy(src: NkiTensor, *, mask: Any = None, dtype: Any = None, engine: Any = engine.unknown) -> NkiTensor:
    """A copy (with dtype conversion) -> a new SBUF tile."""
    dst = fresh_result(src.shape, _dt(dtype, src.dtype), sbuf, mask)
    instructions.tensor_copy(dst, src, engine=engine, mask=mask)
    return dst


def tensor_copy_dynamic_src(src: NkiTensor, *, mask: Any = None, dtype: Any = None,
                            engine: Any = engine.unknown) -> NkiTensor:
    """A copy of ``src`` (a view at a dynamic offset, e.g. ``t[i_p, nl.ds(idx_tile, n)]``) -> a new SBUF
    tile; cost max(MIN_II_DYNAMIC, N)."""
    dst = fresh_result(src.shape, _dt(dtype, src.dtype), sbuf, mask)
    instructions.tensor_copy_dynamic(dst, src, engine=engine, mask=mask, api="tensor_copy_dynamic_src")
    return dst


def tensor_copy_dynamic_dst(*, dst: NkiTensor, src: NkiTensor, mask: Any = None, dtype: Any = None,
                            engine: Any = engine.unknown) -> NkiTensor:
    """Copy ``src`` into ``dst``, a view at a dynamic offset; cost max(MIN_II_DYNAMIC, N)."""
    _ = dtype
    instructions.tensor_copy_dynamic(dst, src, engine=engine, mask=mask, api="tensor_copy_dynamic_dst")
    return dst


def iota(expr: Any, dtype: Any, *, mask: Any = None) -> NkiTensor:
    """Values of an index expression (``nl.arange`` / ``nl.mgrid`` arithmetic) -> a new SBUF tile
    (GpSimd Engine, 150 + N cycles)."""
    vals = expr.values if isinstance(expr, IndexExpr) else np.asarray(expr)
    if vals.dtype.kind not in "biu":
        raise err_invalid_instruction_argument(
            f"nisa.iota: expr {expr!r} is not an index expression (nl.arange / nl.mgrid arithmetic) or integers")
    shape = vals.shape if vals.ndim >= 2 else (vals.size, 1) if vals.ndim == 1 else (1, 1)
    dst = fresh_result(shape, dtypes.as_dtype(dtype), sbuf, mask)
    instructions.iota(dst, vals.reshape(shape), mask=mask)
    return dst


def memset(shape: Any, value: Any, dtype: Any, *, mask: Any = None, engine: Any = engine.unknown) -> NkiTensor:
    """A new SBUF tile of ``shape`` filled with ``value``."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dst = fresh_result(shape, dtypes.as_dtype(dtype), sbuf, mask)
    instructions.memset(dst, value, engine=engine, mask=mask)
    return dst


def affine_select(pred: Any, on_true_tile: NkiTensor, on_false_value: Any, *, mask: Any = None,
                  dtype: Any = None) -> NkiTensor:
    """``where(pred, on_true_tile, on_false_value)`` with an affine predicate of index expressions
    (GpSimd Engine) -> a new SBUF tile. A PSUM ``on_true_tile`` is copied to SBUF first (GpSimd cannot
    read PSUM; AWS's legacy compiler inserts that copy, as AWS's tested flash-attention backward kernel
    relies on)."""
    src = highlevel.to_sbuf(on_true_tile, "affine_select")
    dst = fresh_result(on_true_tile.shape, _dt(dtype, on_true_tile.dtype), sbuf, mask)
    instructions.affine_select(dst, pred, src, on_false_value, mask=mask)
    return dst


def bn_stats(data: NkiTensor, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Per-partition mean/variance statistics of ``data`` (free size <= 512) -> a new (P, 6) tile; a
    ``mask`` in the input's index space leaves elements out of the statistics."""
    dst = fresh_result((data.shape[0], 6), _dt(dtype, dtypes.float32), sbuf)
    instructions.bn_stats(dst, data, mask=mask)
    return dst


def bn_aggr(data: NkiTensor, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Aggregate bn_stats results (P, 6k) -> a new (P, 2) tile of mean and variance."""
    dst = fresh_result((data.shape[0], 2), _dt(dtype, dtypes.float32), sbuf, mask)
    instructions.bn_aggr(dst, data, mask=mask)
    return dst


def dma_copy(*, dst: NkiTensor, src: Any, mask: Any = None, dst_rmw_op: Any = None,
             oob_mode: Any = oob_mode.error, dge_mode: Any = dge_mode.unknown) -> None:
    """DMA ``src`` -> ``dst`` (HBM/SBUF, not PSUM); ``dst_rmw_op`` (np.add): ``dst = dst + src``."""
    instructions.dma_copy(dst, src, mask, dst_rmw_op=dst_rmw_op, oob_mode=oob_mode, dge_mode=dge_mode)


def dma_transpose(src: NkiTensor, *, axes: Any = None, mask: Any = None, dtype: Any = None,
                  dge_mode: Any = dge_mode.unknown) -> NkiTensor:
    """DMA transpose of a 2-D to 4-D tile -> a new SBUF tile; ``dge_mode=nisa.dge_mode.hwdge`` (the
    DGE crossbar) needs NeuronCore-v3 or newer."""
    perm = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(len(src.shape), (1, 0))
    dst = fresh_result(tuple(src.shape[i] for i in perm), _dt(dtype, src.dtype), sbuf, mask)
    instructions.dma_transpose(dst, src, axes, mask=mask, dge_mode=dge_mode)
    return dst


def reciprocal(data: NkiTensor, *, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """``1 / data`` (Vector Engine) -> a new SBUF tile."""
    dst = fresh_result(data.shape, _dt(dtype, data.dtype), sbuf, mask)
    instructions.reciprocal(dst, data, mask=mask)
    return dst


def tensor_scalar_reduce(*, data: NkiTensor, op0: Any, operand0: Any, reduce_op: Any, reduce_res: Any,
                         reverse0: bool = False, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """``data op0 operand0`` -> a new SBUF tile, and its reduction along the free axes into
    ``reduce_res`` (P, 1)."""
    dst = fresh_result(data.shape, _dt(dtype, data.dtype), sbuf, mask)
    instructions.tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0=reverse0, mask=mask)
    return dst


def tensor_scalar_cumulative(*, src: NkiTensor, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             reduce_cmd: Any = reduce_cmd.reset_reduce, dtype: Any = None,
                             dst: NkiTensor | None = None) -> NkiTensor:
    """Cumulative ``reg = op1(op0(src[i], imm0), reg)`` along the free axis -> a new SBUF tile, or into
    ``dst`` when given (the newer ``neuronxcc`` signature AWS's API test uses), which is returned."""
    if dst is None:
        dst = fresh_result(src.shape, _dt(dtype, src.dtype), sbuf)
    instructions.tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1, reduce_cmd=reduce_cmd)
    return dst


def max8(*, src: NkiTensor, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """The 8 largest values per partition, descending -> a new (P, 8) tile."""
    dst = fresh_result((src.shape[0], 8), _dt(dtype, src.dtype), sbuf)
    instructions.max8(dst, src, mask=mask)
    return dst


def nc_find_index8(*, data: NkiTensor, vals: NkiTensor, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Indices of the first occurrences of 8 values per partition -> a new (P, 8) uint32 tile."""
    dst = fresh_result((data.shape[0], 8), _dt(dtype, dtypes.uint32), sbuf)
    instructions.nc_find_index8(dst, data, vals, mask=mask)
    return dst


def nc_match_replace8(*, data: NkiTensor, vals: NkiTensor, imm: float, dst_idx: Any = None, mask: Any = None,
                      dtype: Any = None) -> NkiTensor:
    """``data`` with the first occurrence of each of 8 values replaced by ``imm`` -> a new tile."""
    dst = fresh_result(data.shape, _dt(dtype, data.dtype), sbuf)
    instructions.nc_match_replace8(dst, data, vals, imm, dst_idx=dst_idx, mask=mask)
    return dst


def scalar_tensor_tensor(*, data: NkiTensor, op0: Any, operand0: Any, op1: Any, operand1: NkiTensor,
                         reverse0: bool = False, reverse1: bool = False, dtype: Any = None,
                         mask: Any = None) -> NkiTensor:
    """``(data op0 operand0) op1 operand1`` -> a new SBUF tile (Vector Engine)."""
    dst = fresh_result(data.shape, _dt(dtype, dtypes.promote(data.dtype, operand1.dtype)), sbuf, mask)
    instructions.scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=reverse0,
                                      reverse1=reverse1, mask=mask)
    return dst


def tensor_tensor_scan(data0: NkiTensor, data1: NkiTensor, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False, *, dtype: Any = None,
                       mask: Any = None) -> NkiTensor:
    """The scan ``r[i] = op1(op0(data0[i], r[i-1]), data1[i])`` along the free axis -> a new SBUF tile."""
    dst = fresh_result(data0.shape, _dt(dtype, dtypes.promote(data0.dtype, data1.dtype)), sbuf, mask)
    instructions.tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=reverse0, reverse1=reverse1,
                                    mask=mask)
    return dst


def tensor_copy_predicated(*, src: Any, dst: NkiTensor, predicate: NkiTensor, reverse_pred: bool = False,
                           mask: Any = None, dtype: Any = None) -> NkiTensor:
    """``dst = src`` where ``predicate`` is non-zero; ``dst`` unchanged elsewhere."""
    _ = dtype
    instructions.tensor_copy_predicated(dst, src, predicate, reverse_pred=reverse_pred, mask=mask)
    return dst


def select_reduce(*, dst: NkiTensor, predicate: NkiTensor, on_true: NkiTensor, on_false: Any,
                  reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, reduce_op: Any = np.amax,
                  reverse_pred: bool = False, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """``dst = where(predicate, on_true, on_false)`` with an optional max-reduction into ``reduce_res``."""
    _ = dtype
    instructions.select_reduce(dst, predicate, on_true, on_false, reduce_res, reduce_cmd=reduce_cmd,
                               reduce_op=reduce_op, reverse_pred=reverse_pred, mask=mask)
    return dst


def tensor_partition_reduce(op: Any, data: NkiTensor, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Reduction across partitions -> a new (1, F...) SBUF tile (GpSimd Engine)."""
    dst = fresh_result((1,) + tuple(data.shape[1:]), _dt(dtype, data.dtype), sbuf)
    instructions.tensor_partition_reduce(dst, op, data, mask=mask)
    return dst


def dropout(data: NkiTensor, prob: Any, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """``data`` with elements zeroed with probability ``prob`` -> a new SBUF tile."""
    dst = fresh_result(data.shape, data.dtype, sbuf, mask)
    instructions.dropout(dst, data, prob, mask=mask)
    return highlevel.copy(dst, dtype, mask) if dtype is not None and dtypes.as_dtype(dtype) != data.dtype else dst


def local_gather(src_buffer: NkiTensor, index: NkiTensor, num_elem_per_idx: int = 1,
                 num_valid_indices: int | None = None, *, mask: Any = None) -> NkiTensor:
    """Gather within each GpSimd core's 16 partitions -> a new SBUF tile [P, valid x elem]."""
    per_core = int(np.prod(index.shape[1:], dtype=np.int64)) * 16 if len(index.shape) > 1 else 16
    nv = per_core if num_valid_indices is None else int(num_valid_indices)
    dst = fresh_result((src_buffer.shape[0], nv * int(num_elem_per_idx)), src_buffer.dtype, sbuf)
    instructions.local_gather(dst, src_buffer, index, num_elem_per_idx, num_valid_indices, mask=mask)
    return dst


def nc_stream_shuffle(src: NkiTensor, dst: NkiTensor, shuffle_mask: Any, *, dtype: Any = None,
                      mask: Any = None) -> NkiTensor:
    """Cross-partition shuffle within 32-partition quadrants, written into ``dst``."""
    _ = (dtype, mask)
    instructions.nc_stream_shuffle(dst, src, shuffle_mask)
    return dst


def range_select(*, on_true_tile: NkiTensor, comp_op0: Any, comp_op1: Any, bound0: NkiTensor, bound1: NkiTensor,
                 reduce_cmd: Any = reduce_cmd.idle, reduce_res: Any = None, reduce_op: Any = np.amax,
                 range_start: int = 0, on_false_value: float = fp32.min, mask: Any = None,
                 dtype: Any = None) -> NkiTensor:
    """Range selection on the free index with a max-reduction -> a new SBUF tile."""
    dst = fresh_result(on_true_tile.shape, _dt(dtype, on_true_tile.dtype), sbuf, mask)
    instructions.range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=reduce_cmd,
                              reduce_res=reduce_res, reduce_op=reduce_op, range_start=range_start,
                              on_false_value=on_false_value, mask=mask)
    return dst


def sequence_bounds(*, segment_ids: NkiTensor, dtype: Any = None) -> NkiTensor:
    """Per element, its segment's [start, end) -> a new [P, 2, N] tile."""
    dst = fresh_result((segment_ids.shape[0], 2) + tuple(segment_ids.shape[1:]), _dt(dtype, segment_ids.dtype),
                       sbuf)
    instructions.sequence_bounds(dst, segment_ids)
    return dst


def builtin_custom_op(function_name: str, lib_file_name: str, ulib_to_ucode_version: Any, ulib_to_isa_version: Any,
                      srcs: Any, dsts: Any) -> None:
    """Not simulated: runs a compiled GpSimd library function.

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError(f"nki.isa.builtin_custom_op({function_name!r}) runs a compiled GpSimd library; the "
                              "torch_neuronx NKI simulator cannot execute it")


_ = (is_tile, err_invalid_instruction_argument)

# wrong-typed arguments raise the NKI error naming the API and parameter (nki/arguments.py)
arguments.install(globals(), __all__, "nisa", skip=("install_operators", "device_print", "static_cast"))
