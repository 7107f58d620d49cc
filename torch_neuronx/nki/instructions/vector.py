"""Vector Engine (and GpSimd-capable ALU) instructions.

Element-wise: ``tensor_tensor``, ``tensor_scalar``, ``scalar_tensor_tensor``, ``tensor_copy`` (+ the
dynamic and predicated variants), ``memset``, ``select`` (``nl.where``), ``reciprocal``, ``dropout``,
``rng`` / ``rand2``, ``exponential``. Reductions and scans: ``tensor_reduce``, ``tensor_scalar_reduce``,
``tensor_scalar_cumulative``, ``tensor_tensor_scan``, ``select_reduce``, ``range_select``, ``max8``,
``nc_find_index8``, ``nc_match_replace8``, ``bn_stats`` / ``bn_aggr``. Cross-partition:
``nc_stream_shuffle``.

Numerics (``nki.api.shared.rst``, "Supported Math Operators"): arithmetic operators cast inputs to
float32, compute in float32 and round once into ``dst.dtype``; bitvec operators work on integer bit
patterns; int32/uint32 ``tensor_tensor`` runs on GpSimd with exact integer arithmetic. The Vector
Engine's accumulator registers (one fp32 per partition, shared by ``tensor_scalar_reduce``,
``exponential``, ``range_select``, ``select_reduce``, ``tensor_scalar_cumulative``) live on the core and
follow ``reduce_cmd``.

Cycle formulas are in :mod:`.cost_model` (AWS's legacy ``nki.isa`` pages).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost_model, dtypes
from ..context import current
from ..errors import (err_invalid_instruction_argument, err_num_partition_mismatch,
                      err_reduce_axis_not_trailing_free, err_size_of_dimension_exceed_arch_limit,
                      err_unsupported_dtype, err_unsupported_memory)
from ..indexing import IndexExpr, Mask, as_mask_array
from ..ops import (BINARY, UNARY, binary, is_bitvec, op_name, reduce_fn, reduce_identity, unary)
from ..tile import NkiTensor, is_tile
from .common import (NkiInstruction, VirtualRegister, f32, free_size, gpsimd_no_psum, is_number, issue, operand,
                     pick_engine, require_generation, same_elements, samep, scalar_operand)
from .constants import engine_name
from .constants import reduce_cmd as _reduce_cmd

__all__ = ["tensor_tensor", "tensor_scalar", "scalar_tensor_tensor", "tensor_reduce", "reduce_axes",
           "tensor_copy", "memset", "select", "reciprocal", "tensor_tensor_scan", "tensor_scalar_reduce",
           "tensor_scalar_cumulative", "bn_stats", "bn_aggr", "max8", "nc_find_index8", "nc_match_replace8",
           "nc_stream_shuffle", "tensor_copy_predicated", "select_reduce", "range_select", "dropout", "rng",
           "rand2", "set_rng_seed", "rand_set_state", "rand_get_state", "exponential", "tensor_copy_dynamic",
           "broadcast_copy"]

_MI = "min_ii_cycles"
_ALU_ENGINES = ("vector", "gpsimd", "scalar")


def _min_ii() -> int:
    return int(getattr(current().platform.core, _MI))


def _fit(vals: np.ndarray, shape: tuple) -> np.ndarray:
    """NKI broadcasting of an operand to the instruction shape: dims align from the partition axis,
    missing trailing dims count as 1; the same element count per partition reshapes."""
    if vals.shape == tuple(shape):
        return vals
    a = vals
    if a.ndim < len(shape):
        a = a.reshape(a.shape + (1,) * (len(shape) - a.ndim))
    try:
        return np.broadcast_to(a, shape)
    except ValueError:
        if vals.size == int(np.prod(shape, dtype=np.int64)):
            return vals.reshape(shape)
        raise err_invalid_instruction_argument(
            f"operand shape {list(vals.shape)} does not broadcast to {list(shape)}") from None


def _int_exact(*ts: Any) -> bool:
    return all(is_tile(t) and t.dtype in (dtypes.int32, dtypes.uint32, dtypes.int16, dtypes.uint16, dtypes.int8,
                                          dtypes.uint8) for t in ts)


def _apply_binary(op: Any, a: np.ndarray, b: Any, exact_int: bool) -> np.ndarray:
    n = op_name(op)
    if exact_int and n in ("add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal", "greater",
                           "greater_equal", "less", "less_equal", "bitwise_and", "bitwise_or", "bitwise_xor",
                           "left_shift", "right_shift", "mod", "bypass"):
        f = BINARY[n]
        return np.asarray(f(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)))
    return binary(op)(a, b)


def _op_vals(op: Any, x: np.ndarray, operand: Any, rev: bool, exact_int: bool) -> np.ndarray:
    """``x <op> operand`` (``operand <op> x`` when ``rev``); a unary operator ignores ``operand``."""
    n = op_name(op)
    if n in UNARY and n not in BINARY:
        return unary(op)(x)
    if n == "invert":
        return np.invert(np.asarray(x).astype(np.int64))
    return _apply_binary(op, operand, x, exact_int) if rev else _apply_binary(op, x, operand, exact_int)


def _read_alu(ins: Any, t: NkiTensor, op: Any, mask: Any = None) -> np.ndarray:
    """Operand values for ``op``: raw integers for bitvec operators on integer tiles, else float32."""
    if (is_bitvec(op) or op_name(op) in ("bitwise_and", "bitwise_or", "bitwise_xor")) and dtypes.is_int(t.dtype):
        return np.asarray(ins.read(t, mask, raw=True)).astype(np.int64)
    if dtypes.is_int(t.dtype):
        return np.asarray(ins.read(t, mask, raw=True)).astype(np.int64)
    return f32(ins.read(t, mask))


def _to_f(x: np.ndarray) -> np.ndarray:
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def bitvec_integer_only(api: str, *ops: Any, **tiles: Any) -> None:
    """AWS's ``tensor_tensor``, ``tensor_scalar`` and ``tensor_reduce`` pages: "For bitvec operators, the
    input/output data types must be integer types" (the Vector Engine treats the elements as bit
    patterns; ``aws-neuron/aws-neuron-sdk@81ce03a:nki/api/nki/isa/__init__.py:1028``, ``:1102``,
    ``:1189``; legacy ``@cca3784:general/nki/api/nki/isa/__init__.py:1572``, ``:1768``).

    Raises:
        err_unsupported_dtype: a bitvec operator (bitwise and / or / xor / not, shifts) with a float
            input or output tile.
    """
    if not any(o is not None and is_bitvec(o) for o in ops):
        return
    bad = [f"{k} {t.describe()}" for k, t in tiles.items() if is_tile(t) and dtypes.is_float(t.dtype)]
    if bad:
        opn = ", ".join(str(op_name(o)) for o in ops if o is not None and is_bitvec(o))
        raise err_unsupported_dtype(f"'{api}': bitvec operator {opn} on float tiles ({'; '.join(bad)}); the "
                                    "input/output data types must be integer types (bitcast with .view(nl.int32) "
                                    "or use an arithmetic operator)")


def tensor_tensor(dst: NkiTensor, data1: NkiTensor, data2: NkiTensor, op: Any, *, engine: Any = None,
                  mask: Any = None, accumulate_into: bool = False, bcast: str = "free",
                  name: str | None = None) -> NkiInstruction:
    """``dst = op(data1, data2)`` element-wise (Vector Engine; GpSimd for ``nl.power`` and all-int32).

    ``bcast``: "none" (same elements per partition, the current nisa page), "free" (free dims
    broadcast), "all" (a 1-partition operand is broadcast too: the ``nl.*`` APIs).
    ``accumulate_into``: ``dst`` is an operand and this is an associative reduction into it (``t += x``,
    ``nl.loop_reduce``): exempt from the affine_range write-conflict check.

    Raises:
        err_unsupported_memory: both inputs in PSUM; GpSimd with a PSUM operand.
        err_num_partition_mismatch: partition counts differ (and no broadcast applies).
    """
    sim = current()
    api = "tensor_tensor"
    opn = op_name(op)
    p1 = operand(data1, api, "data1")
    p2 = operand(data2, api, "data2")
    pd = operand(dst, api, "dst")
    bitvec_integer_only(api, op, data1=data1, data2=data2, dst=dst)
    any_psum = any(t.buffer.kind == "psum" for t in (data1, data2, dst))
    int32_exact = (_int_exact(data1, data2, dst) and dst.dtype in (dtypes.int32, dtypes.uint32)
                   and not any_psum)
    default = "gpsimd" if opn == "power" or int32_exact else "vector"
    eng = pick_engine(engine, default, api, _ALU_ENGINES)
    pb = bcast == "all"
    if not (pb and (p1 == 1 or p2 == 1)):
        samep(api, data1=p1, data2=p2, dst=pd)
    elif max(p1, p2) != pd and pd != 1:
        samep(api, data=max(p1, p2), dst=pd)
    if bcast == "none":
        same_elements(api, data1, dst)
        same_elements(api, data2, dst)
    if data1.buffer.kind == "psum" and data2.buffer.kind == "psum" and not (
            accumulate_into and data1.storage is dst.storage):
        raise err_unsupported_memory(f"'{api}': both inputs in PSUM ({data1.describe()}, {data2.describe()}); at "
                                     "most one may be")
    gpsimd_no_psum(eng, api, data1=data1, data2=data2, dst=dst)
    n = free_size(dst.shape)
    one_psum = _psum_operand(data1) != _psum_operand(data2)
    all_bf16 = all(t.dtype == dtypes.bfloat16 for t in (data1, data2, dst)) and opn in ("add", "multiply", "subtract")
    cycles = cost_model.tensor_tensor_cycles(n, one_psum or all_bf16, _min_ii())
    if pb and (p1 != p2):
        cycles += cost_model.elementwise_cycles(n, _min_ii())     # the partition broadcast is a copy
    exact = eng == "gpsimd" and _int_exact(data1, data2, dst)
    with sim.instruction(name or api, eng, cycles) as ins:
        m1 = mask if data1.shape == dst.shape else None
        m2 = mask if data2.shape == dst.shape else None
        a = _read_alu(ins, data1, op, m1)
        b = _read_alu(ins, data2, op, m2)
        shape = dst.shape
        if pb and p1 != p2:
            a = np.broadcast_to(a.reshape((a.shape[0],) + a.shape[1:]), (pd,) + a.shape[1:]) if p1 == 1 else a
            b = np.broadcast_to(b, (pd,) + b.shape[1:]) if p2 == 1 else b
        a, b = _fit(a, shape), _fit(b, shape)
        if not exact and not is_bitvec(op):
            a, b = _to_f(a), _to_f(b)
        res = _apply_binary(op, a, b, exact or is_bitvec(op))
        # an associative reduction into dst (``t += x``, ``nl.loop_reduce``) is not a loop-carried
        # dependency of an affine_range (legacy nki.language.affine_range page)
        ins.write(dst, res, mask, exempt=accumulate_into)
    return issue(sim)


def _engine_left_to_compiler(engine: Any) -> bool:
    """``engine`` is None or ``nki.isa.unknown_engine``: AWS's compiler picks the engine by workload."""
    return engine is None or engine_name(engine, "unknown") == "unknown"


