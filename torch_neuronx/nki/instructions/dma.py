"""DMA instructions: ``dma_copy`` (with indirect gather/scatter and read-modify-write), the load/store
of ``nl``, ``load_transpose2d``, ``dma_transpose`` and ``dma_compute``.

Rules (``nki.isa.dma_copy`` page, both front ends): "Both src and dst tiles can be in HBM or SBUF"
(never PSUM: ``err_unsupported_memory``); "The total number of data elements in src must match that
of dst"; "The DMA engines automatically handle data type conversion ... first casting from src.dtype
to float32, then from float32 to dst.dtype" (same dtypes: a bit copy). Indirect views
(``.ap(vector_offset=...)``, legacy tile indices) are resolved when the DMA runs; out-of-bound
offsets raise ``err_tensor_access_out_of_bound`` unless ``oob_mode=oob_mode.skip`` ("Silently skips
any operations involving out-of-bounds indices").

Cost: bytes / the platform's sustained DMA rate (16 engines x 17|23|33 B/ns x fitted efficiency) of
queue time, plus the fixed latency per transfer (~1.3 us); see ``runtime.platforms.DmaSpec``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost_model, dtypes
from ..context import current
from ..errors import (err_exceed_max_supported_dimension, err_invalid_instruction_argument,
                      err_store_dst_shape_smaller_than_other_shape, err_unsupported_dtype,
                      err_unsupported_memory)
from ..indexing import as_mask_array
from ..ops import binary, op_name
from ..tile import NkiTensor, is_tile
from .common import (NkiInstruction, check_memory, count, free_size, is_number, issue, operand,
                     require_generation)
from .constants import dge_mode as _dge_mode, engine_name, oob_mode as _oob_mode

__all__ = ["dma_copy", "load", "store", "load_transpose2d", "dma_transpose", "dma_compute", "dma_cost", "dma_chunks"]


def dma_cost(nbytes: int, chunks: int = 0) -> tuple[float, float]:
    """(queue ns, fixed latency ns) of a DMA of ``nbytes`` in ``chunks`` contiguous runs on the running
    simulator's platform."""
    p = current().platform
    return cost_model.dma_time_ns(nbytes, p, chunks), cost_model.dma_fixed_latency_ns(p)


def dma_chunks(*views: Any, fraction: float = 1.0) -> int:
    """Contiguous runs of a transfer between ``views`` (the least contiguous side counts), times the
    transferred ``fraction`` of the elements (a mask)."""
    n = 0
    for v in views:
        if is_tile(v):
            strides = None if v.is_gather or v.is_indirect() else v.strides
            n = max(n, cost_model.contiguous_chunks(v.shape, strides, v.buffer.kind != "hbm"))
    return int(round(n * fraction))


def _no_psum(api: str, **ops: Any) -> None:
    for arg, x in ops.items():
        if is_tile(x) and x.buffer.kind == "psum":
            raise err_unsupported_memory(f"'{api}': DMA cannot access PSUM ('{arg}' {x.describe()}); copy PSUM to "
                                         "SBUF first (nisa.tensor_copy / nl.copy)")


def _fit(api: str, vals: np.ndarray, dst: NkiTensor, src_shape: tuple) -> np.ndarray:
    """Source values shaped for ``dst``: equal shapes, NKI broadcasting (size-1 dims), or the same
    element count (row-major)."""
    if vals.shape == dst.shape:
        return vals
    n_src = int(np.prod(src_shape, dtype=np.int64)) if src_shape else 1
    if n_src == dst.size:
        return vals.reshape(dst.shape) if vals.size == dst.size else vals
    try:
        a = vals.reshape(vals.shape + (1,) * (dst.ndim - vals.ndim)) if vals.ndim < dst.ndim else vals
        return np.broadcast_to(a, dst.shape)
    except ValueError:
        raise err_store_dst_shape_smaller_than_other_shape(
            f"'{api}': source shape {list(src_shape)} does not match destination {dst.describe()} (the element "
            "counts must match)") from None


