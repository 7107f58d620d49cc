"""The instruction layer: every NeuronCore instruction, in destination-passing style.

Each function writes into the destination tile ``dst`` passed to it and returns ``dst``. It checks
NKI's rules (buffers per API, partition counts, matmul/PSUM/transpose limits, masks; each failure is
the :mod:`.errors` class named after AWS's error code), computes the result in float32 with NumPy,
rounds into ``dst``'s dtype, and charges the cost model (see :mod:`.cost_model` for the cycle
formulas and their AWS sources).

Front ends sit on this layer. The legacy ``neuronxcc.nki`` API (:mod:`.language`, :mod:`.isa`)
allocates each result tile (:func:`fresh_result`) and calls these functions. The layer takes the
destination first so that a front end for the current ``nki`` API, whose ``nisa`` calls take
``dst=``, can call it directly; that front end does not exist yet.

This module also gives tile syntax its meaning at the instruction level: ``t[...] = x``
(:func:`assign`) and ``t op= x`` (:func:`accumulate`), installed into :mod:`.tile` on import.

Shapes: a tile is ``(P, F...)`` with P (partitions, axis 0) <= 128. Units: cycles of the engine named.
"""
from __future__ import annotations

import enum

import numpy as np

from . import cost_model, dtypes
from .context import current
from .errors import (err_activation_bias_invalid_type, err_activation_scale_scalar_or_vector,
                     err_cannot_update_immutable_parameter, err_exceed_max_supported_dimension,
                     err_num_partition_exceed_arch_limit, err_num_partition_mismatch,
                     err_reduce_axis_not_trailing_free, err_size_of_dimension_exceed_arch_limit,
                     err_store_dst_shape_smaller_than_other_shape, err_unsupported_dtype,
                     err_unsupported_memory)
from .indexing import IndexExpr, Mask, as_mask_array, resolve, tile_broadcast
from .memory import ON_CHIP, sbuf
from .ops import binary, op_name, reduce_fn, unary
from .tile import NkiTensor, View, as_view, install_operators, is_tile

__all__ = ["engine", "reduce_cmd", "nc_version", "engine_name", "check_memory", "reduce_axes",
           "free_size", "fresh_result", "assign", "accumulate", "dma_copy", "load", "store",
           "load_transpose2d", "check_matmul_operands", "nc_matmul", "check_transpose_shape",
           "nc_transpose", "activation", "tensor_tensor", "tensor_scalar", "tensor_reduce",
           "tensor_copy", "iota", "memset", "affine_select", "select", "bn_stats", "bn_aggr",
           "device_print"]


class engine(enum.Enum):
    """Compute engines of a NeuronCore (``nisa.engine``)."""
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    unknown = "unknown"


class reduce_cmd(enum.Enum):
    """Scalar-engine reduction register commands (``nisa.reduce_cmd``)."""
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3


class nc_version(enum.Enum):
    """NeuronCore generations (``nisa.nc_version``): gen2 = NeuronCore-v2 (trn1, inf2), gen3 = v3
    (trn2), gen4 = v4 (trn3). The value is ``CoreSpec.generation`` of the platform table."""
    gen2 = 2
    gen3 = 3
    gen4 = 4


def engine_name(e, default: str) -> str:
    """Canonical engine name ("tensor", "vector", "scalar", "gpsimd") of an ``engine=`` argument: an
    :class:`engine`, a name or an AWS alias ("act", "pool", "pe", "dve"); ``default`` for None or
    ``engine.unknown``."""
    if e is None:
        return default
    if isinstance(e, engine):
        e = e.value
    e = str(e).lower()
    e = {"act": "scalar", "activation": "scalar", "pool": "gpsimd", "pe": "tensor", "dve": "vector"}.get(e, e)
    return default if e == "unknown" else e


# ---------------------------------------------------------------------------------------------------
def check_memory(x, kinds, api: str, arg: str) -> None:
    """Raise ``err_unsupported_memory`` unless tile ``x`` (operand ``arg`` of ``api``) is in one of
    the buffer kinds ``kinds`` ("hbm", "sbuf", "psum")."""
    kind = x.buffer.kind
    if kind not in kinds:
        raise err_unsupported_memory(
            f"operand '{arg}' of '{api}' must be in {'|'.join(kinds)}, got {x.describe()}")