def _psum_operand(t: NkiTensor) -> bool:
    """For the cost model: ``t`` is read from PSUM (in PSUM, or a partition broadcast's result)."""
    return t.buffer.kind == "psum" or t.storage.read_as_psum


def broadcast_copy(dst: NkiTensor, src: NkiTensor, *, name: str | None = None) -> NkiInstruction:
    """``dst = src`` broadcast: size-1 partition / free dims of ``src`` replicated (``nl.broadcast_to``;
    a partition broadcast is costed as the Tensor Engine matmul AWS's compiler lowers it to, whose
    PSUM result a following ``tensor_tensor`` reads at the one-PSUM-input rate)."""
    sim = current()
    api = "broadcast_to"
    operand(src, api, "src")
    operand(dst, api, "dst")
    if src.shape[0] not in (1, dst.shape[0]):
        raise err_num_partition_mismatch(f"'{api}': {src.describe()} to {list(dst.shape)}: only 1 partition "
                                         "broadcasts")
    partition_bcast = src.shape[0] == 1 and dst.shape[0] > 1
    if partition_bcast:
        # AWS's compiler lowers a partition broadcast to nc_matmul(ones[1, M], src) on the Tensor Engine
        # into PSUM, read from there by its consumer ("NKI invokes such matmul under the hood when
        # broadcast_input.broadcast_to((M, ...)) is called": Trainium/Inferentia2 architecture guide,
        # Tensor Engine "Alternative Use Case")
        eng = "tensor"
        cycles = cost_model.broadcast_matmul_cycles(dst.shape[0], free_size(dst.shape),
                                                    src.dtype == dtypes.float32)
    else:
        eng = "vector"
        cycles = cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())
    with sim.instruction(name or api, eng, cycles) as ins:
        v = ins.read(src, raw=src.dtype == dst.dtype)
        v = v.reshape(v.shape + (1,) * (dst.ndim - v.ndim)) if v.ndim < dst.ndim else v
        try:
            out = np.broadcast_to(v, dst.shape)
        except ValueError:
            raise err_invalid_instruction_argument(f"'{api}': {src.describe()} does not broadcast to "
                                                   f"{list(dst.shape)}") from None
        ins.write(dst, out)
    if partition_bcast:
        dst.storage.read_as_psum = True
    return issue(sim)


def tensor_scalar(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, *, reverse0: bool = False,
                  op1: Any = None, operand1: Any = None, reverse1: bool = False, engine: Any = None,
                  mask: Any = None, name: str | None = None) -> NkiInstruction:
    """``dst = (data <op0> operand0) <op1> operand1`` with scalar or (P, 1) operands (Vector default;
    Scalar / GpSimd with ``engine=``). A unary ``op0`` (``nl.abs``, ``nl.rsqrt``...) ignores ``operand0``.
    ``reverseK`` swaps the operands of ``opK``. Cost: max(MIN_II, N).

    Raises:
        NotImplementedError: an operand is an ``nl.arange`` / ``nl.mgrid`` expression (a tile value plus
            an index expression is a dynamic index, which the simulator supports only as a tile index).
    """
    sim = current()
    api = "tensor_scalar"
    for o in (operand0, operand1):
        if isinstance(o, IndexExpr):
            raise NotImplementedError(
                "a tile combined with an nl.arange / nl.mgrid expression (a dynamic offset such as "
                "t[0, i] + iy) is not supported by the torch_neuronx NKI simulator; index with the tile "
                "itself (x[ix, t]) instead")
    eng = pick_engine(engine, "vector", api, _ALU_ENGINES)
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    if op1 is None and operand1 is not None:
        raise err_invalid_instruction_argument(f"'{api}': operand1 given without op1")
    if op1 is not None and operand1 is None:                 # "must be None (default values) when unused"
        raise err_invalid_instruction_argument(f"'{api}': op1 given without operand1")
    if op1 is not None and is_bitvec(op0) != is_bitvec(op1):
        raise err_invalid_instruction_argument(f"'{api}': op0 and op1 must both be bitvec or both arithmetic")
    bitvec_integer_only(api, op0, op1, data=data, dst=dst)
    gpsimd_no_psum(eng, api, data=data, dst=dst, operand0=operand0, operand1=operand1)
    cycles = cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())
    exact = is_bitvec(op0) or (dtypes.is_int(data.dtype) and dtypes.is_int(dst.dtype) and all(
        not is_tile(o) and float(o).is_integer() for o in (operand0, operand1) if o is not None
        and not isinstance(o, VirtualRegister)))
    with sim.instruction(name or api, eng, cycles) as ins:
        x = _read_alu(ins, data, op0, mask)
        if not exact:
            x = _to_f(x)

        def apply(x: np.ndarray, op: Any, opnd: Any, rev: bool) -> np.ndarray:
            v = scalar_operand(ins, opnd, p, api, "operand") if opnd is not None else np.float32(0)
            if isinstance(v, np.ndarray) and v.ndim:
                v = v.reshape((v.shape[0],) + (1,) * (x.ndim - 1))
            if exact and not is_tile(opnd):
                v = np.int64(v)
            return _op_vals(op, x, v, rev, exact)
        y = apply(x, op0, operand0, reverse0)
        if op1 is not None:
            y = apply(y, op1, operand1, reverse1)
        ins.write(dst, _fit(np.asarray(y), dst.shape) if np.shape(y) != dst.shape else y, mask)
    return issue(sim)