def _check_modes(api: str, dge_mode: Any, oob_mode: Any, engine: Any = None) -> bool:
    """Validate the DGE / OOB / engine arguments of a DMA; True for ``oob_mode.skip``. The enums'
    integer values are taken too (nki-library passes ``dge_mode=3`` for ``dge_mode.none``)."""
    if isinstance(dge_mode, int) and not isinstance(dge_mode, bool):
        if dge_mode not in {m.value for m in _dge_mode}:
            raise err_invalid_instruction_argument(f"'{api}': dge_mode={dge_mode!r} (use nisa.dge_mode.*)")
        dge_mode = _dge_mode(dge_mode)
    if isinstance(oob_mode, int) and not isinstance(oob_mode, bool):
        if oob_mode not in {m.value for m in _oob_mode}:
            raise err_invalid_instruction_argument(f"'{api}': oob_mode={oob_mode!r} (use nisa.oob_mode.*)")
        oob_mode = _oob_mode(oob_mode)
    if dge_mode is not None and not isinstance(dge_mode, _dge_mode) and getattr(dge_mode, "name", None) not in (
            "unknown", "swdge", "hwdge", "none"):
        raise err_invalid_instruction_argument(f"'{api}': dge_mode={dge_mode!r} (use nisa.dge_mode.*)")
    dname = getattr(dge_mode, "name", "unknown") if dge_mode is not None else "unknown"
    if dname == "hwdge":
        require_generation(f"{api}(dge_mode=hwdge)", 3)
    if engine is not None:
        e = engine_name(engine, "unknown")
        if e not in ("unknown", "sync", "scalar", "dma"):
            raise err_invalid_instruction_argument(f"'{api}': engine={engine!r}: DMA descriptors are generated "
                                                   "by the sync or scalar engine")
    oname = getattr(oob_mode, "name", "error") if oob_mode is not None else "error"
    if oname not in ("error", "skip"):
        raise err_invalid_instruction_argument(f"'{api}': oob_mode={oob_mode!r} (use nisa.oob_mode.error / skip)")
    return oname == "skip"


def dma_copy(dst: NkiTensor, src: Any, mask: Any = None, *, api: str = "dma_copy", dst_rmw_op: Any = None,
             oob_mode: Any = _oob_mode.error, dge_mode: Any = _dge_mode.unknown, engine: Any = None,
             name: str | None = None) -> NkiInstruction:
    """``dst = src`` by DMA (any of HBM/SBUF, never PSUM); ``dst_rmw_op`` makes it
    ``dst = dst <op> src`` (legacy read-modify-write DMA). ``src`` may be a scalar (a fill).

    Raises:
        err_unsupported_memory: a PSUM operand.
        err_store_dst_shape_smaller_than_other_shape: element counts differ.
        err_tensor_access_out_of_bound: indirect offsets out of bounds (``oob_mode.error``).
    """
    sim = current()
    _no_psum(api, dst=dst, src=src)
    if not is_tile(src) and not is_number(src):
        # np.float32(None) is NaN: a store of None used to write NaN with no error
        raise err_invalid_instruction_argument(f"'{api}': the source must be a tensor or a number, got {src!r}")
    skip = _check_modes(api, dge_mode, oob_mode, engine)
    if is_tile(src) and src.buffer.kind != "hbm":
        src.check_partition_layout()
    if dst.buffer.kind != "hbm":
        dst.check_partition_layout()
    isz = max(dtypes.itemsize(src.dtype), dtypes.itemsize(dst.dtype)) if is_tile(src) else dtypes.itemsize(dst.dtype)
    n = count(mask, dst.shape)
    nbytes = n * isz
    busy, lat = dma_cost(nbytes, dma_chunks(src, dst, fraction=n / max(dst.size, 1)))
    rmw = op_name(dst_rmw_op) if dst_rmw_op is not None else None
    with sim.instruction(name or api, "dma", busy_ns=busy, latency_ns=lat) as ins:
        if is_tile(src):
            same = src.dtype == dst.dtype and rmw is None
            vals = ins.read(src, mask if src.shape == dst.shape else None, raw=same, oob_skip=skip)
            vals = _fit(api, vals, dst, src.shape)
            wmask = mask
            if skip and tuple(src.shape) == tuple(dst.shape):
                # oob_mode.skip: an element whose indirect source is out of bounds is not transferred,
                # so its destination keeps its value
                src_oob = src.access().oob
                if src_oob is not None:
                    keep = ~np.asarray(src_oob, dtype=bool)
                    base = as_mask_array(mask, dst.shape)
                    wmask = keep if base is None else (keep & base)
            if same:
                ins.write(dst, vals, wmask, oob_skip=skip)
            else:
                ins.write(dst, vals, wmask, accumulate=rmw is not None, accumulate_op=rmw, oob_skip=skip)
        else:
            ins.write(dst, np.float32(src) if dtypes.is_float(dst.dtype) else src, mask,
                      accumulate=rmw is not None, accumulate_op=rmw, oob_skip=skip)
    sim.timeline.dma_bytes += nbytes
    return issue(sim)


