"""What tile syntax means at the instruction level: ``t[...] = x`` and ``t op= x``.

Installed into :mod:`..tile` on import (``install_operators``):

* :func:`assign` -- ``dst[...] = value``: a *fresh* legacy instruction result (a tile an ``nl`` /
  ``nisa`` call just returned) is written in place, as AWS's compiler retargets the instruction into the
  destination; another on-chip tile is copied with ``tensor_copy``; a scalar is a ``memset``.
* :func:`accumulate` -- ``dst op= value``: a fresh matmul result added into PSUM is the Tensor
  Engine's free accumulation; anything else is a ``tensor_tensor`` writing back into ``dst``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..context import current
from ..errors import (err_store_dst_shape_smaller_than_other_shape,
                      err_unsupported_memory)
from ..indexing import as_mask_array
from ..memory import ON_CHIP
from ..tile import NkiTensor, install_operators, is_tile
from .vector import memset, tensor_copy, tensor_tensor

__all__ = ["assign", "accumulate"]


def assign(dst: NkiTensor, value: Any) -> None:
    """``dst[...] = value`` (see the module docstring).

    Raises:
        err_unsupported_memory: a scalar written to HBM, or a copy between HBM and on-chip memory
            (those take ``nl.load`` / ``nl.store`` / ``nisa.dma_copy``).
    """
    if is_tile(value) and value.loop_op is not None:     # dst[...] = nl.loop_reduce(x, op, ...)
        op, value.loop_op = value.loop_op, None
        tensor_tensor(dst, value, dst, op, bcast="all", accumulate_into=True)
        return
    if is_tile(value) and value.accumulated and value.storage is dst.storage:
        value.accumulated = False          # ``t[...] += x`` ends with ``t[...] = t[...]``: done already
        return
    if not is_tile(value):
        if dst.buffer.kind not in ON_CHIP:
            raise err_unsupported_memory(f"assignment of a scalar to {dst.describe()}: HBM is written with "
                                         "nl.store / nisa.dma_copy")
        memset(dst, value)
        return
    if value.fresh and value.buffer.kind == dst.buffer.kind and value.resolver is None:
        _write_fresh(dst, value)
        return
    if dst.buffer.kind not in ON_CHIP or value.buffer.kind not in ON_CHIP:
        raise err_unsupported_memory(f"assignment {dst.describe()} = {value.describe()}: tiles move between HBM "
                                     "and SBUF only with nl.load / nl.store / nisa.dma_copy")
    tensor_copy(dst, value)


def _write_fresh(dst: NkiTensor, value: NkiTensor) -> None:
    """Retarget a fresh result into ``dst``: its values (and ready times) land there, no instruction."""
    sim = current()
    st = dst.storage
    if st.immutable:
        sim.write_parameter(st, f"assignment writes input {dst.describe()}")
    vacc = value.access()
    vals = np.asarray(vacc.get(value.storage.flat(value.dtype)))
    rdy = np.asarray(vacc.storage_access().get(value.storage.aux["ready"])) if "ready" in value.storage.aux else None
    try:
        vals = _bcast(vals, dst.shape)
        rdy = _bcast(rdy, dst.shape) if rdy is not None else None
    except ValueError:
        raise err_store_dst_shape_smaller_than_other_shape(
            f"destination {dst.describe()} vs source {value.describe()}") from None
    m = as_mask_array(value.fresh_mask, dst.shape) if value.fresh_mask is not None else None
    with sim.instruction("assignment", None) as ins:
        if value.dtype == dst.dtype:
            ins.write(dst, vals, m)
        else:
            ins.write(dst, dtypes.to_f32(vals, value.dtype), m)
        ins.writes.clear()                   # no instruction: keep the producer's ready times
    if rdy is not None:
        acc = dst.access().storage_access()
        acc.put(st.aux_array("ready"), rdy.astype(np.float64), m)
    value.fresh = False


def _bcast(a: np.ndarray, shape: tuple) -> np.ndarray:
    if a.shape == tuple(shape):
        return a
    if a.ndim < len(shape):
        a = a.reshape(a.shape + (1,) * (len(shape) - a.ndim))
    elif a.ndim > len(shape) and all(s == 1 for s in a.shape[len(shape):]):
        a = a.reshape(a.shape[:len(shape)])
    try:
        return np.broadcast_to(a, shape)
    except ValueError:
        if a.size == int(np.prod(shape, dtype=np.int64)):
            return a.reshape(shape)
        raise


def accumulate(dst: NkiTensor, value: Any, op: str) -> None:
    """``dst op= value`` (``op``: "add", "subtract", "multiply", "divide"); see the module docstring."""
    sim = current()
    if (op == "add" and dst.buffer.kind == "psum" and is_tile(value) and value.fresh
            and value.buffer.kind == "psum"):
        vacc = value.access()
        vals = dtypes.to_f32(_bcast(np.asarray(vacc.get(value.storage.flat(value.dtype))), dst.shape), value.dtype)
        with sim.instruction("psum_accumulate", None) as ins:
            # a PSUM element no instruction wrote yet starts the accumulation group at zero (as
            # nc_matmul's own accumulation does), so ``acc = nl.ndarray(..., psum); acc += matmul``
            # works as on the hardware
            dacc = dst.access().storage_access()
            init = np.asarray(dacc.get(dst.storage.aux_array("psum_written", 0.0, np.bool_))).astype(bool)
            if init.all():
                ins.write(dst, vals, accumulate=True)
            else:
                old = np.where(init.reshape(dst.shape), np.asarray(ins.read(dst), np.float32), np.float32(0)) \
                    if init.any() else np.float32(0)
                ins.write(dst, old + vals, exempt=True)
            ins.writes.clear()
        if "ready" in value.storage.aux:
            r = _bcast(np.asarray(vacc.storage_access().get(value.storage.aux["ready"])), dst.shape)
            acc = dst.access().storage_access()
            cur = np.asarray(acc.get(dst.storage.aux_array("ready")))
            acc.put(dst.storage.aux_array("ready"), np.maximum(cur, r))
        value.fresh = False
        return
    if not is_tile(value):
        from .vector import tensor_scalar
        tensor_scalar(dst, dst, op, value)
        return
    tensor_tensor(dst, dst, value, op, accumulate_into=True, bcast="all")


install_operators({"assign": assign, "accumulate": accumulate})