def scalar_tensor_tensor(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, op1: Any,
                         operand1: NkiTensor, *, reverse0: bool = False, reverse1: bool = False,
                         mask: Any = None, name: str | None = None) -> NkiInstruction:
    """``dst = (data <op0> operand0) <op1> operand1`` on the Vector Engine: ``operand0`` a scalar or
    (P, 1) vector, ``operand1`` a tile of ``data``'s shape; arithmetic operators only; ``data`` and
    ``operand1`` not both in PSUM.

    Cost: N cycles for bf16 data/operand1 with subtract then multiply and N even, else 2N.
    """
    sim = current()
    api = "scalar_tensor_tensor"
    if is_bitvec(op0) or is_bitvec(op1):
        raise err_invalid_instruction_argument(f"'{api}': bitvec operators are not supported")
    p = operand(data, api, "data")
    samep(api, data=p, operand1=operand(operand1, api, "operand1"), dst=operand(dst, api, "dst"))
    if data.buffer.kind == "psum" and operand1.buffer.kind == "psum":
        raise err_unsupported_memory(f"'{api}': data and operand1 cannot both be in PSUM")
    n = free_size(dst.shape)
    fast = (data.dtype == dtypes.bfloat16 and operand1.dtype == dtypes.bfloat16 and op_name(op0) == "subtract"
            and op_name(op1) == "multiply" and n % 2 == 0)
    with sim.instruction(name or api, "vector", cost_model.scalar_tensor_tensor_cycles(n, fast, _min_ii())) as ins:
        x = f32(ins.read(data, mask))
        v = scalar_operand(ins, operand0, p, api, "operand0")
        if isinstance(v, np.ndarray) and v.ndim:
            v = v.reshape((v.shape[0],) + (1,) * (x.ndim - 1))
        t = _op_vals(op0, x, v, reverse0, False)
        o1 = _fit(f32(ins.read(operand1, mask)), t.shape)
        y = _op_vals(op1, t, o1, reverse1, False)
        ins.write(dst, y, mask)
    return issue(sim)


def reduce_axes(axis: Any, ndim: int, api: str, desc: str, any_free: bool = False) -> tuple:
    """The reduction axes of ``axis`` (int, sequence or None = every free axis) on a rank-``ndim``
    tile, as a sorted tuple.

    Raises:
        err_reduce_axis_not_trailing_free: axis 0 (the partition axis), or -- unless ``any_free``
            (the ``nl`` reductions, whose access pattern the compiler permutes) -- not the trailing free
            axes (``nisa.tensor_reduce``: "must be the last contiguous free dimension(s)").
    """
    given = None if axis is None else tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if given is not None and any(not -ndim <= int(a) < ndim for a in given):
        raise err_reduce_axis_not_trailing_free(f"'{api}' over axis {axis} of {desc}: an axis is out of range "
                                                f"for a {ndim}-D tile (valid: {-ndim} .. {ndim - 1})")
    if given is None:
        axes = tuple(range(1, ndim))
    else:
        axes = tuple(int(a) % ndim for a in given)
    axes = tuple(sorted(set(axes)))
    if not axes or 0 in axes:
        raise err_reduce_axis_not_trailing_free(f"'{api}' over axis {axis} of {desc}: the partition axis 0 cannot "
                                                "be reduced (transpose, or reduce with a matmul against ones)")
    if not any_free and axes != tuple(range(axes[0], ndim)):
        raise err_reduce_axis_not_trailing_free(
            f"'{api}' over axis {axis} of {desc}: allowed are the last contiguous free axes, e.g. {ndim - 1}")
    return axes


def tensor_reduce(dst: NkiTensor, op: Any, data: NkiTensor, axis: Any, *, negate: bool = False,
                  keepdims: bool = False, mask: Any = None, engine: Any = None, any_free: bool = False,
                  name: str | None = None) -> NkiInstruction:
    """``dst = (-)reduce_op(data, axis)`` over free axes (Vector Engine; ``nisa.tensor_reduce`` needs
    the trailing axes, ``any_free`` lets the ``nl`` reductions use any free axes).

    Cost: max(MIN_II, N); N/2 for bf16 in and out with add/max.
    """
    sim = current()
    api = "tensor_reduce"
    eng = pick_engine(engine, "vector", api, ("vector", "gpsimd"))
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    gpsimd_no_psum(eng, api, data=data, dst=dst)
    axes = reduce_axes(axis, len(data.shape), api, data.describe(), any_free)
    rop = op_name(op)
    bitvec_integer_only(api, op, data=data, dst=dst)
    if negate and is_bitvec(op):
        raise err_invalid_instruction_argument(f"'{api}': negate is only for arithmetic operators")
    out_n = int(np.prod([s for i, s in enumerate(data.shape) if i not in axes], dtype=np.int64))
    if dst.size != out_n:
        raise err_invalid_instruction_argument(f"'{api}': dst {dst.describe()} must hold {out_n} elements "
                                               f"(data {list(data.shape)} reduced over {axes})")
    fast = data.dtype == dtypes.bfloat16 and dst.dtype == dtypes.bfloat16 and rop in ("add", "maximum")
    cycles = cost_model.tensor_reduce_cycles(free_size(data.shape), fast, _min_ii())
    with sim.instruction(name or api, eng, cycles) as ins:
        x = _read_alu(ins, data, op, mask)
        if mask is not None:
            mk = as_mask_array(mask, x.shape)
            if mk is not None:
                x = np.where(mk, _to_f(x), reduce_identity(op))
        if not is_bitvec(op):
            x = _to_f(x)
        r = reduce_fn(op)(x, axes, True) if not is_bitvec(op) else np.asarray(
            reduce_fn(op)(x, axes, True))
        if negate:
            r = -r
        ins.write(dst, r.reshape(dst.shape))
    return issue(sim)


def tensor_copy(dst: NkiTensor, src: NkiTensor, *, engine: Any = None, mask: Any = None,
                name: str | None = None, api: str = "tensor_copy", cycles: float | None = None,
                cast: Any = None) -> NkiInstruction:
    """``dst = src`` with dtype conversion (Vector Engine by default; Scalar or GpSimd with
    ``engine=``): bit-accurate for equal dtypes, else through fp32; ``cast``: a dtype the values are
    rounded to on the way. Cost: max(MIN_II, N)."""
    sim = current()
    eng = pick_engine(engine, "vector", api, _ALU_ENGINES)
    ps = operand(src, api, "src")
    pd = operand(dst, api, "dst")
    samep(api, src=ps, dst=pd)
    if free_size(src.shape) != free_size(dst.shape):
        same_elements(api, src, dst)
    gpsimd_no_psum(eng, api, src=src, dst=dst)
    if cycles is None:
        cycles = cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())
    alternatives: tuple = ()
    if _engine_left_to_compiler(engine) and not api.startswith("tensor_copy_dynamic") and \
            dtypes.is_float(src.dtype) and dtypes.is_float(dst.dtype):
        # "All three compute engines, Vector, Scalar and GpSimd Engine can perform tensor copy" (GpSimd
        # not on PSUM); float copies only, as Scalar casts through fp32
        psum = src.buffer.kind == "psum" or dst.buffer.kind == "psum"
        alternatives = ("scalar",) if psum else ("scalar", "gpsimd")
    with sim.instruction(name or api, eng, cycles, alternatives=alternatives) as ins:
        raw = src.dtype == dst.dtype and cast is None
        v = ins.read(src, mask if src.shape == dst.shape else None, raw=raw)
        if v.shape != dst.shape:
            v = v.reshape(dst.shape) if v.size == dst.size else v
        if cast is not None and not dst.storage.keep:
            v = dtypes.round_to(v, cast)
        ins.write(dst, v, mask)
    return issue(sim)