def load(dst: NkiTensor, src: NkiTensor, mask: Any = None, *, name: str | None = None) -> NkiInstruction:
    """HBM ``src`` -> SBUF ``dst`` (``nl.load``). ``err_unsupported_memory`` otherwise."""
    if is_tile(src):
        check_memory(src, ("hbm",), "load", "src")
    check_memory(dst, ("sbuf",), "load", "dst")
    return dma_copy(dst, src, mask, api=name or "load")


def store(dst: NkiTensor, src: Any, mask: Any = None, *, name: str | None = None) -> NkiInstruction:
    """SBUF ``src`` (or a scalar) -> HBM ``dst`` (``nl.store``). A PSUM ``src`` is an error here; the
    legacy front end copies it to SBUF first (its ``nl.store`` page: "an extra copy will be performed")."""
    check_memory(dst, ("hbm",), "store", "dst")
    if is_tile(src):
        check_memory(src, ("sbuf",), "store", "value")
    return dma_copy(dst, src, mask, api=name or "store")


def load_transpose2d(dst: NkiTensor, src: NkiTensor, mask: Any = None) -> NkiInstruction:
    """HBM ``src`` [A, B] -> SBUF ``dst`` [B, A] (DMA transpose, legacy ``nl.load_transpose2d``)."""
    sim = current()
    check_memory(src, ("hbm",), "load_transpose2d", "src")
    check_memory(dst, ("sbuf",), "load_transpose2d", "dst")
    if len(src.shape) != 2:
        raise err_exceed_max_supported_dimension(f"'load_transpose2d' src {list(src.shape)}: rank 2 only")
    nbytes = count(None, src.shape) * dtypes.itemsize(src.dtype)
    busy, lat = dma_cost(nbytes)
    with sim.instruction("load_transpose2d", "dma", busy_ns=busy, latency_ns=lat) as ins:
        vals = ins.read(src)
        ins.write(dst, vals.T, mask)
    sim.timeline.dma_bytes += nbytes
    return issue(sim)