def _tile(x, api, arg, kinds=ON_CHIP) -> int:
    """Check a compute operand (memory, partition layout); return its partition count."""
    if not is_tile(x):
        raise TypeError(f"operand '{arg}' of '{api}' must be a tile, got {type(x).__name__}")
    check_memory(x, kinds, api, arg)
    x.partition_info()
    return x.shape[0] if x.shape else 1


def _samep(api, **ps):
    vals = {k: v for k, v in ps.items() if v is not None}
    if len(set(vals.values())) > 1:
        desc = ", ".join(f"{k}[{v} partitions]" for k, v in vals.items())
        raise err_num_partition_mismatch(f"'{api}': {desc}")


def free_size(shape) -> int:
    """Elements per partition of a tile shape (N of the cost formulas)."""
    return int(np.prod(shape[1:])) if len(shape) > 1 else 1


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def _gpsimd_no_psum(eng, api, **ops):
    if eng == "gpsimd":
        for k, v in ops.items():
            if is_tile(v) and v.buffer.kind == "psum":
                raise err_unsupported_memory(f"'{api}' on the GpSimd engine cannot access PSUM: "
                                             f"operand '{k}' {v.describe()}")


def _scalar_operand(ins, x, p, api, arg, check=None):
    """A scalar or a (P, 1) per-partition vector operand -> float32 value broadcastable to (P, ...)."""
    if x is None:
        return None
    if is_tile(x):
        if check is None:
            check = err_num_partition_mismatch
        xp = _tile(x, api, arg)
        if xp != p or free_size(x.shape) != 1:
            raise check(f"'{api}': '{arg}' must be a scalar or a ({p}, 1) vector, got {x.describe()}")
        return _f32(ins.read(x)).reshape(p, 1)
    return np.float32(x)


def _count(mask, shape):
    m = as_mask_array(mask, shape)
    return int(np.prod(shape)) if m is None else int(m.sum())


# --- results, assignment and accumulation -------------------------------------------------------
def fresh_result(shape, dtype, buffer=sbuf, mask=None) -> NkiTensor:
    """A new tile for an instruction's result, marked *fresh*: assigning it to another tile
    (``t[...] = result``) then writes the values in place instead of issuing a copy instruction,
    as the compiler does for the legacy API's returned tiles.

    Args:
        shape: tile shape ``(P, F...)``; dtype: NKI dtype; buffer: ``sbuf`` (default) or ``psum``.
        mask: the mask the result is computed under (an assignment writes only those elements).
    """
    t = current().new_tensor(tuple(shape), dtype, buffer)
    t.fresh = True
    t.fresh_mask = mask
    return t


def assign(dst: View, value) -> None:
    """``dst[...] = value``: a fresh instruction result is written in place (no extra instruction);
    another tile is copied with :func:`tensor_copy`; a scalar is :func:`memset`.

    Raises:
        err_unsupported_memory: for a scalar written to HBM, or a copy between HBM and on-chip
            memory (those take ``nl.load`` / ``nl.store`` / ``nisa.dma_copy``).
    """
    if isinstance(value, View) and value.accumulated and value.tensor is dst.tensor:
        value.accumulated = False          # ``t[...] += x`` ends with ``t[...] = t[...]``: done already
        return
    if not is_tile(value):
        if dst.buffer.kind not in ON_CHIP:
            raise err_unsupported_memory(f"assignment of a scalar to {dst.describe()}: HBM is "
                                         "written with nl.store")
        memset(dst, value)
        return
    if isinstance(value, NkiTensor) and value.fresh and value.buffer.kind == dst.buffer.kind:
        _write_fresh(dst, value)
        return
    if dst.buffer.kind not in ON_CHIP or value.buffer.kind not in ON_CHIP:
        raise err_unsupported_memory(
            f"assignment {dst.describe()} = {value.describe()}: tiles move between HBM and "
            "SBUF only with nl.load / nl.store / nisa.dma_copy")
    tensor_copy(dst, value)


def _write_fresh(dst: View, value: NkiTensor) -> None:
    """Retarget a fresh result into ``dst``: its values (and ready times) land there, no instruction."""
    sim = current()
    dv = as_view(dst)
    t = dv.tensor
    if t.root.immutable:
        raise err_cannot_update_immutable_parameter(f"assignment writes input {t.describe()}")
    try:
        vals = tile_broadcast(value.data, dv.shape)
        rdy = tile_broadcast(value.aux("ready"), dv.shape) if value.aux_ else None
    except ValueError:
        raise err_store_dst_shape_smaller_than_other_shape(
            f"destination {dv.describe()} vs source {value.describe()}") from None
    m = as_mask_array(value.fresh_mask, dv.shape) if value.fresh_mask is not None else None
    idx, sel = resolve(dv.comps, t.shape, dv.shape, dv.advanced, m, t.name)
    sim.check_write_conflict(t, idx, False, "assignment")
    t.data[idx] = dtypes.round_to(vals[sel] if sel is not Ellipsis else vals, t.dtype)
    t.root.written = True
    if rdy is not None:
        t.aux("ready")[idx] = rdy[sel] if sel is not Ellipsis else rdy
    value.fresh = False


