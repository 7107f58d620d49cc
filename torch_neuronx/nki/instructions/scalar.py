"""Scalar Engine (ACT) instructions: ``activation`` (with its fused reduction), ``activation_reduce``
and ``activate2``.

``nki.isa.activation`` page (both front ends): ``dst = op(data * scale + bias)``; "The Scalar Engine
always performs the math operations in float32 precision"; ``scale`` a scalar or (P, 1) float32
vector (``err_activation_scale_invalid_type``, ``err_activation_scale_scalar_or_vector``); ``bias`` a
(P, 1) vector (fp32/fp16/bf16, ``err_activation_bias_invalid_type``) or, from NeuronCore-v3, a
scalar. The fused reduction goes into the engine's ``reduce_regs`` per ``reduce_cmd`` (reset, reduce,
reset_reduce, idle) and is read out into ``reduce_res``; the registers live on the core and persist
between instructions.

Cost: max(MIN_II, N) cycles, + MIN_II when ``reduce_res`` is read out.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost_model, dtypes
from ..context import current
from ..errors import (err_activation_bias_invalid_type, err_activation_scale_invalid_type,
                      err_activation_scale_scalar_or_vector, err_invalid_instruction_argument)
from ..indexing import as_mask_array
from ..ops import binary, op_name, reduce_fn, unary
from ..tile import NkiTensor, is_tile
from .common import (NkiInstruction, f32, free_size, issue, operand, pick_engine, require_generation,
                     samep, scalar_operand)
from .constants import reduce_cmd as _reduce_cmd

__all__ = ["activation", "activate2"]


def _vec(v: Any, p: int, ndim: int) -> Any:
    return v.reshape((v.shape[0],) + (1,) * (ndim - 1)) if isinstance(v, np.ndarray) and v.ndim else v


def _act_regs(sim: Any, cmd: Any, rop: str, y: np.ndarray, p: int, api: str) -> np.ndarray:
    name = getattr(cmd, "name", cmd)
    if name not in ("idle", "reset", "reduce", "reset_reduce"):
        raise err_invalid_instruction_argument(f"'{api}': reduce_cmd={cmd!r}")
    regs = sim.core.act_regs
    if name in ("reset", "reset_reduce"):
        ident = {"add": 0.0, "maximum": -np.inf, "minimum": np.inf}.get(rop, 0.0)
        regs[:p] = ident
    if name in ("reduce", "reset_reduce"):
        part = reduce_fn(rop)(y.reshape(p, -1), (1,), False)
        regs[:p] = binary(rop)(regs[:p], part)
    return regs[:p].copy()


def activation(dst: NkiTensor, op: Any, data: NkiTensor, *, bias: Any = None, scale: Any = 1.0,
               reduce_op: Any = None, reduce_res: Any = None, reduce_cmd: Any = _reduce_cmd.idle,
               mask: Any = None, engine: Any = None, name: str | None = None) -> NkiInstruction:
    """``dst = op(data * scale + bias)`` on the Scalar Engine (fp32 math, one rounding into ``dst``).

    ``reduce_res``: a (P, 1) tile receiving the reduction (``reduce_op``, add) of the activated values
    along the free axes; with ``reduce_cmd`` idle and ``reduce_res`` given the reduction is
    reset_reduce (``activation_reduce``). ``engine`` lets the ``nl`` front end run element-wise
    functions on the Vector Engine.

    Raises:
        err_activation_scale_scalar_or_vector, err_activation_scale_invalid_type,
        err_activation_bias_invalid_type, err_num_partition_mismatch.
    """
    sim = current()
    api = "activation"
    eng = pick_engine(engine, "scalar", api, ("scalar", "vector", "gpsimd"))
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    f = unary(op)
    if is_tile(bias):
        if bias.dtype not in (dtypes.float32, dtypes.float16, dtypes.bfloat16):
            raise err_activation_bias_invalid_type(f"'{api}': bias {bias.describe()}")
    if is_tile(scale):
        if free_size(scale.shape) != 1:
            raise err_activation_scale_scalar_or_vector(f"'{api}': scale {scale.describe()}")
        if scale.dtype != dtypes.float32:
            raise err_activation_scale_invalid_type(f"'{api}': scale {scale.describe()} must be float32")
    rop = op_name(reduce_op) if reduce_op is not None else "add"
    if rop not in ("add", "maximum", "minimum"):
        raise err_invalid_instruction_argument(f"'{api}': reduce_op {rop!r}; nl.add (and max/min on v3+)")
    cmd = getattr(reduce_cmd, "name", reduce_cmd)
    if reduce_res is not None and cmd == "idle":
        cmd = "reset_reduce"
    n = free_size(data.shape)
    mi = sim.platform.core.min_ii_cycles
    cycles = cost_model.elementwise_cycles(n, mi) + (mi if reduce_res is not None else 0)
    with sim.instruction(name or (api if reduce_res is None else "activation_reduce"), eng, cycles) as ins:
        x = f32(ins.read(data, mask))
        s = scalar_operand(ins, scale, p, api, "scale", err_activation_scale_scalar_or_vector)
        b = scalar_operand(ins, bias, p, api, "bias", err_activation_scale_scalar_or_vector)
        y = x * _vec(s, p, x.ndim)
        if b is not None:
            y = y + _vec(b, p, x.ndim)
        y = f(y)
        ins.write(dst, y.reshape(dst.shape) if y.size == dst.size else y, mask)
        if cmd != "idle":
            yr = y
            if mask is not None:
                mk = as_mask_array(mask, yr.shape)
                if mk is not None:
                    yr = np.where(mk, yr, {"add": 0.0, "maximum": -np.inf, "minimum": np.inf}[rop])
            regs = _act_regs(sim, cmd, rop, yr, p, api)      # reduced in fp32, before the output cast
            if reduce_res is not None:
                samep(api, data=p, reduce_res=operand(reduce_res, api, "reduce_res"))
                ins.write(reduce_res, regs.reshape(reduce_res.shape) if regs.size == reduce_res.size else regs)
    return issue(sim)


_ACT2_OPS = {("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"), ("add", "bypass"),
             ("subtract", "bypass"), ("bypass", "bypass")}


def activate2(dst: NkiTensor, op: Any, data: NkiTensor, imm0: Any, imm1: Any, op0: Any, op1: Any, *,
              relu_param: Any = 0.0, reverse0: bool = False, reverse1: bool = False, reduce_op: Any = None,
              reduce_res: Any = None, reduce_cmd: Any = _reduce_cmd.idle, name: str | None = None) -> NkiInstruction:
    """``dst = op((data <op0> imm0) <op1> imm1)`` on the Scalar Engine (NeuronCore-v4), ``(op0, op1)``
    one of the six combinations of the ``nki.isa.activate2`` page, ``nl.prelu`` with ``relu_param``,
    optional reduction (add / max / min / abs_max / abs_min) into the accumulators."""
    sim = current()
    api = "activate2"
    require_generation(api, 4)
    p = operand(data, api, "data")
    samep(api, data=p, dst=operand(dst, api, "dst"))
    pair = (op_name(op0) or "bypass", op_name(op1) or "bypass")
    if pair not in _ACT2_OPS:
        raise err_invalid_instruction_argument(f"'{api}': (op0, op1) = {pair} is not supported; allowed "
                                               f"{sorted(_ACT2_OPS)}")
    n = free_size(data.shape)
    mi = sim.platform.core.min_ii_cycles
    with sim.instruction(name or api, "scalar", cost_model.elementwise_cycles(n, mi)) as ins:
        x = f32(ins.read(data))
        v0 = _vec(scalar_operand(ins, imm0, p, api, "imm0"), p, x.ndim)
        v1 = _vec(scalar_operand(ins, imm1, p, api, "imm1"), p, x.ndim)
        if pair[0] != "bypass":
            x = binary(op0)(v0, x) if reverse0 else binary(op0)(x, v0)
        if pair[1] != "bypass":
            x = binary(op1)(v1, x) if reverse1 else binary(op1)(x, v1)
        if op_name(op) == "prelu":
            a = _vec(scalar_operand(ins, relu_param, p, api, "relu_param"), p, x.ndim)
            y = np.where(x >= 0, x, a * x).astype(np.float32)
        else:
            y = unary(op)(x)
        ins.write(dst, y.reshape(dst.shape))
        cmd = getattr(reduce_cmd, "name", reduce_cmd)
        if cmd != "idle":
            rop = op_name(reduce_op) or "add"
            yr = np.abs(y) if rop in ("abs_max", "abs_min") else y
            rr = {"abs_max": "maximum", "abs_min": "minimum"}.get(rop, rop)
            regs = _act_regs(sim, cmd, rr, yr, p, api)
            if reduce_res is not None:
                ins.write(reduce_res, regs.reshape(reduce_res.shape))
    return issue(sim)