def tensor_copy_dynamic(dst: NkiTensor, src: NkiTensor, *, engine: Any = None, mask: Any = None,
                        api: str = "tensor_copy_dynamic_src") -> NkiInstruction:
    """``tensor_copy`` where ``src`` (or ``dst``) is a view at a dynamic offset; cost
    max(MIN_II_DYNAMIC ~600, N) (legacy ``tensor_copy_dynamic_src/dst`` pages)."""
    return tensor_copy(dst, src, engine=engine, mask=mask, api=api,
                       cycles=cost_model.dynamic_copy_cycles(free_size(dst.shape)))


def memset(dst: NkiTensor, value: Any, *, engine: Any = None, mask: Any = None,
           name: str | None = None) -> NkiInstruction:
    """``dst = value`` (Vector or GpSimd Engine). Packed MX types: value 0 only.
    Cost: max(MIN_II, N/2) for 0 into bf16/fp16, else max(MIN_II, N)."""
    sim = current()
    api = "memset"
    eng = pick_engine(engine, "vector", api, ("vector", "gpsimd", "scalar"))
    operand(dst, api, "dst")
    gpsimd_no_psum(eng, api, dst=dst)
    if isinstance(value, VirtualRegister):
        value = value.get()
    if is_tile(value):
        raise err_invalid_instruction_argument(f"'{api}': value must be a compile-time constant, got a tile")
    if not is_number(value):
        raise err_invalid_instruction_argument(f"'{api}': value must be a number, got {value!r}")
    if dtypes.is_packed(dst.dtype) and float(value) != 0.0:
        raise err_invalid_instruction_argument(f"'{api}': only value=0 is supported for {dst.describe()}")
    half = float(value) == 0.0 and dst.dtype in (dtypes.bfloat16, dtypes.float16)
    cycles = cost_model.memset_cycles(free_size(dst.shape), half, _min_ii())
    # memset runs on Vector or GpSimd; left to the compiler, it "select[s] the best engine" (nki.isa.memset)
    alternatives = ("gpsimd",) if _engine_left_to_compiler(engine) and dst.buffer.kind != "psum" else ()
    with sim.instruction(name or api, eng, cycles, alternatives=alternatives) as ins:
        if dtypes.is_packed(dst.dtype):
            v: Any = np.zeros(dst.shape, dtype=dst.dtype.storage)
        elif dtypes.is_float(dst.dtype):
            v = np.float32(value)
        else:
            v = np.asarray(value)
            if v.dtype.kind == "f":
                v = np.float64(value)
        ins.write(dst, v, mask)
    return issue(sim)


def select(dst: NkiTensor, cond: Any, x: Any, y: Any, *, mask: Any = None, engine: Any = None,
           name: str | None = None, bcast: bool = True) -> NkiInstruction:
    """``dst = where(cond, x, y)``; ``cond`` a tile or Mask, ``x`` / ``y`` tiles or scalars (Vector)."""
    sim = current()
    api = "select"
    eng = pick_engine(engine, "vector", api, _ALU_ENGINES)
    pd = operand(dst, api, "dst")
    ps = {"dst": pd}
    for nm, v in (("cond", cond), ("x", x), ("y", y)):
        if is_tile(v):
            vp = operand(v, api, nm)
            if not (bcast and vp == 1):
                ps[nm] = vp
    samep(api, **ps)
    cycles = cost_model.tensor_tensor_cycles(free_size(dst.shape), False, _min_ii())
    shp = dst.shape
    with sim.instruction(name or api, eng, cycles) as ins:
        def val(v: Any) -> np.ndarray:
            if is_tile(v):
                a = f32(ins.read(v, mask if v.shape == shp else None))
                if a.shape[0] == 1 and shp[0] != 1:
                    a = np.broadcast_to(a, (shp[0],) + a.shape[1:])
                return _fit(a, shp)
            if isinstance(v, Mask):
                return _fit(v.values.astype(np.float32), shp)
            return np.broadcast_to(np.float32(v), shp)
        c = val(cond)
        ins.write(dst, np.where(c != 0, val(x), val(y)), mask)
    return issue(sim)


def reciprocal(dst: NkiTensor, data: NkiTensor, *, mask: Any = None, name: str | None = None) -> NkiInstruction:
    """``dst = 1 / data`` on the Vector Engine in fp32 (SBUF or PSUM). Cost: max(MIN_II, 8 N)."""
    sim = current()
    api = "reciprocal"
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    same_elements(api, data, dst)
    with sim.instruction(name or api, "vector", cost_model.reciprocal_cycles(free_size(data.shape), _min_ii())) as ins:
        x = f32(ins.read(data, mask))
        with np.errstate(divide="ignore"):
            ins.write(dst, (np.float32(1.0) / x).reshape(dst.shape), mask)
    return issue(sim)


def _initial(ins: Any, initial: Any, p: int, api: str) -> np.ndarray:
    v = scalar_operand(ins, initial, p, api, "initial")
    return np.broadcast_to(np.asarray(v, dtype=np.float32).reshape(-1)[:p] if np.ndim(v) else np.float32(v), (p,))


def tensor_tensor_scan(dst: NkiTensor, data0: NkiTensor, data1: NkiTensor, initial: Any, op0: Any, op1: Any, *,
                       reverse0: bool = False, reverse1: bool = False, mask: Any = None,
                       name: str | None = None) -> NkiInstruction:
    """Scan along the (flattened) free axis, per partition, on the Vector Engine::

        r[0] = op1(op0(data0[0], initial), data1[0]);  r[i] = op1(op0(data0[i], r[i-1]), data1[i])

    (``reverse0`` makes ``data0`` the rhs of ``op0``, ``reverse1`` makes ``data1`` the lhs of ``op1``).
    ``initial``: a float32 scalar or a (P, 1) tile. ``data0`` and ``data1`` not both in PSUM.
    Cost: max(MIN_II, 2 N).
    """
    sim = current()
    api = "tensor_tensor_scan"
    p = operand(data0, api, "data0")
    samep(api, data0=p, data1=operand(data1, api, "data1"), dst=operand(dst, api, "dst"))
    same_elements(api, data0, data1)
    same_elements(api, data0, dst)
    if data0.buffer.kind == "psum" and data1.buffer.kind == "psum":
        raise err_unsupported_memory(f"'{api}': data0 and data1 cannot both be in PSUM")
    n = free_size(data0.shape)
    with sim.instruction(name or api, "vector", cost_model.scan_cycles(n, _min_ii())) as ins:
        a = f32(ins.read(data0, mask)).reshape(p, n)
        b = f32(ins.read(data1, mask)).reshape(p, n)
        prev = _initial(ins, initial, p, api).astype(np.float32)
        f0, f1 = binary(op0), binary(op1)
        n0, n1 = op_name(op0), op_name(op1)
        out = np.empty((p, n), dtype=np.float32)
        if n0 == "multiply" and n1 == "add" and not reverse0 and not reverse1:
            for i in range(n):                    # the common linear recurrence, one fused step
                prev = a[:, i] * prev + b[:, i]
                out[:, i] = prev
        else:
            for i in range(n):
                t = f0(prev, a[:, i]) if reverse0 else f0(a[:, i], prev)
                prev = f1(b[:, i], t) if reverse1 else f1(t, b[:, i])
                out[:, i] = prev
        ins.write(dst, out.reshape(dst.shape), mask)
    _ = (n0, n1)
    return issue(sim)