_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(dst: NkiTensor, src: NkiTensor, axes: Any = None, *, mask: Any = None,
                  dge_mode: Any = _dge_mode.unknown, oob_mode: Any = _oob_mode.error,
                  name: str | None = None) -> NkiInstruction:
    """``dst = src.transpose(axes)`` by DMA: 2-D [1, 0], 3-D [2, 1, 0], 4-D [3, 1, 2, 0] (the only axes
    the ``nki.isa.dma_transpose`` page supports). ``src`` in HBM or SBUF, ``dst`` in SBUF, same dtype.

    Raises:
        err_invalid_instruction_argument: other axes; err_unsupported_dtype: dtypes differ.
    """
    sim = current()
    api = "dma_transpose"
    skip = _check_modes(api, dge_mode, oob_mode)
    check_memory(src, ("hbm", "sbuf"), api, "src")
    check_memory(dst, ("sbuf",), api, "dst")
    nd = len(src.shape)
    perm = _TRANSPOSE_AXES.get(nd)
    if perm is None:
        raise err_exceed_max_supported_dimension(f"'{api}': src {src.describe()} must be 2-D to 4-D")
    if axes is not None and tuple(axes) != perm:
        raise err_invalid_instruction_argument(f"'{api}': axes={tuple(axes)}; supported for a {nd}-D src: {perm}")
    if src.dtype != dst.dtype:
        raise err_unsupported_dtype(f"'{api}': src {src.describe()} and dst {dst.describe()} must have the same dtype")
    nbytes = src.size * dtypes.itemsize(src.dtype)
    busy, lat = dma_cost(nbytes)
    with sim.instruction(name or api, "dma", busy_ns=busy, latency_ns=lat) as ins:
        vals = ins.read(src, raw=True, oob_skip=skip)
        t = np.transpose(vals, perm)
        ins.write(dst, _fit(api, t, dst, t.shape), mask)
    sim.timeline.dma_bytes += nbytes
    return issue(sim)


def dma_compute(dst: NkiTensor, srcs: list, reduce_op: Any, scales: Any = None, unique_indices: bool = True,
                oob_mode: Any = _oob_mode.error, name: str | None = None) -> NkiInstruction:
    """``dst = srcs[0] * scales[0] + srcs[1] * scales[1] + ...`` computed by the DMA engines in fp32.

    Constraints of the ``nki.isa.dma_compute`` page: ``reduce_op`` is ``nl.add``, every scale is 1.0,
    at most 16 sources with the element count of ``dst``, ``unique_indices=True``.

    Raises:
        err_invalid_instruction_argument: a constraint above is broken.
    """
    sim = current()
    api = "dma_compute"
    skip = _check_modes(api, None, oob_mode)
    if op_name(reduce_op) != "add":
        raise err_invalid_instruction_argument(f"'{api}': reduce_op={op_name(reduce_op)!r}; only nl.add is supported")
    if not srcs or len(srcs) > 16:
        raise err_invalid_instruction_argument(f"'{api}': {len(srcs)} sources (1 to 16)")
    sc = [1.0] * len(srcs) if scales is None else [float(s) for s in scales]
    if len(sc) != len(srcs) or any(s != 1.0 for s in sc):
        raise err_invalid_instruction_argument(f"'{api}': scales={scales!r}; every scale must be 1.0")
    if not unique_indices:
        raise err_invalid_instruction_argument(f"'{api}': unique_indices=False is not supported (AWS: non-unique "
                                               "indices not yet supported)")
    _no_psum(api, dst=dst, **{f"srcs[{i}]": s for i, s in enumerate(srcs)})
    for i, s in enumerate(srcs):
        if s.size != dst.size:
            raise err_invalid_instruction_argument(f"'{api}': srcs[{i}] {s.describe()} and dst {dst.describe()} "
                                                   "differ in element count")
    nbytes = sum(s.size * dtypes.itemsize(s.dtype) for s in srcs) + dst.size * dtypes.itemsize(dst.dtype)
    busy, lat = dma_cost(nbytes)
    with sim.instruction(name or api, "dma", busy_ns=busy, latency_ns=lat) as ins:
        acc = np.zeros(dst.shape, dtype=np.float32)
        for s in srcs:
            acc = acc + _fit(api, ins.read(s, oob_skip=skip), dst, s.shape)
        ins.write(dst, acc, oob_skip=skip)
    sim.timeline.dma_bytes += nbytes
    return issue(sim)


_ = (binary, operand, free_size)
