"""Tensor Engine instructions: ``nc_matmul`` (tiling, accumulation, FP8 double-row), ``nc_transpose``,
``nc_matmul_mx`` and the MX quantization ``quantize_mx``.

Rules (``nki.isa.nc_matmul`` page, current front end; the legacy page agrees where it says anything):
inputs in SBUF, ``dst`` in PSUM ("The nc_matmul instruction *must* read inputs from SBUF and write
outputs to PSUM"); contraction (partition) sizes equal and <= 128 (or the tiling ``row_size``);
stationary free <= 128 (or ``column_size``); moving free <= 512 on NeuronCore-v2/v3, 4096 (fp32 dst) /
8192 (bf16 dst) on v4; ``dst`` fp32 (bf16 also on v4); fp32/tf32 inputs only with fp32/tf32;
``float8_e4m3`` and ``float8_e4m3fn`` not mixed; ``double_row`` only with FP8 inputs on v3+, not with
column tiling. Accumulation: ``accumulate=None`` "first write overwrites, subsequent writes
accumulate" per PSUM location; the simulator tracks which PSUM elements were written.

Cost: max(min(64, N_stationary), N_moving) cycles, x4 for fp32 inputs, /2 in double_row mode,
scaled by the fraction of the PE array a tiled matmul uses; FLOPs 2 K M N.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost_model, dtypes
from ..context import current
from ..errors import (err_exceed_max_supported_dimension, err_invalid_instruction_argument,
                      err_num_partition_exceed_arch_limit, err_size_of_dimension_exceed_arch_limit,
                      err_unsupported_dtype)
from ..tile import NkiTensor, is_tile
from .common import NkiInstruction, check_memory, f32, issue, operand, require_generation, samep

__all__ = ["check_matmul_operands", "nc_matmul", "check_transpose_shape", "nc_transpose", "nc_matmul_mx",
           "quantize_mx", "mx_scale_rows"]

_FP32ISH = (dtypes.float32, dtypes.tfloat32)
_FP8 = (dtypes.float8_e4m3, dtypes.float8_e5m2, dtypes.float8_e4m3fn)


def check_matmul_operands(stationary: NkiTensor, moving: NkiTensor, api: str = "nc_matmul",
                          double_row: bool = False, row_size: int = 128, col_size: int = 128) -> tuple[int, int, int]:
    """Memory, partition, size and dtype rules of the Tensor Engine operands; returns (K, M, N)
    (K counts the double-row pairs: 2 x partitions)."""
    for arg, x in (("stationary", stationary), ("moving", moving)):
        if not is_tile(x):
            raise err_invalid_instruction_argument(f"'{api}': {arg} must be a tile")
        if x.shape and x.shape[0] > 128:
            raise err_num_partition_exceed_arch_limit(f"'{api}': contraction (partition) size of {arg} "
                                                      f"{x.describe()} > 128")
        check_memory(x, ("sbuf",), api, arg)
        x.check_partition_layout()
    want = 3 if double_row else 2
    if len(stationary.shape) != want or len(moving.shape) != want:
        if double_row:
            raise err_exceed_max_supported_dimension(
                f"'{api}' double_row: stationary {list(stationary.shape)} and moving {list(moving.shape)} must be "
                "[K, 2, M] and [K, 2, N]")
        raise err_exceed_max_supported_dimension(
            f"'{api}': stationary {list(stationary.shape)} and moving {list(moving.shape)} must be 2-D")
    if double_row and (stationary.shape[1] != 2 or moving.shape[1] != 2):
        raise err_invalid_instruction_argument(f"'{api}' double_row: the first free dim must be 2, got "
                                               f"{list(stationary.shape)} / {list(moving.shape)}")
    k1, m = stationary.shape[0], stationary.shape[-1]
    k2, n = moving.shape[0], moving.shape[-1]
    samep(api, stationary=k1, moving=k2)
    if k1 > row_size:
        raise err_num_partition_exceed_arch_limit(f"'{api}': contraction size {k1} > tile row size {row_size}")
    if m > col_size:
        raise err_size_of_dimension_exceed_arch_limit(
            f"'{api}': stationary free size {m} > {col_size} (gemm_stationary_fmax / tile column size), "
            f"{stationary.describe()}")
    sd, md = stationary.dtype, moving.dtype
    if (sd in _FP32ISH) != (md in _FP32ISH):
        raise err_unsupported_dtype(f"'{api}': if one input is tfloat32/float32 the other must be too "
                                    f"({dtypes.dtype_name(sd)} x {dtypes.dtype_name(md)})")
    if {sd, md} == {dtypes.float8_e4m3, dtypes.float8_e4m3fn}:
        raise err_unsupported_dtype(f"'{api}': float8_e4m3 and float8_e4m3fn cannot be mixed")
    if dtypes.float8_e4m3fn in (sd, md):
        require_generation(f"{api} with float8_e4m3fn", 4)
    return k1 * (2 if double_row else 1), m, n


def _tiling(api: str, tile_position: Any, tile_size: Any, gen: int, mx: bool = False) -> tuple[int, int]:
    tp = tuple(int(v) for v in tile_position) if tile_position else ()
    ts = tuple(int(v) for v in tile_size) if tile_size else ()
    if not tp and not ts:
        return 128, 128
    if not tp or not ts:
        raise err_invalid_instruction_argument(f"'{api}': tile_position and tile_size must both be set to tile")
    if len(tp) != 2 or len(ts) != 2:
        raise err_invalid_instruction_argument(f"'{api}': tile_position / tile_size are (row, column) pairs")
    allowed = (32, 64, 128) if gen >= 3 else (64, 128)
    for v, what in ((ts[0], "row_size"), (ts[1], "column_size")):
        if v not in allowed:
            raise err_invalid_instruction_argument(f"'{api}': tile {what} {v}; allowed on NeuronCore-v{gen}: {allowed}")
    if mx and ts[1] != 128:
        raise err_invalid_instruction_argument(f"'{api}': column_size must be 128 (row tiling only)")
    for v, s, what in ((tp[0], ts[0], "start_row"), (tp[1], ts[1], "start_column")):
        if v % s or v >= 128 or v < 0:
            raise err_invalid_instruction_argument(f"'{api}': {what} {v} must be a multiple of {s} below 128")
    return ts


def nc_matmul(dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor, *, accumulate: bool | None = False,
              is_transpose: bool = False, mask: Any = None, tile_position: Any = (), tile_size: Any = (),
              perf_mode: Any = None, is_stationary_onezero: bool = False, is_moving_onezero: bool = False,
              name: str | None = None) -> NkiInstruction:
    """``dst[M, N] (+)= stationary[K, M].T @ moving[K, N]`` on the Tensor Engine (fp32 accumulation).

    ``accumulate``: True adds to ``dst``, False overwrites, None overwrites the PSUM elements no
    instruction wrote yet and accumulates onto the others. ``perf_mode`` double_row: operands
    ``[K, 2, M]`` / ``[K, 2, N]`` (FP8), contraction over both. ``is_*_onezero`` are performance hints
    (fp32 operands of ones/zeros take 2x fewer passes).

    Raises:
        err_unsupported_memory, err_num_partition_mismatch, err_num_partition_exceed_arch_limit,
        err_size_of_dimension_exceed_arch_limit, err_unsupported_dtype, err_invalid_instruction_argument
        (see the module docstring).
    """
    sim = current()
    api = "nc_matmul"
    gen = sim.platform.core.generation
    pm = getattr(perf_mode, "value", perf_mode) or "none"
    if pm not in ("none", "double_row", "double_row_gen3", "double_row_sw_interleave"):
        raise err_invalid_instruction_argument(f"'{api}': perf_mode={perf_mode!r}")
    double = pm != "none"
    row, col = _tiling(api, tile_position, tile_size, gen)
    if double:
        require_generation(f"{api}(perf_mode={pm})", 3)
        if col != 128:
            raise err_invalid_instruction_argument(f"'{api}': double_row cannot be combined with column tiling")
        for x in (stationary, moving):
            if x.dtype not in _FP8:
                raise err_unsupported_dtype(f"'{api}' double_row: operands must be FP8, got {x.describe()}")
    k, m, n = check_matmul_operands(stationary, moving, api, double, row, col)
    check_memory(dst, ("psum",), api, "dst")
    dst.check_partition_layout()
    fmax = 512 if gen < 4 else (8192 if dst.dtype == dtypes.bfloat16 else 4096)
    if n > fmax:
        raise err_size_of_dimension_exceed_arch_limit(
            f"'{api}': moving free size {n} > {fmax} (gemm_moving_fmax on NeuronCore-v{gen}), {moving.describe()}")
    if not is_transpose:
        ok = (dtypes.float32,) if gen < 4 else (dtypes.float32, dtypes.bfloat16)
        if dst.dtype not in ok:
            raise err_unsupported_dtype(f"'{api}': matmul output must be {' or '.join(map(str, ok))} in PSUM on "
                                        f"NeuronCore-v{gen}, got {dst.describe()}")
    if tuple(dst.shape) != (m, n) and dst.size != m * n:
        raise err_invalid_instruction_argument(f"'{api}': dst shape {list(dst.shape)} != [{m}, {n}]")
    fp32 = dtypes.float32 in (stationary.dtype, moving.dtype) or dtypes.tfloat32 in (stationary.dtype, moving.dtype)
    cycles: float = cost_model.matmul_cycles(m, n, fp32 and not (is_stationary_onezero or is_moving_onezero))
    if fp32 and (is_stationary_onezero or is_moving_onezero):
        cycles *= 2
    if double:
        cycles = cycles / 2
    cycles *= (row / 128) * (col / 128)
    with sim.instruction(name or api, "tensor", cycles) as ins:
        a = f32(ins.read(stationary))
        b = f32(ins.read(moving))
        if double:
            res = np.einsum("kjm,kjn->mn", a, b, dtype=np.float32)
        else:
            res = a.T @ b
        res = res.reshape(dst.shape)
        if accumulate is None:
            acc = dst.access().storage_access()
            st = dst.storage
            init = np.asarray(acc.get(st.aux_array("psum_written", 0.0, np.bool_))).astype(bool)
            old = np.where(init, f32(ins.read(dst)), np.float32(0)) if init.any() else np.float32(0)
            ins.write(dst, old + res, mask, exempt=True)
        else:
            ins.write(dst, res, mask, accumulate=bool(accumulate))
        acc = dst.access().storage_access()
        acc.put(dst.storage.aux_array("psum_written", 0.0, np.bool_), np.ones(acc.shape, dtype=bool))
    if not is_transpose:
        nm = "float32" if fp32 else dtypes.dtype_name(stationary.dtype if stationary.dtype != dtypes.float32
                                                      else moving.dtype)
        sim.timeline.add_flops(2.0 * k * m * n, nm)
    return issue(sim)


def check_transpose_shape(data: NkiTensor, eng: str, api: str = "nc_transpose") -> None:
    """Tensor Engine <= 128x128, Vector Engine <= 32x32 (free axes flattened)."""
    if len(data.shape) < 2:
        raise err_exceed_max_supported_dimension(f"'{api}' {data.describe()}: at least 2-D")
    lim = 128 if eng == "tensor" else 32
    p, f = data.shape[0], int(np.prod(data.shape[1:], dtype=np.int64))
    if max(p, f) > lim:
        raise err_size_of_dimension_exceed_arch_limit(f"'{api}' on {eng} engine: {data.describe()} exceeds "
                                                      f"{lim}x{lim}")


def nc_transpose(dst: NkiTensor, data: NkiTensor, *, engine: str = "tensor", mask: Any = None,
                 name: str | None = None) -> NkiInstruction:
    """``dst[F, P] = data[P, F].T`` (free axes of ``data`` flattened).

    Tensor Engine: data SBUF [<=128, <=128], dst PSUM; cost as a matmul against identity. Vector
    Engine: [<=32, <=32], SBUF/PSUM both sides; cost max(MIN_II, F). ``dst`` has ``data``'s dtype.
    """
    sim = current()
    api = "nc_transpose"
    check_transpose_shape(data, engine)
    p = data.shape[0]
    f = int(np.prod(data.shape[1:], dtype=np.int64))
    if engine == "tensor":
        operand(data, api, "data", ("sbuf",))
        operand(dst, api, "dst", ("psum",))
        cycles: float = cost_model.matmul_cycles(f, p, data.dtype == dtypes.float32)
    else:
        operand(data, api, "data")
        operand(dst, api, "dst")
        cycles = cost_model.elementwise_cycles(f, sim.platform.core.min_ii_cycles)
    if dst.size != f * p or dst.shape[0] != f:
        raise err_invalid_instruction_argument(f"'{api}': dst shape {list(dst.shape)} != [{f}, {p}]")
    with sim.instruction(name or api, engine, cycles) as ins:
        raw = data.dtype == dst.dtype
        v = ins.read(data, raw=raw).reshape(p, f).T
        ins.write(dst, v.reshape(dst.shape), mask)
    return issue(sim)


def mx_scale_rows(p: int) -> np.ndarray:
    """Scale-tile partition of each 8-partition group of an MX data tile with ``p`` partitions: the
    groups of a 32-partition quadrant sit on that quadrant's first 4 partitions when the data spans
    more than one quadrant (``nisa.quantize_mx`` / ``nc_matmul_mx`` layout), else contiguously."""
    g = np.arange(p // 8)
    return g if p <= 32 else (g // 4) * 32 + g % 4


def _e8m0(vals: np.ndarray) -> np.ndarray:
    """2 ** (e - 127) of E8M0 scale bytes (uint8 or float8_e8m0fnu storage)."""
    return np.ldexp(np.float32(1.0), vals.astype(np.int32) - 127).astype(np.float32)


def _scale_bytes(ins: Any, t: NkiTensor) -> np.ndarray:
    raw = ins.read(t, raw=True)
    if raw.dtype == np.uint8:
        return raw
    if raw.dtype == dtypes.float8_e8m0fnu:
        return raw.view(np.uint8)
    return np.asarray(dtypes.to_f32(raw, t.dtype)).astype(np.uint8)


def quantize_mx(dst: NkiTensor, src: NkiTensor, dst_scale: NkiTensor, name: str | None = None) -> NkiInstruction:
    """Quantize a bf16/fp16 tile to MXFP8 (``dst``: float8_e4m3fn_x4 / float8_e5m2_x4) with one E8M0
    scale per 8-partition x 4-element group (``dst_scale``: float8_e8m0fnu or uint8) on the Vector
    Engine, NeuronCore-v4. Scale ``X = 2 ** (floor(log2(amax)) - Emax)`` (Emax 8 for e4m3fn, 15 for
    e5m2; ``2**-127`` for an all-zero group), values ``src / X`` rounded, saturating: the OCP rule of
    nki-library's "golden reference matching nisa.quantize_mx hardware behavior" (``quantize_mx_golden``
    in ``nkilib/core/utils/mx_torch_common.py``), which its MXFP load test matches bit for bit. The
    ``nki.isa.quantize_mx`` page (SDK 2.32) instead describes a block scale "two times larger"
    (``Emax - 1``); with it, that test's data and scales differ everywhere. Only the scale partitions
    of ``dst_scale`` are written (the first 4 of each 32-partition quadrant); the others keep their
    values, which is what lets a kernel pack the scales of several calls into one tile at partition
    offsets 0, 4, 8 or 12 (``nki/deep-dives/mxfp-matmul.rst``, "Packing Scale Values").

    Raises:
        err_unsupported_on_target (before v4), err_unsupported_dtype, err_invalid_instruction_argument.
    """
    sim = current()
    api = "quantize_mx"
    require_generation(api, 4)
    for arg, opd in (("dst", dst), ("src", src), ("dst_scale", dst_scale)):
        operand(opd, api, arg, ("sbuf",))
    if src.dtype not in (dtypes.bfloat16, dtypes.float16):
        raise err_unsupported_dtype(f"'{api}': src must be bfloat16 or float16, got {src.describe()}")
    if dst.dtype not in (dtypes.float8_e4m3fn_x4, dtypes.float8_e5m2_x4):
        raise err_unsupported_dtype(f"'{api}': dst must be float8_e4m3fn_x4 or float8_e5m2_x4, got {dst.describe()}")
    if dst_scale.dtype not in (dtypes.float8_e8m0fnu, dtypes.uint8):
        raise err_unsupported_dtype(f"'{api}': dst_scale must be float8_e8m0fnu or uint8, got {dst_scale.describe()}")
    p = src.shape[0]
    f = int(np.prod(src.shape[1:], dtype=np.int64))
    if p % 32 or f % 4:
        raise err_invalid_instruction_argument(f"'{api}': src partitions ({p}) must be a multiple of 32 and free size "
                                               f"({f}) of 4")
    samep(api, src=p, dst=dst.shape[0])
    if dst.size != p * f // 4:
        raise err_invalid_instruction_argument(f"'{api}': dst {dst.describe()} must hold [{p}, {f // 4}] x4 elements")
    emax = 8 if dst.dtype == dtypes.float8_e4m3fn_x4 else 15
    elem = dst.dtype.elem
    fmax = float(dtypes.finfo(elem).max)
    rows = mx_scale_rows(p)
    cycles = cost_model.elementwise_cycles(f, sim.platform.core.min_ii_cycles)
    with sim.instruction(name or api, "vector", cycles) as ins:
        x = f32(ins.read(src)).reshape(p, f)
        grp = np.abs(x).reshape(p // 8, 8, f // 4, 4).max(axis=(1, 3))
        with np.errstate(divide="ignore"):
            e = np.where(grp > 0, np.floor(np.log2(np.where(grp > 0, grp, 1))) - emax, -127)
        e = np.clip(e, -127, 127).astype(np.int32)
        scale = np.ldexp(np.float32(1.0), e).astype(np.float32)
        full = np.repeat(np.repeat(scale, 8, axis=0), 4, axis=1)
        q = np.clip(x / full, -fmax, fmax).reshape(p, f // 4, 4)
        ins.write(dst, dst.dtype.pack(q).reshape(dst.shape))
        sb = (e + 127).astype(np.uint8)
        cur = np.array(ins.read(dst_scale, raw=True), copy=True).reshape(dst_scale.shape[0], -1)
        if dst_scale.shape[0] <= rows.max() or cur.shape[1] < f // 4:
            raise err_invalid_instruction_argument(
                f"'{api}': dst_scale {dst_scale.describe()} too small for [{p}, {f}] data (needs partitions "
                f"{int(rows.max()) + 1} and {f // 4} columns)")
        bytes_ = cur.view(np.uint8) if cur.dtype != np.uint8 else cur
        # only the scale rows are written (4 per 32-partition quadrant): the other partitions keep their
        # values, so scales of up to four quantize_mx calls can be packed into one tile at partition
        # offsets 0 / 4 / 8 / 12 (AWS's MXFP matmul deep dive, "Packing Scale Values")
        bytes_[rows, : f // 4] = sb
        vals = bytes_.view(cur.dtype) if cur.dtype != np.uint8 else bytes_
        ins.write(dst_scale, vals.reshape(dst_scale.shape))
    return issue(sim)


def nc_matmul_mx(dst: NkiTensor, stationary: NkiTensor, moving: NkiTensor, stationary_scale: NkiTensor,
                 moving_scale: NkiTensor, tile_position: Any = None, tile_size: Any = None,
                 accumulate: bool | None = None, name: str | None = None) -> NkiInstruction:
    """MXFP8/MXFP4 matmul with dequantization (NeuronCore-v4): ``dst[M, N] (+)= sum over partitions k
    and the 4 packed values q of (S[k, m, q] * s_S) * (V[k, n, q] * s_V)``, scales from the
    E8M0 tiles in the :func:`mx_scale_rows` layout. ``dst`` fp32 or bf16 in PSUM.

    Raises:
        err_unsupported_on_target (before v4), err_unsupported_dtype, err_invalid_instruction_argument,
        err_unsupported_memory.
    """
    sim = current()
    api = "nc_matmul_mx"
    require_generation(api, 4)
    row, _ = _tiling(api, tile_position, tile_size, sim.platform.core.generation, mx=True)
    for arg, x in (("stationary", stationary), ("moving", moving), ("stationary_scale", stationary_scale),
                   ("moving_scale", moving_scale)):
        operand(x, api, arg, ("sbuf",))
    operand(dst, api, "dst", ("psum",))
    for arg, x in (("stationary", stationary), ("moving", moving)):
        if not dtypes.is_packed(x.dtype):
            raise err_unsupported_dtype(f"'{api}': {arg} must be an MX x4 type, got {x.describe()}")
    if dst.dtype not in (dtypes.float32, dtypes.bfloat16):
        raise err_unsupported_dtype(f"'{api}': dst must be float32 or bfloat16, got {dst.describe()}")
    k = stationary.shape[0]
    samep(api, stationary=k, moving=moving.shape[0])
    if k % 32 or k > min(128, row):
        raise err_invalid_instruction_argument(f"'{api}': partition size {k} must be a multiple of 32, <= {row}")
    m = int(np.prod(stationary.shape[1:], dtype=np.int64))
    n = int(np.prod(moving.shape[1:], dtype=np.int64))
    if m > 128 or m % 2:
        raise err_invalid_instruction_argument(f"'{api}': stationary free size {m} must be even and <= 128")
    fmax = 8192 if dst.dtype == dtypes.bfloat16 else 4096
    if n > fmax:
        raise err_size_of_dimension_exceed_arch_limit(f"'{api}': moving free size {n} > {fmax}")
    rows = mx_scale_rows(k)
    cycles = cost_model.matmul_cycles(m, n, False)
    with sim.instruction(name or api, "tensor", cycles) as ins:
        a = ins.read(stationary).reshape(k, m, 4)
        b = ins.read(moving).reshape(k, n, 4)
        sa = _scale_bytes(ins, stationary_scale).reshape(stationary_scale.shape[0], -1)
        sbv = _scale_bytes(ins, moving_scale).reshape(moving_scale.shape[0], -1)
        if sa.shape[0] <= rows.max() or sbv.shape[0] <= rows.max():
            raise err_invalid_instruction_argument(f"'{api}': scale tiles need partitions up to {int(rows.max())}")
        fa = np.repeat(_e8m0(sa[rows, :m]), 8, axis=0)[:, :, None]
        fb = np.repeat(_e8m0(sbv[rows, :n]), 8, axis=0)[:, :, None]
        res = np.einsum("kmq,knq->mn", a * fa, b * fb, dtype=np.float32).reshape(dst.shape)
        if accumulate is None:
            acc = dst.access().storage_access()
            init = np.asarray(acc.get(dst.storage.aux_array("psum_written", 0.0, np.bool_))).astype(bool)
            old = np.where(init, f32(ins.read(dst)), np.float32(0)) if init.any() else np.float32(0)
            ins.write(dst, old + res, exempt=True)
        else:
            ins.write(dst, res, accumulate=bool(accumulate))
        acc = dst.access().storage_access()
        acc.put(dst.storage.aux_array("psum_written", 0.0, np.bool_), np.ones(acc.shape, dtype=bool))
    sim.timeline.add_flops(2.0 * k * 4 * m * n, "float8_e4m3")
    return issue(sim)
