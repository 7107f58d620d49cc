"""GpSimd Engine instructions: ``iota``, ``affine_select``, ``local_gather``, ``nc_n_gather``,
``tensor_partition_reduce``, ``sequence_bounds``, ``nonzero_with_count`` (``topk`` is refused).

GpSimd cannot access PSUM (current ``tensor_tensor`` page: "Since GpSimd Engine cannot access
PSUM"); each of its eight cores is connected to 16 contiguous SBUF partitions. Cost: the GpSimd start
cost (~150 cycles, legacy ``iota`` / ``affine_select`` pages) + N, local_gather per its page.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost_model, dtypes
from ..context import current
from ..errors import err_invalid_instruction_argument, err_unsupported_dtype
from ..indexing import IndexExpr, Mask, as_int, pattern_pairs
from ..ops import binary, op_name, reduce_fn
from ..tile import NkiTensor, is_tile
from .common import NkiInstruction, f32, free_size, issue, operand, require_generation, samep

__all__ = ["iota", "iota_pattern", "affine_select", "affine_select_pattern", "local_gather", "nc_n_gather",
           "tensor_partition_reduce", "sequence_bounds", "nonzero_with_count", "topk", "gather_flattened"]


def _pattern_values(pattern: Any, offset: int, channel_multiplier: int, p: int, n: int, api: str) -> np.ndarray:
    """``offset + channel * channel_multiplier + sum(i_k * step_k)`` for a ``[[step, num], ...]`` pattern
    (padded to 4-D), shape (p, n) with n = product of the nums."""
    pat = pattern_pairs(pattern, f"'{api}'")
    offset = as_int(offset, f"'{api}': offset")
    channel_multiplier = as_int(channel_multiplier, f"'{api}': channel_multiplier")
    if len(pat) > 4:
        raise err_invalid_instruction_argument(f"'{api}': pattern has {len(pat)} dims; at most 4")
    total = int(np.prod([c for _, c in pat], dtype=np.int64)) if pat else 1
    if total != n:
        raise err_invalid_instruction_argument(f"'{api}': pattern {pat} has {total} elements, dst has {n} per "
                                               "partition")
    vals = np.zeros([c for _, c in pat] or [1], dtype=np.int64)
    for k, (s, c) in enumerate(pat):
        shp = [1] * len(pat)
        shp[k] = c
        vals = vals + (np.arange(c, dtype=np.int64) * s).reshape(shp)
    vals = vals.reshape(1, -1) + int(offset) + np.arange(p, dtype=np.int64)[:, None] * int(channel_multiplier)
    return vals


def iota_pattern(dst: NkiTensor, pattern: Any, offset: int = 0, channel_multiplier: int = 0, *,
                 name: str | None = None) -> NkiInstruction:
    """Current ``nisa.iota``: ``dst[c, w, z, y, x] = offset + c * channel_multiplier + w*step_w + ...``
    (int32 arithmetic, cast to ``dst.dtype``) on GpSimd; ``dst`` in SBUF. Cost: 150 + N cycles."""
    sim = current()
    api = "iota"
    p = operand(dst, api, "dst", ("sbuf",))
    n = free_size(dst.shape)
    vals = _pattern_values(pattern, offset, channel_multiplier, p, n, api)
    with sim.instruction(name or api, "gpsimd", cost_model.iota_cycles(n)) as ins:
        ins.write(dst, vals.astype(np.int32).reshape(dst.shape))
    return issue(sim)


def iota(dst: NkiTensor, expr: Any, *, mask: Any = None, name: str | None = None) -> NkiInstruction:
    """Legacy ``nisa.iota``: ``dst = expr`` (an affine index expression of ``nl.arange``) on GpSimd;
    ``dst`` in SBUF. Cost: 150 + N cycles."""
    sim = current()
    api = "iota"
    operand(dst, api, "dst", ("sbuf",))
    vals = expr.values if isinstance(expr, IndexExpr) else np.asarray(expr)
    with sim.instruction(name or api, "gpsimd", cost_model.iota_cycles(free_size(dst.shape))) as ins:
        ins.write(dst, vals.reshape(dst.shape) if vals.size == dst.size else vals, mask)
    return issue(sim)


def affine_select_pattern(dst: NkiTensor, pattern: Any, channel_multiplier: int, on_true_tile: NkiTensor,
                          on_false_value: float, cmp_op: Any = "equal", offset: int = 0, *,
                          name: str | None = None) -> NkiInstruction:
    """Current ``nisa.affine_select``: ``dst = where(cmp_op(affine, 0), on_true_tile, on_false_value)``
    with ``affine`` the ``iota`` pattern; ``dst`` and ``on_true_tile`` in SBUF (GpSimd).
    Cost: 150 + N cycles."""
    sim = current()
    api = "affine_select"
    p = operand(on_true_tile, api, "on_true_tile", ("sbuf",))
    samep(api, on_true_tile=p, dst=operand(dst, api, "dst", ("sbuf",)))
    n = free_size(dst.shape)
    if free_size(on_true_tile.shape) != n:
        raise err_invalid_instruction_argument(f"'{api}': on_true_tile and dst differ in elements per partition")
    aff = _pattern_values(pattern, offset, channel_multiplier, p, n, api)
    pred = binary(cmp_op)(aff.astype(np.float64), 0.0).astype(bool)
    with sim.instruction(name or api, "gpsimd", cost_model.iota_cycles(n)) as ins:
        x = f32(ins.read(on_true_tile)).reshape(p, n)
        ins.write(dst, np.where(pred, x, np.float32(on_false_value)).reshape(dst.shape))
    return issue(sim)


def affine_select(dst: NkiTensor, pred: Any, on_true: NkiTensor, on_false_value: float, *, mask: Any = None,
                  name: str | None = None) -> NkiInstruction:
    """Legacy ``nisa.affine_select``: ``dst = where(pred, on_true, on_false_value)`` with ``pred`` an
    affine Mask of index expressions (e.g. ``i_q >= i_k``), on GpSimd. Cost: 150 + N cycles."""
    sim = current()
    api = "affine_select"
    p = operand(on_true, api, "on_true_tile", ("sbuf",))
    samep(api, on_true_tile=p, dst=operand(dst, api, "dst", ("sbuf",)))
    pv = pred.values if isinstance(pred, Mask) else np.asarray(pred, dtype=bool)
    with sim.instruction(name or api, "gpsimd", cost_model.iota_cycles(free_size(dst.shape))) as ins:
        x = f32(ins.read(on_true, mask))
        try:
            pm = np.broadcast_to(pv.reshape(pv.shape + (1,) * (x.ndim - pv.ndim)) if pv.ndim < x.ndim else pv, x.shape)
        except ValueError:
            raise err_invalid_instruction_argument(f"'{api}': predicate of shape {list(pv.shape)} does not match "
                                                   f"{on_true.describe()}") from None
        ins.write(dst, np.where(pm, x, np.float32(on_false_value)), mask)
    return issue(sim)


def local_gather(dst: NkiTensor, src_buffer: NkiTensor, index: NkiTensor, num_elem_per_idx: int = 1,
                 num_valid_indices: int | None = None, *, mask: Any = None, name: str | None = None) -> NkiInstruction:
    """Gather within each GpSimd core's 16 partitions: the core's ``index`` slice (uint16 element
    offsets into each partition's flattened free dims) is flattened partition-first, its first
    ``num_valid_indices`` kept, and every partition of the core reads ``num_elem_per_idx`` contiguous
    elements at each offset (the behaviour of the local_gather golden of AWS's aws-neuron-sdk NKI tests).

    Raises:
        err_invalid_instruction_argument: partitions not a multiple of 16, ``num_elem_per_idx`` not in
            {1, 2, 4, 8, 16, 32}, more than 4096 indices per core.
    """
    sim = current()
    api = "local_gather"
    p = operand(src_buffer, api, "src_buffer", ("sbuf",))
    samep(api, src_buffer=p, index=operand(index, api, "index", ("sbuf",)), dst=operand(dst, api, "dst", ("sbuf",)))
    if p % 16:
        raise err_invalid_instruction_argument(f"'{api}': partition size {p} must be a multiple of 16")
    e = int(num_elem_per_idx)
    if e not in (1, 2, 4, 8, 16, 32):
        raise err_invalid_instruction_argument(f"'{api}': num_elem_per_idx {e} not in (1, 2, 4, 8, 16, 32)")
    per_core = free_size(index.shape) * 16
    nv = per_core if num_valid_indices is None else int(num_valid_indices)
    if nv > per_core or nv > 4096:
        raise err_invalid_instruction_argument(f"'{api}': num_valid_indices {nv} > {min(per_core, 4096)}")
    if dst.dtype != src_buffer.dtype:
        raise err_unsupported_dtype(f"'{api}': no dtype conversion; dst must be {src_buffer.dtype}")
    cycles = cost_model.local_gather_cycles(nv, e, dtypes.itemsize(src_buffer.dtype))
    with sim.instruction(name or api, "gpsimd", cycles) as ins:
        src = ins.read(src_buffer, raw=True).reshape(p, -1)
        idx = np.asarray(ins.read(index, raw=True)).astype(np.int64).reshape(p, -1)
        out = np.zeros((p, nv * e), dtype=src.dtype)
        for c in range(p // 16):
            flat = idx[c * 16:(c + 1) * 16].flatten(order="F")[:nv]
            cols = (flat[:, None] + np.arange(e)[None, :]).reshape(-1)
            if cols.size and (cols.max() >= src.shape[1] or cols.min() < 0):
                raise err_invalid_instruction_argument(f"'{api}': an index reads past the {src.shape[1]} elements "
                                                       "of a partition")
            out[c * 16:(c + 1) * 16] = src[c * 16:(c + 1) * 16][:, cols]
        if out.size != dst.size:
            raise err_invalid_instruction_argument(f"'{api}': dst {dst.describe()} must hold {nv * e} elements per "
                                                   "partition")
        ins.write(dst, out.reshape(dst.shape), mask)
    return issue(sim)


def gather_flattened(dst: NkiTensor, data: NkiTensor, indices: NkiTensor, *, mask: Any = None,
                     name: str | None = None, api: str = "gather_flattened") -> NkiInstruction:
    """Per-partition gather: ``dst[p, j] = data[p].flatten()[indices[p, j]]`` (GpSimd, SBUF)."""
    sim = current()
    p = operand(data, api, "data", ("sbuf",))
    samep(api, data=p, indices=operand(indices, api, "indices", ("sbuf",)), dst=operand(dst, api, "dst", ("sbuf",)))
    if free_size(indices.shape) != free_size(dst.shape):
        raise err_invalid_instruction_argument(f"'{api}': dst and indices differ in elements per partition")
    with sim.instruction(name or api, "gpsimd", cost_model.iota_cycles(free_size(dst.shape))) as ins:
        src = ins.read(data, raw=True).reshape(p, -1)
        idx = np.asarray(ins.read(indices, raw=True)).astype(np.int64).reshape(p, -1)
        if idx.size and (idx.min() < 0 or idx.max() >= src.shape[1]):
            raise err_invalid_instruction_argument(f"'{api}': indices must be in [0, {src.shape[1]})")
        out = np.take_along_axis(src, idx, axis=1)
        if data.dtype == dst.dtype:
            ins.write(dst, out.reshape(dst.shape), mask)
        else:
            ins.write(dst, dtypes.to_f32(out, data.dtype).reshape(dst.shape), mask)
    return issue(sim)


def nc_n_gather(dst: NkiTensor, data: NkiTensor, indices: NkiTensor, *, name: str | None = None) -> NkiInstruction:
    """Current ``nisa.nc_n_gather``: per-partition gather of flattened-free-dim elements by uint32
    ``indices``; ``dst`` has ``data``'s dtype; all in SBUF (GpSimd)."""
    if indices.dtype != dtypes.uint32:
        raise err_unsupported_dtype(f"'nc_n_gather': indices must be uint32, got {indices.describe()}")
    if dst.dtype != data.dtype:
        raise err_unsupported_dtype("'nc_n_gather': dst must have data's dtype")
    return gather_flattened(dst, data, indices, name=name, api="nc_n_gather")


def tensor_partition_reduce(dst: NkiTensor, op: Any, data: NkiTensor, *, mask: Any = None,
                            name: str | None = None) -> NkiInstruction:
    """Reduce across the partitions of ``data`` (add, average, max, bitwise or/and) into ``dst`` (1, F...)
    on GpSimd. Cost: 150 + N cycles."""
    sim = current()
    api = "tensor_partition_reduce"
    rop = op_name(op)
    if rop not in ("add", "average", "maximum", "minimum", "bitwise_or", "bitwise_and"):
        raise err_invalid_instruction_argument(f"'{api}': op {rop!r}; one of add, average, max, bitwise_or, "
                                               "bitwise_and")
    p = operand(data, api, "data", ("sbuf",))
    operand(dst, api, "dst", ("sbuf",))
    if dst.shape[0] != 1 or free_size(dst.shape) != free_size(data.shape):
        raise err_invalid_instruction_argument(f"'{api}': dst must be [1, ...] with data's free size, got "
                                               f"{dst.describe()}")
    with sim.instruction(name or api, "gpsimd", cost_model.iota_cycles(free_size(data.shape))) as ins:
        if rop.startswith("bitwise"):
            x = np.asarray(ins.read(data, mask, raw=True)).astype(np.int64)
        else:
            x = f32(ins.read(data, mask))
        r = reduce_fn(rop)(x.reshape(p, -1), (0,), True)
        ins.write(dst, np.asarray(r).reshape(dst.shape))
    return issue(sim)


def sequence_bounds(dst: NkiTensor, segment_ids: NkiTensor, *, name: str | None = None) -> NkiInstruction:
    """For each element its segment's [start, end) (start in ``dst[:, 0]``, end in ``dst[:, 1]``); ID 0
    is padding (start n, end -1). One partition; float32 or int32 (GpSimd). Cost: 150 + N."""
    sim = current()
    api = "sequence_bounds"
    operand(segment_ids, api, "segment_ids", ("sbuf",))
    operand(dst, api, "dst", ("sbuf",))
    for t in (segment_ids, dst):
        if t.dtype not in (dtypes.float32, dtypes.int32):
            raise err_unsupported_dtype(f"'{api}': {t.describe()} must be float32 or int32")
    p = segment_ids.shape[0]
    n = free_size(segment_ids.shape)
    if dst.size != p * 2 * n:
        raise err_invalid_instruction_argument(f"'{api}': dst must be [{p}, 2, {n}], got {dst.describe()}")
    with sim.instruction(name or api, "gpsimd", cost_model.iota_cycles(n)) as ins:
        seq = f32(ins.read(segment_ids)).reshape(p, n)
        out = np.zeros((p, 2, n), dtype=np.float64)
        for r in range(p):
            s = seq[r]
            lo = np.zeros(n)
            hi = np.zeros(n)
            lo[0] = 0 if s[0] != 0 else n
            for i in range(1, n):
                lo[i] = n if s[i] == 0 else (lo[i - 1] if s[i] == s[i - 1] else i)
            hi[-1] = n if s[-1] != 0 else -1
            for i in range(n - 2, -1, -1):
                hi[i] = -1 if s[i] == 0 else (hi[i + 1] if s[i] == s[i + 1] else i + 1)
            out[r, 0], out[r, 1] = lo, hi
        ins.write(dst, out.reshape(dst.shape))
    return issue(sim)


def nonzero_with_count(dst: NkiTensor, src: NkiTensor, index_offset: int = 0, padding_val: int = -1, *,
                       name: str | None = None) -> NkiInstruction:
    """On partitions 0, 16, ..., 112 only (one per GpSimd core): the indices (+ ``index_offset``) of the
    non-zero elements, then ``padding_val``, then the count; other partitions of ``dst`` unchanged
    (NeuronCore-v3+, SBUF, src float32/int32, dst int32 with one more element). Cost: 150 + N."""
    sim = current()
    api = "nonzero_with_count"
    require_generation(api, 3)
    p = operand(src, api, "src", ("sbuf",))
    samep(api, src=p, dst=operand(dst, api, "dst", ("sbuf",)))
    if src.dtype not in (dtypes.float32, dtypes.int32) or dst.dtype != dtypes.int32:
        raise err_unsupported_dtype(f"'{api}': src float32/int32 and dst int32")
    n = free_size(src.shape)
    if free_size(dst.shape) != n + 1:
        raise err_invalid_instruction_argument(f"'{api}': dst needs {n + 1} elements per partition")
    with sim.instruction(name or api, "gpsimd", cost_model.iota_cycles(n)) as ins:
        x = f32(ins.read(src)).reshape(p, n)
        cur = np.asarray(ins.read(dst, raw=True)).reshape(p, n + 1).astype(np.int64).copy()
        for r in range(0, p, 16):
            nz = np.flatnonzero(x[r] != 0)
            row = np.full(n + 1, int(padding_val), dtype=np.int64)
            row[:nz.size] = nz + int(index_offset)
            row[n] = nz.size
            cur[r] = row
        ins.write(dst, cur.reshape(dst.shape))
    return issue(sim)


def topk(val_dst: NkiTensor, idx_dst: NkiTensor, src: NkiTensor, n: int, *, name: str | None = None) -> NkiInstruction:
    """``nisa.topk`` is not simulated: its page describes the 16-partition snake input but not which
    partitions receive the K results, so a simulation could not be trusted to match the hardware.

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("nki.isa.topk is not supported by the torch_neuronx NKI simulator: the placement "
                              "of the top-K results of a 16-partition snake is not specified by its API page; "
                              "use nisa.max8 / nisa.nc_find_index8 (8 at a time)")


_ = (is_tile,)