def _regs_start(regs: np.ndarray, cmd: Any, op: Any, p: int, init: Any, api: str) -> np.ndarray:
    """Accumulator value before this instruction's reduction, per ``reduce_cmd``."""
    name = getattr(cmd, "name", cmd)
    if name in ("reset_reduce", "reset"):
        return np.full(p, reduce_identity(op), dtype=np.float32)
    if name == "load_reduce":
        if init is None:
            raise err_invalid_instruction_argument(f"'{api}': reduce_cmd=load_reduce needs the initial value")
        return np.broadcast_to(np.asarray(init, dtype=np.float32).reshape(-1), (p,)).astype(np.float32)
    return regs[:p].astype(np.float32)


def _reduce_into(regs: np.ndarray, cmd: Any, op: Any, vals: np.ndarray, p: int, init: Any, api: str) -> np.ndarray:
    """Apply a reduction of ``vals`` (P, N) onto the accumulator registers per ``cmd``; return the new
    register values (P,)."""
    name = getattr(cmd, "name", cmd)
    if name not in ("idle", "reset", "reduce", "reset_reduce", "load_reduce"):
        raise err_invalid_instruction_argument(f"'{api}': reduce_cmd={cmd!r}")
    start = _regs_start(regs, cmd, op, p, init, api)
    if name in ("idle", "reset"):
        new = start if name == "reset" else regs[:p].copy()
    else:
        part = reduce_fn(op)(vals.reshape(p, -1), (1,), False)
        new = binary(op if op_name(op) != "average" else "add")(start, part)
    regs[:p] = new
    return new


def _reduce_res(ins: Any, reduce_res: Any, vals: np.ndarray, api: str, p: int) -> None:
    if reduce_res is None:
        return
    samep(api, data=p, reduce_res=operand(reduce_res, api, "reduce_res"))
    if free_size(reduce_res.shape) != 1:
        raise err_invalid_instruction_argument(f"'{api}': reduce_res must be ({p}, 1), got {reduce_res.describe()}")
    ins.write(reduce_res, vals.reshape(reduce_res.shape))


def tensor_scalar_reduce(dst: NkiTensor, data: NkiTensor, op0: Any, operand0: Any, reduce_op: Any,
                         reduce_res: NkiTensor | None = None, *, reverse0: bool = False,
                         reduce_cmd: Any = _reduce_cmd.reset_reduce, reduce_init: Any = None,
                         reduce_res_negate: bool = False, mask: Any = None, name: str | None = None) -> NkiInstruction:
    """``dst = data <op0> operand0`` plus a reduction of ``dst``'s values along the free axes into the
    Vector Engine accumulators (``reduce_op``: add, multiply, max or min; ``reduce_cmd``), read out into
    ``reduce_res`` (negated with ``reduce_res_negate``). Cost: max(MIN_II, N) + MIN_II."""
    sim = current()
    api = "tensor_scalar_reduce"
    if is_bitvec(op0):
        raise err_invalid_instruction_argument(f"'{api}': op0 must be arithmetic")
    if op_name(reduce_op) not in ("add", "multiply", "maximum", "minimum"):
        raise err_invalid_instruction_argument(f"'{api}': reduce_op must be add, multiply, max or min")
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    n = free_size(data.shape)
    mi = _min_ii()
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(n, mi) + mi) as ins:
        x = f32(ins.read(data, mask))
        v = scalar_operand(ins, operand0, p, api, "operand0") if operand0 is not None else np.float32(0)
        if isinstance(v, np.ndarray) and v.ndim:
            v = v.reshape((p,) + (1,) * (x.ndim - 1))
        y = _op_vals(op0, x, v, reverse0, False)
        ins.write(dst, y.reshape(dst.shape), mask)
        init = scalar_operand(ins, reduce_init, p, api, "reduce_init") if reduce_init is not None else None
        yr = dtypes.to_f32(dtypes.from_f32(y, dst.dtype, dst.storage.keep), dst.dtype)
        regs = _reduce_into(sim.core.dve_regs, reduce_cmd, reduce_op, yr, p, init, api)
        _reduce_res(ins, reduce_res, -regs if reduce_res_negate else regs, api, p)
    return issue(sim)


def tensor_scalar_cumulative(dst: NkiTensor, src: NkiTensor, op0: Any, op1: Any, imm0: Any, imm1: Any = None, *,
                             reduce_cmd: Any = _reduce_cmd.reset_reduce, name: str | None = None) -> NkiInstruction:
    """Cumulative ``reg = op1(op0(src[i], imm0), reg); dst[i] = reg`` along the free axis (Vector
    Engine accumulators; ``reduce_cmd`` reset_reduce / reduce / load_reduce with ``imm1``). ``op1``:
    add, subtract, multiply, max, min. Cost: max(MIN_II, N)."""
    sim = current()
    api = "tensor_scalar_cumulative"
    if op_name(op1) not in ("add", "subtract", "multiply", "maximum", "minimum"):
        raise err_invalid_instruction_argument(f"'{api}': op1 must be add, subtract, multiply, max or min")
    for opd in (src, dst):
        if opd.dtype in (dtypes.int32, dtypes.uint32):
            raise err_unsupported_dtype(f"'{api}': int32/uint32 are not supported ({opd.describe()})")
    p = operand(src, api, "src")
    samep(api, src=p, dst=operand(dst, api, "dst"))
    same_elements(api, src, dst)
    n = free_size(src.shape)
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(n, _min_ii())) as ins:
        x = f32(ins.read(src)).reshape(p, n)
        v0 = scalar_operand(ins, imm0, p, api, "imm0")
        v0 = v0.reshape(p, 1) if isinstance(v0, np.ndarray) and v0.ndim else v0
        t = _op_vals(op0, x, v0, False, False)
        init = scalar_operand(ins, imm1, p, api, "imm1") if imm1 is not None else None
        cmd = getattr(reduce_cmd, "name", reduce_cmd)
        if cmd == "reduce":
            reg = sim.core.dve_regs[:p].astype(np.float32)
        else:
            reg = _regs_start(sim.core.dve_regs, reduce_cmd, "add" if op_name(op1) == "subtract" else op1, p, init, api)
        f1 = binary(op1)
        out = np.empty((p, n), dtype=np.float32)
        for i in range(n):
            reg = f1(t[:, i], reg)
            out[:, i] = reg
        sim.core.dve_regs[:p] = reg
        ins.write(dst, out.reshape(dst.shape))
    return issue(sim)


def bn_stats(dst: NkiTensor, data: NkiTensor, *, mask: Any = None, name: str | None = None) -> NkiInstruction:
    """Per-partition (count, mean, variance*count) of the even and of the odd elements of ``data``
    (free size <= 512, ``nl.tile_size.bn_stats_fmax``) -> ``dst`` (P, 6), Vector Engine, fp32.

    A legacy ``mask`` may be in the input's index space (AWS's LayerNorm tutorial does that): masked-off
    input elements are left out of the statistics (counts shrink). Cost: max(MIN_II, N).
    """
    sim = current()
    api = "bn_stats"
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    n = free_size(data.shape)
    if n > 512:
        raise err_size_of_dimension_exceed_arch_limit(f"'{api}': free size {n} of {data.describe()} > 512 "
                                                      "(bn_stats_fmax)")
    if dst.size < p * 6:
        raise err_invalid_instruction_argument(f"'{api}': dst {dst.describe()} must hold 6 elements per partition")
    in_mask = as_mask_array(mask, data.shape) if mask is not None else None
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(n, _min_ii())) as ins:
        x = f32(ins.read(data, mask if in_mask is not None else None)).reshape(p, n)
        keep = in_mask.reshape(p, n) if in_mask is not None else np.ones((p, n), dtype=bool)
        out = np.zeros((p, 6), dtype=np.float32)
        for j in range(2):
            part, k = x[:, j::2], keep[:, j::2]
            c = k.sum(axis=1).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                mu = np.where(c > 0, (part * k).sum(axis=1) / np.maximum(c, 1), 0.0)
                m2 = ((part - mu[:, None]) ** 2 * k).sum(axis=1)
            out[:, 3 * j], out[:, 3 * j + 1], out[:, 3 * j + 2] = c, mu, m2
        out_mask = mask if in_mask is None and mask is not None else None
        ins.write(dst, out.reshape(dst.shape) if dst.size == out.size else out, out_mask)
    return issue(sim)