def accumulate(dst, value, op: str) -> None:
    """``dst op= value`` (``op``: "add", "subtract", "multiply", "divide"). PSUM ``+=`` of a fresh
    matmul result is the Tensor Engine's free accumulation; anything else is a
    :func:`tensor_tensor` writing back into ``dst``."""
    dv = as_view(dst)
    if (op == "add" and dv.buffer.kind == "psum" and isinstance(value, NkiTensor) and value.fresh
            and value.buffer.kind == "psum"):
        t = dv.tensor
        vals = tile_broadcast(value.data, dv.shape)
        idx, _ = resolve(dv.comps, t.shape, dv.shape, dv.advanced, None, t.name)
        t.data[idx] = dtypes.round_to(t.data[idx] + vals, t.dtype)
        t.root.written = True
        if value.aux_:
            r = t.aux("ready")
            r[idx] = np.maximum(r[idx], tile_broadcast(value.aux("ready"), dv.shape))
        value.fresh = False
        return
    tensor_tensor(dv, dv, value, op, accumulate_into=True)


# --- data movement ----------------------------------------------------------------------------------
def dma_copy(dst, src, mask=None, *, api="dma_copy"):
    """Copy ``src`` -> ``dst`` with the DMA engines (any of HBM/SBUF, never PSUM).

    Cost: bytes / the platform's sustained DMA rate (16 engines x 17|23|33 B/ns x fitted efficiency)
    of queue time, plus the fixed latency per transfer (~1.3 us); see ``runtime.platforms.DmaSpec``.
    """
    sim = current()
    dv = as_view(dst)
    for arg, x in (("dst", dv), ("src", src)):
        if is_tile(x) and x.buffer.kind == "psum":
            raise err_unsupported_memory(f"'{api}': DMA cannot access PSUM ('{arg}' {x.describe()}); "
                                         "copy PSUM to SBUF first (nl.copy / nisa.tensor_copy)")
    if is_tile(src):
        src.partition_info()
        isz = max(dtypes.itemsize(src.dtype), dtypes.itemsize(dv.dtype))
    else:
        isz = dtypes.itemsize(dv.dtype)
    if dv.buffer.kind in ON_CHIP:
        dv.partition_info()
    nbytes = _count(mask, dv.shape) * isz
    p = sim.platform
    with sim.instruction(api, "dma", busy_ns=cost_model.dma_time_ns(nbytes, p),
                         latency_ns=cost_model.dma_fixed_latency_ns(p)) as ins:
        vals = ins.read(src, mask) if is_tile(src) else src
        if is_tile(src):
            try:
                tile_broadcast(np.empty(src.shape, dtype=bool), dv.shape)
            except ValueError:
                raise ValueError(f"'{api}': shape {list(src.shape)} of src does not match dst "
                                 f"{list(dv.shape)}") from None
        ins.write(dv, vals, mask)
    sim.timeline.dma_bytes += nbytes
    return dst


def load(dst, src, mask=None):
    """HBM ``src`` -> SBUF ``dst`` (``nl.load``). err_unsupported_memory otherwise."""
    if is_tile(src):
        check_memory(src, ("hbm",), "load", "src")
    check_memory(as_view(dst), ("sbuf",), "load", "dst")
    return dma_copy(dst, src, mask, api="load")


def store(dst, src, mask=None):
    """SBUF ``src`` (or a scalar) -> HBM ``dst`` (``nl.store``). Storing from PSUM is an error."""
    check_memory(as_view(dst), ("hbm",), "store", "dst")
    if is_tile(src):
        check_memory(src, ("sbuf",), "store", "value")
    return dma_copy(dst, src, mask, api="store")


