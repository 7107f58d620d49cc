"""``nki.isa`` of the current front end (import as ``nisa``; AWS's NKI 0.6 reference).

Every instruction takes its destination first (``dst``; positional or keyword), writes into it with
``dst.dtype`` (fp32 arithmetic rounded once), and returns an :class:`NkiInstruction` handle. They map
one-to-one onto :mod:`torch_neuronx.nki.instructions`, where the rules (with their AWS sources) and
cost formulas are. Where the current pages are stricter than the legacy ones (``tensor_tensor``:
"the same number of elements per partition"; ``affine_select``: "on_true_tile must also be in SBUF"),
this front end follows them. Signatures are AWS's; an unknown keyword is a ``TypeError``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import arguments, dtypes, instructions
from ...context import active
from ...errors import NkiValidationError, err_invalid_instruction_argument, err_unsupported_on_target
from ...instructions import (NkiInstruction, VirtualRegister, dge_mode, dma_engine, engine, gpsimd_engine,
                             matmul_perf_mode, nc_version, oob_mode, reduce_cmd, register_alloc, register_load,
                             register_move, register_store, scalar_engine, tensor_engine, unknown_engine,
                             vector_engine)
from ...ops import op_name
from ...platforms import get_platform
from ...tile import NkiTensor

__all__ = [
    "engine", "reduce_cmd", "dge_mode", "oob_mode", "matmul_perf_mode", "nc_version", "dma_engine",
    "tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine", "unknown_engine", "NkiInstruction",
    "NkiValidationError", "VirtualRegister", "get_nc_version", "get_nc_sub_version", "dma_copy", "tensor_copy",
    "memset", "tensor_copy_predicated", "nc_matmul", "nc_matmul_mx", "nc_transpose", "dma_transpose",
    "tensor_tensor", "tensor_scalar", "tensor_reduce", "tensor_partition_reduce", "tensor_scalar_cumulative",
    "activation", "activation_reduce", "activate2", "iota", "affine_select", "local_gather", "nc_n_gather",
    "bn_stats", "bn_aggr", "tensor_tensor_scan", "nc_stream_shuffle", "rng", "dropout", "set_rng_seed",
    "rand_set_state", "rand_get_state", "rand2", "exponential", "reciprocal", "max8", "sequence_bounds",
    "scalar_tensor_tensor", "tensor_scalar_reduce", "core_barrier", "dma_compute", "quantize_mx", "range_select",
    "select_reduce", "sendrecv", "register_alloc", "register_move", "register_load", "register_store",
    "nc_find_index8", "nc_match_replace8", "nonzero_with_count", "topk",
]


def get_nc_version() -> nc_version:
    """The NeuronCore generation of the target (the running kernel's platform, else the default)."""
    sim = active()
    return nc_version((sim.platform if sim else get_platform()).core.generation)


def get_nc_sub_version() -> int:
    """The silicon revision within the generation (0: the first; the platform table models one)."""
    return 0


def _priority(priority: Any, api: str) -> None:
    if priority is None:
        return
    if int(priority) not in (0, 1, 2, 3):
        raise err_invalid_instruction_argument(f"'{api}': priority {priority} must be 0-3")
    instructions.require_generation(f"{api}(priority=...)", 4)


def dma_copy(dst: NkiTensor, src: Any, priority: Any = None, oob_mode: Any = oob_mode.error,
             dge_mode: Any = dge_mode.unknown, engine: Any = engine.unknown, name: str | None = None) -> NkiInstruction:
    """``dst = src`` by DMA (HBM/SBUF; fp32 conversion between dtypes); indirect views gather/scatter
    (``oob_mode.skip`` skips out-of-bound offsets). ``priority`` (0-3, NeuronCore-v4) orders DMA queues:
    the simulator's DMAs run in data-ready order."""
    _priority(priority, "dma_copy")
    return instructions.dma_copy(dst, src, None, oob_mode=oob_mode, dge_mode=dge_mode, engine=engine, name=name)


def tensor_copy(dst: NkiTensor, src: NkiTensor, engine: Any = engine.unknown, name: str | None = None, *,
                dtype: Any = None) -> NkiInstruction:
    """``dst = src`` on the Vector / Scalar / GpSimd engine (bit-exact for equal dtypes). ``dtype=`` (taken
    by earlier NKI 0.x releases; AWS's nki-samples tutorials "cast to expected output data-type" with it)
    rounds the values to ``dtype`` on the way into ``dst``."""
    return instructions.tensor_copy(dst, src, engine=engine, name=name, cast=dtype)


def memset(dst: NkiTensor, value: Any, engine: Any = engine.unknown, name: str | None = None) -> NkiInstruction:
    """``dst = value`` (Vector or GpSimd)."""
    return instructions.memset(dst, value, engine=engine, name=name)


def tensor_copy_predicated(dst: NkiTensor, src: Any, predicate: NkiTensor, reverse_pred: bool = False,
                           name: str | None = None) -> NkiInstruction:
    """``dst = src`` where ``predicate`` is non-zero."""
    return instructions.tensor_copy_predicated(dst, src, predicate, reverse_pred=reverse_pred, name=name)


def nc_matmul(dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False, accumulate: Any = None,
              tile_position: Any = (), tile_size: Any = (), perf_mode: Any = matmul_perf_mode.none,
              name: str | None = None) -> NkiInstruction:
    """``dst (+)= stationary.T @ moving`` on the Tensor Engine (``accumulate=None``: overwrite the PSUM
    elements nothing wrote yet, accumulate onto the others)."""
    return instructions.nc_matmul(dst, stationary, moving, accumulate=accumulate, is_transpose=is_transpose,
                                  tile_position=tile_position, tile_size=tile_size, perf_mode=perf_mode,
                                  is_stationary_onezero=is_stationary_onezero, is_moving_onezero=is_moving_onezero,
                                  name=name)


def nc_matmul_mx(dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor, stationary_scale: NkiTensor,
                 moving_scale: NkiTensor, tile_position: Any = None, tile_size: Any = None, accumulate: Any = None,
                 name: str | None = None) -> NkiInstruction:
    """MXFP8/MXFP4 matmul with dequantization (NeuronCore-v4)."""
    return instructions.nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position,
                                     tile_size, accumulate, name)