def bn_aggr(dst: NkiTensor, data: NkiTensor, *, mask: Any = None, name: str | None = None) -> NkiInstruction:
    """Aggregate bn_stats tuples (count, mean, variance*count) along the free axis -> ``dst`` (P, 2):
    mean, variance (Vector Engine, fp32). Cost: max(MIN_II, 13 N / 3)."""
    sim = current()
    api = "bn_aggr"
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    n = free_size(data.shape)
    if n % 3:
        raise err_invalid_instruction_argument(f"'{api}': free size {n} of {data.describe()} is not a multiple of 3")
    with sim.instruction(name or api, "vector", cost_model.bn_aggr_cycles(n, _min_ii())) as ins:
        s = f32(ins.read(data)).reshape(p, n // 3, 3).astype(np.float64)
        cnt, mu, m2 = s[..., 0], s[..., 1], s[..., 2]
        tot = cnt.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (cnt * mu).sum(axis=1) / tot
            var = (m2 + cnt * (mu - mean[:, None]) ** 2).sum(axis=1) / tot
        ins.write(dst, np.stack([mean, var], axis=1).astype(np.float32).reshape(dst.shape), mask)
    return issue(sim)


def _rows(ins: Any, t: NkiTensor, mask: Any = None) -> np.ndarray:
    v = f32(ins.read(t, mask))
    return v.reshape(v.shape[0], -1)


def max8(dst: NkiTensor, src: NkiTensor, *, mask: Any = None, name: str | None = None) -> NkiInstruction:
    """The 8 largest values of each partition of ``src`` (8 to 16384 elements), descending, into
    ``dst`` (P, 8) (Vector Engine, fp32 compare). Cost: N."""
    sim = current()
    api = "max8"
    p = operand(src, api, "src")
    samep(api, src=p, dst=operand(dst, api, "dst"))
    n = free_size(src.shape)
    if not 8 <= n <= 16384 or free_size(dst.shape) != 8:
        raise err_invalid_instruction_argument(f"'{api}': src needs 8..16384 elements per partition ({n}) and dst 8")
    with sim.instruction(name or api, "vector", max(n, _min_ii())) as ins:
        x = _rows(ins, src, mask)
        top = -np.sort(-x, axis=1, kind="stable")[:, :8]
        ins.write(dst, top.reshape(dst.shape))
    return issue(sim)


def _sentinel(dt: Any) -> int:
    return int(np.iinfo(dtypes.np_dtype(dt)).max) if dtypes.is_int(dt) and dtypes.np_dtype(dt).kind == "u" else -1


def nc_find_index8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, *, mask: Any = None,
                   name: str | None = None) -> NkiInstruction:
    """Index of the first occurrence in each partition of ``data`` of each of the 8 ``vals`` (duplicate
    vals take successive occurrences, in ascending order); all-ones when absent. ``dst`` (P, 8)
    uint16/uint32. Cost: N.

    Raises:
        err_invalid_instruction_argument: ``data`` has fewer than 8 or more than 16,384 elements per
            partition ("The data tensor must have between 8 and 16,384 elements per partition",
            ``aws-neuron/aws-neuron-sdk@81ce03a:nki/api/nki/isa/__init__.py:3177``; legacy page the same),
            or ``vals`` / ``dst`` do not have 8.
    """
    sim = current()
    api = "nc_find_index8"
    p = operand(data, api, "data")
    samep(api, data=p, vals=operand(vals, api, "vals"), dst=operand(dst, api, "dst"))
    if free_size(vals.shape) != 8 or free_size(dst.shape) != 8:
        raise err_invalid_instruction_argument(f"'{api}': vals and dst need 8 elements per partition")
    n = free_size(data.shape)
    if not 8 <= n <= 16384:
        raise err_invalid_instruction_argument(
            f"'{api}': data {data.describe()} has {n} elements per partition; it needs 8 to 16,384")
    with sim.instruction(name or api, "vector", max(n, _min_ii())) as ins:
        x = _rows(ins, data, mask)
        v = _rows(ins, vals)
        out = np.full((p, 8), _sentinel(dst.dtype), dtype=np.int64)
        for r in range(p):
            used: set[int] = set()
            for i in range(8):
                hits = [j for j in np.flatnonzero(x[r] == v[r, i]) if j not in used]
                if hits:
                    out[r, i] = hits[0]
                    used.add(int(hits[0]))
        ins.write(dst, out.reshape(dst.shape))
    return issue(sim)


def nc_match_replace8(dst: NkiTensor, data: NkiTensor, vals: NkiTensor, imm: float, *, dst_idx: Any = None,
                      mask: Any = None, name: str | None = None) -> NkiInstruction:
    """Replace the first occurrence in each partition of each of the 8 ``vals`` by ``imm`` (``vals``
    processed from the last to the first, so duplicates take successive occurrences, highest slot first),
    optionally writing the matched indices to ``dst_idx``. Cost: max(MIN_II, N)."""
    sim = current()
    api = "nc_match_replace8"
    p = operand(data, api, "data")
    samep(api, data=p, vals=operand(vals, api, "vals"), dst=operand(dst, api, "dst"))
    same_elements(api, data, dst)
    if free_size(vals.shape) != 8:
        raise err_invalid_instruction_argument(f"'{api}': vals needs 8 elements per partition")
    n = free_size(data.shape)
    with sim.instruction(name or api, "vector", max(n, _min_ii())) as ins:
        x = _rows(ins, data, mask).copy()
        v = _rows(ins, vals)
        idx = np.full((p, 8), -1, dtype=np.int64)
        for r in range(p):
            used: set[int] = set()
            for i in range(7, -1, -1):
                hits = [j for j in np.flatnonzero(x[r] == v[r, i]) if j not in used]
                if hits:
                    idx[r, i] = hits[0]
                    used.add(int(hits[0]))
            for j in used:
                x[r, j] = imm
        ins.write(dst, x.reshape(dst.shape), mask)
        if dst_idx is not None:
            samep(api, data=p, dst_idx=operand(dst_idx, api, "dst_idx"))
            idx = np.where(idx < 0, _sentinel(dst_idx.dtype), idx)
            ins.write(dst_idx, idx.reshape(dst_idx.shape))
    return issue(sim)


def nc_stream_shuffle(dst: NkiTensor, src: NkiTensor, shuffle_mask: Any, *, mask: Any = None,
                      name: str | None = None) -> NkiInstruction:
    """Cross-partition move within each 32-partition quadrant: ``dst[q*32 + i] = src[q*32 +
    shuffle_mask[i]]``; ``shuffle_mask[i] == 255`` leaves ``dst`` partition ``i`` unchanged (Vector
    Engine; SBUF or PSUM, in place allowed). Cost: max(MIN_II, N)."""
    sim = current()
    api = "nc_stream_shuffle"
    ps = operand(src, api, "src")
    pd = operand(dst, api, "dst")
    same_elements(api, src, dst)
    if src.dtype != dst.dtype:
        raise err_unsupported_dtype(f"'{api}': dst must have src's dtype")
    sm = [int(getattr(v, "values", v)) if not isinstance(v, (int, np.integer)) else int(v) for v in shuffle_mask]
    if len(sm) != 32:
        raise err_invalid_instruction_argument(f"'{api}': shuffle_mask must have 32 entries, got {len(sm)}")
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())) as ins:
        s = ins.read(src, raw=True).reshape(ps, -1)
        cur = ins.read(dst, raw=True).reshape(pd, -1).copy()
        for d in range(pd):
            q, i = divmod(d, 32)
            if sm[i] == 255:
                continue
            srow = q * 32 + sm[i] if ps > 32 else sm[i]
            if srow >= ps:
                raise err_invalid_instruction_argument(f"'{api}': shuffle_mask[{i}]={sm[i]} reads partition {srow} of "
                                                       f"{src.describe()}")
            cur[d] = s[srow]
        ins.write(dst, cur.reshape(dst.shape))
    return issue(sim)