def load_transpose2d(dst, src, mask=None):
    """HBM ``src`` [A, B] -> SBUF ``dst`` [B, A] (DMA transpose, ``nl.load_transpose2d``)."""
    sim = current()
    check_memory(src, ("hbm",), "load_transpose2d", "src")
    dv = as_view(dst)
    check_memory(dv, ("sbuf",), "load_transpose2d", "dst")
    if len(src.shape) != 2:
        raise err_exceed_max_supported_dimension(f"'load_transpose2d' src {list(src.shape)}: rank 2 only")
    nbytes = _count(None, src.shape) * dtypes.itemsize(src.dtype)
    p = sim.platform
    with sim.instruction("load_transpose2d", "dma", busy_ns=cost_model.dma_time_ns(nbytes, p),
                         latency_ns=cost_model.dma_fixed_latency_ns(p)) as ins:
        vals = ins.read(src)
        ins.write(dv, vals.T, mask)
    sim.timeline.dma_bytes += nbytes
    return dst


# --- Tensor Engine ----------------------------------------------------------------------------------
def check_matmul_operands(stationary, moving, api="nc_matmul"):
    """Memory, partition and size rules of the Tensor Engine operands; returns (K, M, N)."""
    for arg, x in (("stationary", stationary), ("moving", moving)):
        if not is_tile(x):
            raise TypeError(f"'{api}': {arg} must be a tile")
        if x.shape and x.shape[0] > 128:
            raise err_num_partition_exceed_arch_limit(
                f"'{api}': contraction (partition) size of {arg} {x.describe()} > 128")
        check_memory(x, ("sbuf",), api, arg)
        x.partition_info()
    if len(stationary.shape) != 2 or len(moving.shape) != 2:
        raise err_exceed_max_supported_dimension(
            f"'{api}': stationary {list(stationary.shape)} and moving {list(moving.shape)} must be 2-D")
    k1, m = stationary.shape
    k2, n = moving.shape
    _samep(api, stationary=k1, moving=k2)
    if m > 128:
        raise err_size_of_dimension_exceed_arch_limit(
            f"'{api}': stationary free size {m} > 128 (gemm_stationary_fmax), {stationary.describe()}")
    if n > 512:
        raise err_size_of_dimension_exceed_arch_limit(
            f"'{api}': moving free size {n} > 512 (gemm_moving_fmax), {moving.describe()}")
    return k1, m, n


def nc_matmul(dst, stationary, moving, *, accumulate=False, is_transpose=False, mask=None):
    """``dst[M, N] (+)= stationary[K, M].T @ moving[K, N]`` on the Tensor Engine.

    Rules: inputs in SBUF, dst in PSUM with dtype float32 (``err_unsupported_memory`` /
    ``err_unsupported_dtype``); K equal on both (``err_num_partition_mismatch``) and <= 128
    (``err_num_partition_exceed_arch_limit``); M <= 128 (gemm_stationary_fmax), N <= 512
    (gemm_moving_fmax) (``err_size_of_dimension_exceed_arch_limit``).
    Cost: max(min(64, M), N) cycles (x4 with fp32 inputs); FLOPs 2*K*M*N.
    """
    sim = current()
    api = "nc_matmul"
    dv = as_view(dst)
    k1, m, n = check_matmul_operands(stationary, moving)
    check_memory(dv, ("psum",), api, "dst")
    dv.partition_info()
    if dv.dtype != dtypes.float32 and not is_transpose:
        raise err_unsupported_dtype(f"'{api}': matmul output must be float32 in PSUM, got {dv.describe()}")
    if tuple(dv.shape) != (m, n):
        raise ValueError(f"'{api}': dst shape {list(dv.shape)} != [{m}, {n}]")
    fp32 = dtypes.float32 in (stationary.dtype, moving.dtype)
    cycles = cost_model.matmul_cycles(m, n, fp32)
    with sim.instruction(api, "tensor", cycles) as ins:
        a = _f32(ins.read(stationary))
        b = _f32(ins.read(moving))
        res = a.T @ b
        ins.write(dv, res, mask, accumulate=accumulate)
    if not is_transpose:
        name = dtypes.dtype_name(stationary.dtype if stationary.dtype != dtypes.float32 else moving.dtype)
        if fp32:
            name = "float32"
        sim.timeline.add_flops(2.0 * k1 * m * n, name)
    return dst


def check_transpose_shape(data, eng: str, api: str = "nc_transpose"):
    """Rank 2, <= 128x128 on the Tensor Engine, <= 32x32 on the Vector Engine."""
    if len(data.shape) != 2:
        raise err_exceed_max_supported_dimension(f"'{api}' {data.describe()}: rank 2 only")
    lim = 128 if eng == "tensor" else 32
    if max(data.shape) > lim:
        raise err_size_of_dimension_exceed_arch_limit(
            f"'{api}' on {eng} engine: {data.describe()} exceeds {lim}x{lim}")