def nc_transpose(dst: NkiTensor, data: NkiTensor, engine: Any = engine.unknown,
                 name: str | None = None) -> NkiInstruction:
    """``dst = data.T`` (free axes flattened): Tensor Engine (SBUF -> PSUM, <= 128x128) or Vector
    Engine (<= 32x32); ``engine.unknown`` picks the Tensor Engine for an SBUF -> PSUM transpose or a
    tile over 32x32, else the Vector Engine."""
    eng = instructions.engine_name(engine, "unknown")
    if eng == "unknown":
        p = data.shape[0]
        f = int(np.prod(data.shape[1:], dtype=np.int64))
        tensor_ok = dst.buffer.kind == "psum" and data.buffer.kind == "sbuf"
        eng = "tensor" if tensor_ok and (max(p, f) > 32 or True) else "vector"
        if not tensor_ok and max(p, f) > 32:
            eng = "tensor"
    if eng not in ("tensor", "vector"):
        raise err_invalid_instruction_argument(f"'nc_transpose': engine {engine!r}; tensor or vector")
    if data.dtype != dst.dtype:
        from ...errors import err_unsupported_dtype
        raise err_unsupported_dtype(f"'nc_transpose': dst {dst.describe()} must have data's dtype")
    return instructions.nc_transpose(dst, data, engine=eng, name=name)


def dma_transpose(dst: NkiTensor, src: NkiTensor, axes: Any = None, priority: Any = None,
                  dge_mode: Any = dge_mode.unknown, oob_mode: Any = oob_mode.error,
                  name: str | None = None) -> NkiInstruction:
    """DMA transpose (2-D [1, 0], 3-D [2, 1, 0], 4-D [3, 1, 2, 0]) into SBUF."""
    _priority(priority, "dma_transpose")
    return instructions.dma_transpose(dst, src, axes, dge_mode=dge_mode, oob_mode=oob_mode, name=name)


def tensor_tensor(dst: NkiTensor, data1: NkiTensor, data2: NkiTensor, op: Any, engine: Any = engine.unknown,
                  name: str | None = None) -> NkiInstruction:
    """``dst = op(data1, data2)``: same partitions and elements per partition (current page)."""
    return instructions.tensor_tensor(dst, data1, data2, op, engine=engine, bcast="none", name=name)