def tensor_copy_predicated(dst: NkiTensor, src: Any, predicate: NkiTensor, *, reverse_pred: bool = False,
                           mask: Any = None, name: str | None = None) -> NkiInstruction:
    """``dst = src`` where ``predicate`` is non-zero (zero with ``reverse_pred``), ``dst`` unchanged
    elsewhere; ``src`` a tile or a scalar; ``predicate`` uint8/16/32; ``src`` and ``predicate`` not both
    in PSUM (Vector Engine). Cost: max(MIN_II, N)."""
    sim = current()
    api = "tensor_copy_predicated"
    pd = operand(dst, api, "dst")
    pp = operand(predicate, api, "predicate")
    ps = {"dst": pd, "predicate": pp}
    if is_tile(src):
        ps["src"] = operand(src, api, "src")
        if src.buffer.kind == "psum" and predicate.buffer.kind == "psum":
            raise err_unsupported_memory(f"'{api}': src and predicate cannot both be in PSUM")
    samep(api, **ps)
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())) as ins:
        pr = ins.read(predicate, raw=True)
        pr = _fit(np.asarray(pr).reshape(pd, -1), (pd, free_size(dst.shape))).reshape(dst.shape) \
            if pr.shape != dst.shape else pr
        sel = pr != 0
        if reverse_pred:
            sel = ~sel
        if is_tile(src):
            v = ins.read(src, raw=src.dtype == dst.dtype)
            v = v.reshape(dst.shape) if v.shape != dst.shape else v
        else:
            v = np.broadcast_to(np.float32(src), dst.shape)
        cur = ins.read(dst, raw=True)
        keep_raw = is_tile(src) and src.dtype == dst.dtype
        out: np.ndarray
        if keep_raw:
            out = np.where(sel, v, cur)
        else:
            out = np.where(sel, f32(v), dtypes.to_f32(cur, dst.dtype))
        ins.write(dst, out, mask)
    return issue(sim)


def select_reduce(dst: NkiTensor, predicate: NkiTensor, on_true: NkiTensor, on_false: Any,
                  reduce_res: NkiTensor | None = None, *, reduce_cmd: Any = _reduce_cmd.idle,
                  reduce_op: Any = "maximum", reverse_pred: bool = False, mask: Any = None,
                  name: str | None = None) -> NkiInstruction:
    """``dst = where(predicate, on_true, on_false)`` (Vector Engine) with an optional max-reduction
    along the free axes into the accumulators / ``reduce_res``. Cost: max(MIN_II, N)."""
    sim = current()
    api = "select_reduce"
    if op_name(reduce_op) != "maximum":
        raise err_invalid_instruction_argument(f"'{api}': reduce_op must be max")
    p = operand(on_true, api, "on_true")
    samep(api, on_true=p, predicate=operand(predicate, api, "predicate"), dst=operand(dst, api, "dst"))
    if on_true.buffer.kind == "psum" and predicate.buffer.kind == "psum":
        raise err_unsupported_memory(f"'{api}': on_true and predicate cannot both be in PSUM")
    # "on_true, dst, and predicate must have identical shapes (same number of partitions and elements
    # per partition)" (nki.isa.select_reduce)
    same_elements(api, on_true, dst)
    same_elements(api, predicate, dst)
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())) as ins:
        pr = ins.read(predicate, raw=True).reshape(dst.shape) != 0
        if reverse_pred:
            pr = ~pr
        t = f32(ins.read(on_true, mask)).reshape(dst.shape)
        fv = scalar_operand(ins, on_false, p, api, "on_false")
        fv = fv.reshape((p,) + (1,) * (len(dst.shape) - 1)) if isinstance(fv, np.ndarray) and fv.ndim else fv
        res = np.where(pr, t, fv)
        ins.write(dst, res, mask)
        if getattr(reduce_cmd, "name", reduce_cmd) != "idle" or reduce_res is not None:
            rv = dtypes.to_f32(dtypes.from_f32(res, dst.dtype, dst.storage.keep), dst.dtype)
            regs = _reduce_into(sim.core.dve_regs, reduce_cmd, "maximum", rv, p, None, api)
            _reduce_res(ins, reduce_res, regs, api, p)
    return issue(sim)


_CMPS = ("equal", "less", "less_equal", "greater", "greater_equal")


def range_select(dst: NkiTensor, on_true_tile: NkiTensor, comp_op0: Any, comp_op1: Any, bound0: NkiTensor,
                 bound1: NkiTensor, *, reduce_cmd: Any = _reduce_cmd.reset_reduce, reduce_res: Any = None,
                 reduce_op: Any = "maximum", range_start: int = 0,
                 on_false_value: float = float(np.finfo(np.float32).min),
                 mask: Any = None, name: str | None = None) -> NkiInstruction:
    """Keep the elements of ``on_true_tile`` whose free index + ``range_start`` satisfies
    ``comp_op0(i, bound0) & comp_op1(i, bound1)`` (per-partition fp32 bounds), else
    ``on_false_value`` (FP32_MIN); max-reduce into the accumulators / ``reduce_res`` (Vector Engine,
    NeuronCore-v3+). Cost: max(MIN_II, N)."""
    sim = current()
    api = "range_select"
    require_generation(api, 3)
    if op_name(comp_op0) not in _CMPS or op_name(comp_op1) not in _CMPS:
        raise err_invalid_instruction_argument(f"'{api}': comparison operators must be one of {_CMPS}")
    if op_name(reduce_op) != "maximum":
        raise err_invalid_instruction_argument(f"'{api}': reduce_op must be max")
    p = operand(on_true_tile, api, "on_true_tile")
    samep(api, on_true_tile=p, bound0=operand(bound0, api, "bound0"), bound1=operand(bound1, api, "bound1"),
          dst=operand(dst, api, "dst"))
    n = free_size(on_true_tile.shape)
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(n, _min_ii())) as ins:
        t = f32(ins.read(on_true_tile, mask)).reshape(p, n)
        b0 = f32(ins.read(bound0)).reshape(p, 1)
        b1 = f32(ins.read(bound1)).reshape(p, 1)
        idx = (np.arange(n, dtype=np.float32) + np.float32(range_start))[None, :]
        keep = binary(comp_op0)(idx, b0).astype(bool) & binary(comp_op1)(idx, b1).astype(bool)
        res = np.where(keep, t, np.float32(on_false_value))
        ins.write(dst, res.reshape(dst.shape), mask)
        rv = dtypes.to_f32(dtypes.from_f32(res, dst.dtype, dst.storage.keep), dst.dtype)
        regs = _reduce_into(sim.core.dve_regs, reduce_cmd, "maximum", rv, p, None, api)
        _reduce_res(ins, reduce_res, regs, api, p)
    return issue(sim)