def nc_transpose(dst, data, *, engine=None, mask=None):
    """``dst[F, P] = data[P, F].T``.

    Tensor Engine (default): data SBUF [<=128, <=128], dst PSUM; cost as a matmul against identity.
    Vector Engine: [<=32, <=32], SBUF/PSUM both sides; cost max(MIN_II, F).
    """
    sim = current()
    api = "nc_transpose"
    eng = engine_name(engine, "tensor")
    dv = as_view(dst)
    check_transpose_shape(data, eng)
    p, f = data.shape
    if eng == "tensor":
        _tile(data, api, "data", ("sbuf",))
        _tile(dv, api, "dst", ("psum",))
        cycles = cost_model.matmul_cycles(f, p, data.dtype == dtypes.float32)
    else:
        _tile(data, api, "data")
        _tile(dv, api, "dst")
        cycles = cost_model.elementwise_cycles(f, sim.platform.core.min_ii_cycles)
    if tuple(dv.shape) != (f, p):
        raise ValueError(f"'{api}': dst shape {list(dv.shape)} != [{f}, {p}]")
    with sim.instruction(api, eng, cycles) as ins:
        ins.write(dv, ins.read(data).T, mask)
    return dst


# --- Scalar Engine ----------------------------------------------------------------------------------
def activation(dst, op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd_=None, mask=None, engine=None):
    """``dst = op(data * scale + bias)`` on the Scalar Engine; optional add-reduction along the free
    axes into ``reduce_res`` (P, 1).

    scale: scalar or (P, 1) float32 tile (``err_activation_scale_scalar_or_vector``); bias: (P, 1)
    tile of float32/float16/bfloat16 (``err_activation_bias_invalid_type``) or a scalar.
    Cost: max(MIN_II, N) cycles, + MIN_II with a reduction.
    """
    sim = current()
    api = "activation"
    eng = engine_name(engine, "scalar")
    dv = as_view(dst)
    p = _tile(data, api, "data")
    pd = _tile(dv, api, "dst")
    _samep(api, data=p, dst=pd)
    f = unary(op)
    if is_tile(bias) and bias.dtype not in (dtypes.float32, dtypes.float16, dtypes.bfloat16):
        raise err_activation_bias_invalid_type(f"'{api}': bias {bias.describe()}")
    if is_tile(scale) and free_size(scale.shape) != 1:
        raise err_activation_scale_scalar_or_vector(f"'{api}': scale {scale.describe()}")
    n = free_size(data.shape)
    mi = sim.platform.core.min_ii_cycles
    cycles = cost_model.elementwise_cycles(n, mi) + (mi if reduce_res is not None else 0)
    with sim.instruction(api if reduce_res is None else "activation_reduce", eng, cycles) as ins:
        x = _f32(ins.read(data, mask))
        s = _scalar_operand(ins, scale, p, api, "scale", err_activation_scale_scalar_or_vector)
        b = _scalar_operand(ins, bias, p, api, "bias", err_activation_scale_scalar_or_vector)
        sv = s.reshape((p,) + (1,) * (x.ndim - 1)) if isinstance(s, np.ndarray) else s
        y = x * sv
        if b is not None:
            y = y + (b.reshape((p,) + (1,) * (x.ndim - 1)) if isinstance(b, np.ndarray) else b)
        y = f(y)
        ins.write(dv, y, mask)
        if reduce_res is not None:
            rop = op_name(reduce_op or "add")
            rv = as_view(reduce_res)
            _samep(api, data=p, reduce_res=_tile(rv, api, "reduce_res"))
            yr = y                                     # reduced in fp32, before the output cast
            if mask is not None:
                mk = as_mask_array(mask, yr.shape)
                yr = np.where(mk, yr, 0.0 if rop == "add" else -np.inf if rop == "maximum" else np.inf)
            red = reduce_fn(rop)(yr.reshape(p, -1), (1,), True)
            ins.write(rv, red)
    return dst