def tensor_scalar(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, reverse0: bool = False,
                  op1: Any = None, operand1: Any = None, reverse1: bool = False, engine: Any = engine.unknown,
                  name: str | None = None) -> NkiInstruction:
    """``dst = (data op0 operand0) op1 operand1`` with scalar / (P, 1) operands."""
    return instructions.tensor_scalar(dst, data, op0, operand0, reverse0=reverse0, op1=op1, operand1=operand1,
                                      reverse1=reverse1, engine=engine, name=name)


def tensor_reduce(dst: NkiTensor, op: Any, data: NkiTensor, axis: Any, negate: bool = False, keepdims: bool = False,
                  name: str | None = None) -> NkiInstruction:
    """``dst = (-)op-reduction of data over its last contiguous free axes``."""
    return instructions.tensor_reduce(dst, op, data, axis, negate=negate, keepdims=keepdims, name=name)


def tensor_partition_reduce(dst: NkiTensor, op: Any, data: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Reduction across the partitions of ``data`` into ``dst`` [1, ...] (GpSimd)."""
    return instructions.tensor_partition_reduce(dst, op, data, name=name)


def tensor_scalar_cumulative(dst: NkiTensor, src: NkiTensor, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
                             reduce_cmd: Any = reduce_cmd.reset_reduce, name: str | None = None) -> NkiInstruction:
    """Cumulative ``reg = op1(op0(src[i], imm0), reg); dst[i] = reg``."""
    return instructions.tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1, reduce_cmd=reduce_cmd, name=name)


def activation(dst: NkiTensor, op: Any, data: NkiTensor, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, name: str | None = None) -> NkiInstruction:
    """``dst = op(data * scale + bias)`` (Scalar Engine) with the optional fused reduction."""
    return instructions.activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                                   reduce_res=reduce_res, reduce_cmd=reduce_cmd, name=name)


def activation_reduce(dst: NkiTensor, op: Any, data: NkiTensor, reduce_op: Any, reduce_res: Any, bias: Any = None,
                      scale: Any = 1.0, name: str | None = None) -> NkiInstruction:
    """``activation`` with ``reduce_cmd=reset_reduce`` into ``reduce_res``."""
    return instructions.activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                                   reduce_res=reduce_res, reduce_cmd=reduce_cmd.reset_reduce, name=name)


def activate2(dst: NkiTensor, op: Any, data: NkiTensor, imm0: Any, imm1: Any, op0: Any, op1: Any,
              relu_param: Any = 0.0, reverse0: bool = False, reverse1: bool = False, reduce_op: Any = None,
              reduce_res: Any = None, reduce_cmd: Any = reduce_cmd.idle, name: str | None = None) -> NkiInstruction:
    """``dst = op((data op0 imm0) op1 imm1)`` (Scalar Engine, NeuronCore-v4)."""
    return instructions.activate2(dst, op, data, imm0, imm1, op0, op1, relu_param=relu_param, reverse0=reverse0,
                                  reverse1=reverse1, reduce_op=reduce_op, reduce_res=reduce_res,
                                  reduce_cmd=reduce_cmd, name=name)


def iota(dst: NkiTensor, pattern: Any, offset: int = 0, channel_multiplier: int = 0,
         name: str | None = None) -> NkiInstruction:
    """``dst[c, ...] = offset + c * channel_multiplier + sum(i_k * step_k)`` (GpSimd, SBUF)."""
    return instructions.iota_pattern(dst, pattern, offset, channel_multiplier, name=name)


def affine_select(dst: NkiTensor, pattern: Any, channel_multiplier: int, on_true_tile: NkiTensor,
                  on_false_value: Any, cmp_op: Any = "equal", offset: int = 0,
                  name: str | None = None) -> NkiInstruction:
    """``dst = where(cmp_op(affine pattern, 0), on_true_tile, on_false_value)``; dst and on_true_tile in
    SBUF (current page)."""
    return instructions.affine_select_pattern(dst, pattern, channel_multiplier, on_true_tile, on_false_value,
                                              cmp_op, offset, name=name)


def local_gather(dst: NkiTensor, src_buffer: NkiTensor, index: NkiTensor, num_elem_per_idx: int = 1,
                 num_valid_indices: int | None = None, name: str | None = None) -> NkiInstruction:
    """Gather within each GpSimd core's 16 partitions."""
    return instructions.local_gather(dst, src_buffer, index, num_elem_per_idx, num_valid_indices, name=name)


def nc_n_gather(dst: NkiTensor, data: NkiTensor, indices: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Per-partition gather of flattened free elements by uint32 ``indices``."""
    return instructions.nc_n_gather(dst, data, indices, name=name)


def bn_stats(dst: NkiTensor, data: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Per-partition even/odd (count, mean, var*count) into ``dst`` (P, 6)."""
    return instructions.bn_stats(dst, data, name=name)


def bn_aggr(dst: NkiTensor, data: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Aggregate bn_stats tuples into (mean, variance)."""
    return instructions.bn_aggr(dst, data, name=name)


def tensor_tensor_scan(dst: NkiTensor, data0: NkiTensor, data1: NkiTensor, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False, name: str | None = None) -> NkiInstruction:
    """Scan ``r[i] = op1(op0(data0[i], r[i-1]), data1[i])`` along the free axis."""
    return instructions.tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=reverse0,
                                           reverse1=reverse1, name=name)


def nc_stream_shuffle(dst: NkiTensor, src: NkiTensor, shuffle_mask: Any, name: str | None = None) -> NkiInstruction:
    """Cross-partition shuffle within 32-partition quadrants."""
    return instructions.nc_stream_shuffle(dst, src, shuffle_mask, name=name)


def rng(dst: NkiTensor, engine: Any = engine.vector, name: str | None = None) -> NkiInstruction:
    """Random bits into an integer ``dst``."""
    return instructions.rng(dst, engine=engine, name=name)


def dropout(dst: NkiTensor, data: NkiTensor, prob: Any, name: str | None = None) -> NkiInstruction:
    """``dst = data`` with elements zeroed with probability ``prob``."""
    return instructions.dropout(dst, data, prob, name=name)


def set_rng_seed(src_seeds: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Seed the Vector Engine's generator."""
    return instructions.set_rng_seed(src_seeds, name=name)


def rand_set_state(src_seeds: NkiTensor, engine: Any = engine.gpsimd, name: str | None = None) -> NkiInstruction:
    """Seed an engine's generator from a uint32 tile."""
    return instructions.rand_set_state(src_seeds, engine=engine, name=name)


def rand_get_state(dst: NkiTensor, engine: Any = engine.gpsimd, name: str | None = None) -> NkiInstruction:
    """Read an engine's generator state into a uint32 tile."""
    return instructions.rand_get_state(dst, engine=engine, name=name)


def rand2(dst: NkiTensor, min: Any, max: Any, name: str | None = None) -> NkiInstruction:
    """Uniform random numbers in [min, max] (NeuronCore-v4)."""
    return instructions.rand2(dst, min, max, name=name)


def exponential(dst: NkiTensor, src: NkiTensor, max_value: Any = 0.0, reduce_res: Any = None,
                reduce_cmd: Any = reduce_cmd.idle, reduce_init: Any = 0.0, name: str | None = None) -> NkiInstruction:
    """``dst = exp(src - max_value)`` with an optional sum (NeuronCore-v4)."""
    return instructions.exponential(dst, src, max_value, reduce_res, reduce_cmd=reduce_cmd, reduce_init=reduce_init,
                                    name=name)


def reciprocal(dst: NkiTensor, data: NkiTensor, name: str | None = None) -> NkiInstruction:
    """``dst = 1 / data`` (Vector Engine)."""
    return instructions.reciprocal(dst, data, name=name)


def max8(dst: NkiTensor, src: NkiTensor, name: str | None = None) -> NkiInstruction:
    """The 8 largest values per partition, descending."""
    return instructions.max8(dst, src, name=name)


def sequence_bounds(dst: NkiTensor, segment_ids: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Per element, its segment's [start, end)."""
    return instructions.sequence_bounds(dst, segment_ids, name=name)


def scalar_tensor_tensor(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, op1: Any, operand1: NkiTensor,
                         reverse0: bool = False, reverse1: bool = False, name: str | None = None) -> NkiInstruction:
    """``dst = (data op0 operand0) op1 operand1``."""
    return instructions.scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=reverse0,
                                             reverse1=reverse1, name=name)


def tensor_scalar_reduce(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, reduce_op: Any,
                         reduce_res: Any = None, reverse0: bool = False, reduce_cmd: Any = reduce_cmd.reset_reduce,
                         reduce_init: Any = None, reduce_res_negate: bool = False,
                         name: str | None = None) -> NkiInstruction:
    """``dst = data op0 operand0`` with a reduction into the Vector accumulators / ``reduce_res``."""
    if reverse0:
        raise NotImplementedError("nki.isa.tensor_scalar_reduce(reverse0=True): AWS's page marks it "
                                  "'not supported yet'")
    return instructions.tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0=reverse0,
                                             reduce_cmd=reduce_cmd, reduce_init=reduce_init,
                                             reduce_res_negate=reduce_res_negate, name=name)


def core_barrier(data: NkiTensor, cores: Any, engine: Any = engine.gpsimd, name: str | None = None) -> NkiInstruction:
    """Barrier between the cores of an LNC=2 logical NeuronCore."""
    return instructions.core_barrier(data, cores, engine=engine, name=name)


def dma_compute(dst: NkiTensor, srcs: list, reduce_op: Any, scales: Any = None, unique_indices: bool = True,
                oob_mode: Any = oob_mode.error, name: str | None = None) -> NkiInstruction:
    """``dst = sum(srcs)`` computed by the DMA engines."""
    return instructions.dma_compute(dst, srcs, reduce_op, scales, unique_indices, oob_mode, name)


def quantize_mx(dst: NkiTensor, src: NkiTensor, dst_scale: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Quantize bf16/fp16 to MXFP8 with E8M0 scales (NeuronCore-v4)."""
    return instructions.quantize_mx(dst, src, dst_scale, name)


def range_select(dst: NkiTensor, on_true_tile: NkiTensor, comp_op0: Any, comp_op1: Any, bound0: NkiTensor,
                 bound1: NkiTensor, reduce_cmd: Any = reduce_cmd.reset_reduce, reduce_res: Any = None,
                 reduce_op: Any = "maximum", range_start: int = 0,
                 on_false_value: float = float(np.finfo(np.float32).min), name: str | None = None) -> NkiInstruction:
    """Range selection on the free index with a max-reduction (NeuronCore-v3)."""
    return instructions.range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=reduce_cmd,
                                     reduce_res=reduce_res, reduce_op=reduce_op, range_start=range_start,
                                     on_false_value=on_false_value, name=name)


def select_reduce(dst: NkiTensor, predicate: NkiTensor, on_true: NkiTensor, on_false: Any, reduce_res: Any = None,
                  reduce_cmd: Any = reduce_cmd.idle, reduce_op: Any = "maximum", reverse_pred: bool = False,
                  name: str | None = None) -> NkiInstruction:
    """``dst = where(predicate, on_true, on_false)`` with an optional max-reduction."""
    return instructions.select_reduce(dst, predicate, on_true, on_false, reduce_res, reduce_cmd=reduce_cmd,
                                      reduce_op=reduce_op, reverse_pred=reverse_pred, name=name)


def sendrecv(src: NkiTensor, dst: NkiTensor, send_to_rank: int, recv_from_rank: int, pipe_id: int,
             dma_engine: Any = dma_engine.dma, name: str | None = None) -> NkiInstruction:
    """Exchange tiles between the two cores of an LNC=2 logical NeuronCore."""
    return instructions.sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id, dma_engine=dma_engine, name=name)


def nc_find_index8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Indices of the first occurrences of 8 values per partition."""
    return instructions.nc_find_index8(dst, data, vals, name=name)


def nc_match_replace8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, imm: float, dst_idx: Any = None,
                      name: str | None = None) -> NkiInstruction:
    """Replace the first occurrences of 8 values per partition by ``imm``."""
    return instructions.nc_match_replace8(dst, data, vals, imm, dst_idx=dst_idx, name=name)


def nonzero_with_count(dst: NkiTensor, src: NkiTensor, index_offset: int = 0, padding_val: int = -1,
                       name: str | None = None) -> NkiInstruction:
    """Indices of non-zero elements and their count (partitions 0, 16, ..., 112; NeuronCore-v3)."""
    return instructions.nonzero_with_count(dst, src, index_offset, padding_val, name=name)


def topk(val_dst: NkiTensor, idx_dst: NkiTensor, src: NkiTensor, n: int, name: str | None = None) -> NkiInstruction:
    """Not simulated (see :func:`torch_neuronx.nki.instructions.gpsimd.topk`).

    Raises:
        NotImplementedError: always.
    """
    return instructions.topk(val_dst, idx_dst, src, n, name=name)


_ = (dtypes, op_name, err_unsupported_on_target)

# wrong-typed arguments raise the NKI error naming the API and parameter (nki/arguments.py)
arguments.install(globals(), __all__, "nisa", skip=("install_operators", "device_print", "static_cast"))