def dropout(dst: NkiTensor, data: NkiTensor, prob: Any, *, mask: Any = None, name: str | None = None) -> NkiInstruction:
    """Replace each element of ``data`` by zero with probability ``prob`` (a scalar or a (P, 1) tile),
    from the Vector Engine's random generator (no rescaling of the kept values). Cost: max(MIN_II, N)."""
    sim = current()
    api = "dropout"
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    if dst.dtype != data.dtype:
        raise err_unsupported_dtype(f"'{api}': dst must have data's dtype")
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())) as ins:
        x = ins.read(data, mask, raw=True)
        pr = scalar_operand(ins, prob, p, api, "prob")
        pr = pr.reshape((p,) + (1,) * (x.ndim - 1)) if isinstance(pr, np.ndarray) and pr.ndim else pr
        u = sim.core.rng["vector"].random(x.shape, dtype=np.float32)
        ins.write(dst, np.where(u < pr, np.zeros_like(x), x), mask)
    return issue(sim)


def rng(dst: NkiTensor, *, engine: Any = None, name: str | None = None) -> NkiInstruction:
    """32 random bits per element, truncated to ``dst``'s integer dtype (least significant bits), from
    the engine's generator (Vector, or GpSimd on v3+). Cost: max(MIN_II, N)."""
    sim = current()
    api = "rng"
    eng = pick_engine(engine, "vector", api, ("vector", "gpsimd"))
    if eng == "gpsimd":
        require_generation(f"{api}(engine=gpsimd)", 3)
    operand(dst, api, "dst")
    gpsimd_no_psum(eng, api, dst=dst)
    if not dtypes.is_int(dst.dtype):
        raise err_unsupported_dtype(f"'{api}': dst must be an integer type, got {dst.describe()}")
    with sim.instruction(name or api, eng, cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())) as ins:
        bits = sim.core.rng[eng].integers(0, 2 ** 32, size=dst.shape, dtype=np.uint64)
        nd = dtypes.np_dtype(dst.dtype)
        ins.write(dst, (bits & ((1 << (8 * nd.itemsize)) - 1)).astype(nd.str.replace("i", "u")).view(nd))
    return issue(sim)


def rand2(dst: NkiTensor, min: Any, max: Any, *, name: str | None = None) -> NkiInstruction:
    """Uniform random numbers in [min, max] (scalars or (P, 1) tiles) into ``dst`` (Vector Engine,
    NeuronCore-v4). Cost: max(MIN_II, N)."""
    sim = current()
    api = "rand2"
    require_generation(api, 4)
    p = operand(dst, api, "dst")
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())) as ins:
        lo = scalar_operand(ins, min, p, api, "min")
        hi = scalar_operand(ins, max, p, api, "max")
        shp = (p,) + (1,) * (len(dst.shape) - 1)
        lo = lo.reshape(shp) if isinstance(lo, np.ndarray) and lo.ndim else lo
        hi = hi.reshape(shp) if isinstance(hi, np.ndarray) and hi.ndim else hi
        if np.any(np.asarray(lo) >= np.asarray(hi)):
            raise err_invalid_instruction_argument(f"'{api}': min must be < max")
        u = sim.core.rng["vector"].random(dst.shape, dtype=np.float32)
        ins.write(dst, lo + u * (hi - lo))
    return issue(sim)


def _seed_from(ins: Any, t: NkiTensor) -> int:
    vals = np.asarray(ins.read(t, raw=True)).astype(np.uint64).reshape(-1)
    return int(np.bitwise_xor.reduce(vals * np.arange(1, vals.size + 1, dtype=np.uint64))) if vals.size else 0


def set_rng_seed(src_seeds: NkiTensor, *, name: str | None = None) -> NkiInstruction:
    """Seed the Vector Engine's generator from a [1, 1] 32-bit tile (the same seed gives the same
    sequence of ``rng`` / ``dropout`` values)."""
    sim = current()
    api = "set_rng_seed"
    operand(src_seeds, api, "src_seeds")
    if src_seeds.size != 1 or dtypes.itemsize(src_seeds.dtype) != 4:
        raise err_invalid_instruction_argument(f"'{api}': src_seeds must be a [1, 1] 32-bit tile")
    with sim.instruction(name or api, "vector", _min_ii()) as ins:
        seed = _seed_from(ins, src_seeds)
    sim.core.rng["vector"] = np.random.default_rng(seed)
    return issue(sim)


def rand_set_state(src_seeds: NkiTensor, *, engine: Any = None, name: str | None = None) -> NkiInstruction:
    """Seed an engine's generator from a uint32 SBUF tile (GpSimd, or Vector on v4); the state is kept
    so that ``rand_get_state`` returns it (NeuronCore-v3+)."""
    sim = current()
    api = "rand_set_state"
    require_generation(api, 3)
    eng = pick_engine(engine, "gpsimd", api, ("gpsimd", "vector"))
    operand(src_seeds, api, "src_seeds", ("sbuf",))
    if src_seeds.dtype != dtypes.uint32:
        raise err_unsupported_dtype(f"'{api}': src_seeds must be uint32")
    with sim.instruction(name or api, eng, _min_ii()) as ins:
        raw = np.asarray(ins.read(src_seeds, raw=True)).copy()
        seed = _seed_from(ins, src_seeds)
    sim.core.rng[eng] = np.random.default_rng(seed)
    sim.core.rng[eng + "_state"] = raw
    return issue(sim)


def rand_get_state(dst: NkiTensor, *, engine: Any = None, name: str | None = None) -> NkiInstruction:
    """Write the engine's generator state (the tile last given to ``rand_set_state``; zeros before)
    into a uint32 tile (NeuronCore-v3+)."""
    sim = current()
    api = "rand_get_state"
    require_generation(api, 3)
    eng = pick_engine(engine, "gpsimd", api, ("gpsimd", "vector"))
    operand(dst, api, "dst")
    gpsimd_no_psum(eng, api, dst=dst)
    if dst.dtype != dtypes.uint32:
        raise err_unsupported_dtype(f"'{api}': dst must be uint32")
    st = sim.core.rng.get(eng + "_state")
    with sim.instruction(name or api, eng, _min_ii()) as ins:
        vals = np.zeros(dst.shape, dtype=np.uint32) if st is None else np.asarray(st).reshape(-1)[:dst.size] \
            .reshape(dst.shape) if np.asarray(st).size >= dst.size else np.zeros(dst.shape, dtype=np.uint32)
        ins.write(dst, vals)
    return issue(sim)


def exponential(dst: NkiTensor, src: NkiTensor, max_value: Any = 0.0, reduce_res: Any = None, *,
                reduce_cmd: Any = _reduce_cmd.idle, reduce_init: Any = 0.0, name: str | None = None) -> NkiInstruction:
    """``dst = exp(src - max_value)`` on the Vector Engine (NeuronCore-v4), summing into the
    accumulators per ``reduce_cmd`` (read out into ``reduce_res``). Cost: max(MIN_II, N)."""
    sim = current()
    api = "exponential"
    require_generation(api, 4)
    p = operand(src, api, "src")
    samep(api, src=p, dst=operand(dst, api, "dst"))
    same_elements(api, src, dst)
    with sim.instruction(name or api, "vector", cost_model.elementwise_cycles(free_size(dst.shape), _min_ii())) as ins:
        x = f32(ins.read(src))
        mv = scalar_operand(ins, max_value, p, api, "max_value")
        mv = mv.reshape((p,) + (1,) * (x.ndim - 1)) if isinstance(mv, np.ndarray) and mv.ndim else mv
        with np.errstate(over="ignore"):
            y = np.exp(x - mv).astype(np.float32)
        ins.write(dst, y.reshape(dst.shape))
        cmd = getattr(reduce_cmd, "name", reduce_cmd)
        if cmd != "idle":
            init = scalar_operand(ins, reduce_init, p, api, "reduce_init") if cmd == "load_reduce" else None
            yr = dtypes.to_f32(dtypes.from_f32(y, dst.dtype, dst.storage.keep), dst.dtype)
            regs = _reduce_into(sim.core.dve_regs, reduce_cmd, "add", yr, p, init, api)
            _reduce_res(ins, reduce_res, regs, api, p)
        elif reduce_res is not None:
            _reduce_res(ins, reduce_res, sim.core.dve_regs[:p].copy(), api, p)
    return issue(sim)