# --- Vector / GpSimd ALU ----------------------------------------------------------------------------
def tensor_tensor(dst, data1, data2, op, *, engine=None, mask=None, accumulate_into=False):
    """``dst = op(data1, data2)`` element-wise (Vector Engine by default, or GpSimd).

    At most one input in PSUM; GpSimd never touches PSUM (``err_unsupported_memory``); partitions equal
    (``err_num_partition_mismatch``); free dims broadcast. Cost: max(MIN_II, N) with one PSUM input
    or all-bf16 operands, else max(MIN_II, 2N).
    """
    sim = current()
    api = "tensor_tensor"
    eng = engine_name(engine, "vector")
    dv = as_view(dst)
    p1 = _tile(data1, api, "data1")
    p2 = _tile(data2, api, "data2")
    pd = _tile(dv, api, "dst")
    _samep(api, data1=p1, data2=p2, dst=pd)
    if data1.buffer.kind == "psum" and data2.buffer.kind == "psum" and not (
            accumulate_into and data1.tensor is dv.tensor):
        raise err_unsupported_memory(f"'{api}': both inputs in PSUM ({data1.describe()}, "
                                     f"{data2.describe()}); at most one may be")
    _gpsimd_no_psum(eng, api, data1=data1, data2=data2, dst=dv)
    f = binary(op)
    n = free_size(dv.shape)
    one_psum = (data1.buffer.kind == "psum") != (data2.buffer.kind == "psum")
    all_bf16 = all(t.dtype == dtypes.bfloat16 for t in (data1, data2, dv))
    cycles = cost_model.tensor_tensor_cycles(n, one_psum or all_bf16, sim.platform.core.min_ii_cycles)
    with sim.instruction(api, eng, cycles) as ins:
        a = _f32(ins.read(data1, mask))
        b = _f32(ins.read(data2, mask))
        try:
            shape = np.broadcast_shapes(a.shape + (1,) * (len(dv.shape) - a.ndim),
                                        b.shape + (1,) * (len(dv.shape) - b.ndim))
        except ValueError:
            raise ValueError(f"'{api}': shapes {list(a.shape)} and {list(b.shape)} do not broadcast") from None
        res = f(tile_broadcast(a, shape), tile_broadcast(b, shape))
        ins.write(dv, res, mask, exempt=accumulate_into and dv.buffer.kind == "psum")
    return dst


def tensor_scalar(dst, data, op0, operand0, *, reverse0=False, op1=None, operand1=None,
                  reverse1=False, engine=None, mask=None):
    """``dst = (data op0 operand0) op1 operand1`` with scalar or (P, 1) operands (Vector default).

    ``reverseK`` swaps the operands of opK. Cost: max(MIN_II, N).
    """
    sim = current()
    api = "tensor_scalar"
    eng = engine_name(engine, "vector")
    dv = as_view(dst)
    p = _tile(data, api, "data")
    _samep(api, data=p, dst=_tile(dv, api, "dst"))
    _gpsimd_no_psum(eng, api, data=data, dst=dv, operand0=operand0, operand1=operand1)
    cycles = cost_model.elementwise_cycles(free_size(dv.shape), sim.platform.core.min_ii_cycles)
    with sim.instruction(api, eng, cycles) as ins:
        x = _f32(ins.read(data, mask))

        def apply(x, op, operand, rev):
            v = _scalar_operand(ins, operand, p, api, "operand")
            if isinstance(v, np.ndarray):
                v = v.reshape((p,) + (1,) * (x.ndim - 1))
            fn = binary(op)
            return fn(v, x) if rev else fn(x, v)
        y = apply(x, op0, operand0, reverse0)
        if op1 is not None:
            y = apply(y, op1, operand1, reverse1)
        ins.write(dv, y, mask)
    return dst


def reduce_axes(axis, ndim: int, api: str, desc: str) -> tuple:
    """The reduction axes of ``axis`` (int, sequence or None = every free axis) on a rank-``ndim``
    tile, as a sorted tuple.

    Raises:
        err_reduce_axis_not_trailing_free: unless they are trailing free axes (never axis 0).
    """
    if axis is None:
        axes = tuple(range(1, ndim))
    elif isinstance(axis, (list, tuple)):
        axes = tuple(int(a) % ndim if ndim else int(a) for a in axis)
    else:
        axes = (int(axis) % ndim,)
    axes = tuple(sorted(set(axes)))
    if not axes or 0 in axes or axes != tuple(range(axes[0], ndim)):
        raise err_reduce_axis_not_trailing_free(
            f"'{api}' over axis {axis} of {desc}: allowed are trailing free axes, e.g. {ndim - 1}")
    return axes


def tensor_reduce(dst, op, data, axis, *, negate=False, keepdims=False, mask=None, engine=None):
    """``dst = (-)reduce_op(data, axis)`` over trailing free axes (Vector Engine).

    Cost: max(MIN_II, N); N/2 for bf16 add/max.
    """
    sim = current()
    api = "tensor_reduce"
    eng = engine_name(engine, "vector")
    dv = as_view(dst)
    p = _tile(data, api, "data")
    _samep(api, data=p, dst=_tile(dv, api, "dst"))
    _gpsimd_no_psum(eng, api, data=data, dst=dv)
    axes = reduce_axes(axis, len(data.shape), api, data.describe())
    rop = op_name(op)
    fast = data.dtype == dtypes.bfloat16 and rop in ("add", "maximum")
    cycles = cost_model.tensor_reduce_cycles(free_size(data.shape), fast, sim.platform.core.min_ii_cycles)
    with sim.instruction(api, eng, cycles) as ins:
        x = _f32(ins.read(data, mask))
        if mask is not None:
            mk = as_mask_array(mask, x.shape) if np.ndim(getattr(mask, "values", mask)) else None
            if mk is not None and mk.shape == x.shape:
                neutral = {"add": 0.0, "maximum": -np.inf, "minimum": np.inf, "multiply": 1.0}.get(rop or "", 0.0)
                x = np.where(mk, x, neutral)
        r = reduce_fn(rop)(x, axes, True)
        if negate:
            r = -r
        ins.write(dv, r.reshape(r.shape[:axes[0]]) if not keepdims else r)
    return dst


def tensor_copy(dst, src, *, engine=None, mask=None, allow_partition_broadcast=False):
    """``dst = src`` with dtype conversion (Vector Engine by default). Cost: max(MIN_II, N)."""
    sim = current()
    api = "tensor_copy"
    eng = engine_name(engine, "vector")
    dv = as_view(dst)
    p = _tile(src, api, "src")
    pd = _tile(dv, api, "dst")
    if not (allow_partition_broadcast and p == 1):
        _samep(api, src=p, dst=pd)
    _gpsimd_no_psum(eng, api, src=src, dst=dv)
    cycles = cost_model.elementwise_cycles(free_size(dv.shape), sim.platform.core.min_ii_cycles)
    with sim.instruction(api if not allow_partition_broadcast else "broadcast", eng, cycles) as ins:
        ins.write(dv, ins.read(src, mask), mask)
    return dst


def memset(dst, value, *, engine=None, mask=None):
    """``dst = value`` (Vector Engine by default). Cost: max(MIN_II, N)."""
    sim = current()
    api = "memset"
    eng = engine_name(engine, "vector")
    dv = as_view(dst)
    _tile(dv, api, "dst")
    _gpsimd_no_psum(eng, api, dst=dv)
    cycles = cost_model.elementwise_cycles(free_size(dv.shape), sim.platform.core.min_ii_cycles)
    with sim.instruction(api, eng, cycles) as ins:
        ins.write(dv, np.float32(value) if dtypes.is_float(dv.dtype) else value, mask)
    return dst


def iota(dst, expr, *, mask=None):
    """``dst = expr`` evaluated on the GpSimd Engine (an affine index expression -> values).

    Cost: 150 + N cycles. dst must be in SBUF (GpSimd cannot access PSUM).
    """
    sim = current()
    api = "iota"
    dv = as_view(dst)
    _tile(dv, api, "dst", ("sbuf",))
    vals = expr.values if isinstance(expr, IndexExpr) else np.asarray(expr)
    with sim.instruction(api, "gpsimd", cost_model.iota_cycles(free_size(dv.shape))) as ins:
        ins.write(dv, vals, mask)
    return dst


def affine_select(dst, pred, on_true, on_false_value, *, mask=None):
    """``dst = where(pred, on_true, on_false_value)`` with an affine predicate (GpSimd Engine).

    ``pred`` is a Mask built from index expressions (e.g. ``i_q >= i_k`` for a causal mask).
    Cost: 150 + N cycles. No PSUM operands.
    """
    sim = current()
    api = "affine_select"
    dv = as_view(dst)
    p = _tile(on_true, api, "on_true", ("sbuf",))
    _samep(api, on_true=p, dst=_tile(dv, api, "dst", ("sbuf",)))
    pv = pred.values if isinstance(pred, Mask) else np.asarray(pred, dtype=bool)
    with sim.instruction(api, "gpsimd", cost_model.iota_cycles(free_size(dv.shape))) as ins:
        x = _f32(ins.read(on_true, mask))
        pm = tile_broadcast(pv, x.shape)
        ins.write(dv, np.where(pm, x, np.float32(on_false_value)), mask)
    return dst


def select(dst, cond, x, y, *, mask=None, engine=None):
    """``dst = where(cond, x, y)``; cond is a tile or Mask, y a tile or scalar (Vector Engine)."""
    sim = current()
    api = "select"
    eng = engine_name(engine, "vector")
    dv = as_view(dst)
    pd = _tile(dv, api, "dst")
    ps = {"dst": pd}
    for nm, v in (("cond", cond), ("x", x), ("y", y)):
        if is_tile(v):
            ps[nm] = _tile(v, api, nm)
    _samep(api, **ps)
    cycles = cost_model.tensor_tensor_cycles(free_size(dv.shape), False, sim.platform.core.min_ii_cycles)
    with sim.instruction(api, eng, cycles) as ins:
        c = ins.read(cond, mask) if is_tile(cond) else (cond.values if isinstance(cond, Mask) else cond)
        xv = _f32(ins.read(x, mask)) if is_tile(x) else np.float32(x)
        yv = _f32(ins.read(y, mask)) if is_tile(y) else np.float32(y)
        shp = dv.shape
        res = np.where(tile_broadcast(np.asarray(c) != 0, shp), tile_broadcast(xv, shp),
                       tile_broadcast(yv, shp))
        ins.write(dv, res, mask)
    return dst


# --- statistics -------------------------------------------------------------------------------------
def bn_stats(dst, data, *, mask=None):
    """Per-partition (count, mean, var*count) of even and odd elements -> dst (P, 6) (Vector Engine).

    data free size <= 512 (``nl.tile_size.bn_stats_fmax``). Cost: max(MIN_II, N).
    """
    sim = current()
    api = "bn_stats"
    dv = as_view(dst)
    p = _tile(data, api, "data")
    _samep(api, data=p, dst=_tile(dv, api, "dst"))
    n = free_size(data.shape)
    if n > 512:
        raise err_size_of_dimension_exceed_arch_limit(
            f"'{api}': free size {n} of {data.describe()} > 512 (bn_stats_fmax)")
    with sim.instruction(api, "vector", cost_model.elementwise_cycles(n, sim.platform.core.min_ii_cycles)) as ins:
        x = _f32(ins.read(data, mask)).reshape(p, n)
        out = np.zeros((p, 6), dtype=np.float32)
        for j, part in enumerate((x[:, 0::2], x[:, 1::2])):
            c = part.shape[1]
            if c:
                mu = part.mean(axis=1)
                out[:, 3 * j] = c
                out[:, 3 * j + 1] = mu
                out[:, 3 * j + 2] = ((part - mu[:, None]) ** 2).sum(axis=1)
        ins.write(dv, out.reshape(dv.shape) if int(np.prod(dv.shape)) == out.size else out, mask)
    return dst


def bn_aggr(dst, data, *, mask=None):
    """Aggregate bn_stats tuples (count, mean, var*count) along the free axis -> dst (P, 2) = mean,
    variance (Vector Engine). Cost: max(MIN_II, 13 N / 3) (nki.isa.bn_aggr page)."""
    sim = current()
    api = "bn_aggr"
    dv = as_view(dst)
    p = _tile(data, api, "data")
    _samep(api, data=p, dst=_tile(dv, api, "dst"))
    n = free_size(data.shape)
    if n % 3:
        raise ValueError(f"'{api}': free size {n} of {data.describe()} is not a multiple of 3")
    with sim.instruction(api, "vector", cost_model.bn_aggr_cycles(n, sim.platform.core.min_ii_cycles)) as ins:
        s = _f32(ins.read(data, mask)).reshape(p, n // 3, 3).astype(np.float64)
        cnt, mu, m2 = s[..., 0], s[..., 1], s[..., 2]
        tot = cnt.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (cnt * mu).sum(axis=1) / tot
            var = (m2 + cnt * (mu - mean[:, None]) ** 2).sum(axis=1) / tot
        ins.write(dv, np.stack([mean, var], axis=1).astype(np.float32), mask)
    return dst


def device_print(prefix, x, *, mask=None):
    """Print a tile's current values (simulation only; no cost)."""
    sim = current()
    with sim.instruction("device_print", None) as ins:
        vals = ins.read(x, mask) if is_tile(x) else x
    print(prefix, np.asarray(vals))


install_operators({"assign": assign, "accumulate": accumulate})
