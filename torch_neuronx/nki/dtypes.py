"""NKI data types, real low-precision rounding and the keep-fp32 switch.

Supported types (AWS "Supported Data Types" page of nki.language): float32, tfloat32,
bfloat16, float16, float8_e4m3, float8_e5m2, int8/16/32, uint8/16/32, bool. NeuronCores have no
fp64 and no int64 arithmetic.

Storage model of the simulator: every float tensor is stored as a float32 NumPy array whose values
are already rounded to the tensor's logical dtype (bf16 / fp16 / fp8 through ``ml_dtypes``, tf32 by
rounding the mantissa to 10 bits). All engine math is done in float32, as the NeuronCore engines do
("the engine automatically casts the input data to float32", nki.isa pages). Integer and bool
tensors are stored in their own dtype.

The keep-fp32 switch (``set_keep_fp32(True)``, the ``keep_fp32()`` context manager, or the
environment variable ``TORCH_NEURONX_NKI_KEEP_FP32=1``) turns the rounding off: values keep full
float32 precision while dtypes, byte counts and costs still follow the declared low-precision types.
Kernel outputs are then returned as float32 arrays.
"""
from __future__ import annotations

import contextlib
import os

import ml_dtypes
import numpy as np

from .errors import err_unsupported_dtype

__all__ = [
    "float32", "tfloat32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2",
    "int8", "int16", "int32", "uint8", "uint16", "uint32", "bool_",
    "as_dtype", "is_float", "itemsize", "dtype_name", "round_to", "poison_value",
    "set_keep_fp32", "get_keep_fp32", "keep_fp32", "promote", "output_array", "input_storage",
]


class _TFloat32:
    """Marker dtype for tfloat32 (fp32 range, 10-bit mantissa); stored as float32."""

    name = "tfloat32"
    itemsize = 4
    kind = "f"

    def __repr__(self):
        return "tfloat32"

    def __reduce__(self):
        return "tfloat32"


float32 = np.dtype(np.float32)
tfloat32 = _TFloat32()
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float16 = np.dtype(np.float16)
# Trainium's FP8 E4M3 has max 240 (IEEE-style, NeuronCore-v3 arch page); ml_dtypes.float8_e4m3 matches.
float8_e4m3 = np.dtype(getattr(ml_dtypes, "float8_e4m3", ml_dtypes.float8_e4m3fn))
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
int8, int16, int32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
uint8, uint16, uint32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)

_FLOATS = (float32, bfloat16, float16, float8_e4m3, float8_e5m2)
_LOWP = (bfloat16, float16, float8_e4m3, float8_e5m2)
_SUPPORTED = _FLOATS + (int8, int16, int32, uint8, uint16, uint32, bool_)
_EXTRA_FLOATS = {np.dtype(getattr(ml_dtypes, n)) for n in ("float8_e4m3fn", "float8_e4m3fnuz",
                                                            "float8_e5m2fnuz") if hasattr(ml_dtypes, n)}

_keep_fp32 = os.environ.get("TORCH_NEURONX_NKI_KEEP_FP32", "0") not in ("", "0", "false", "False")


def set_keep_fp32(flag: bool) -> None:
    """Globally keep all float math and storage in fp32 (no bf16/fp16/fp8/tf32 rounding)."""
    global _keep_fp32
    _keep_fp32 = bool(flag)


def get_keep_fp32() -> bool:
    """True when low-precision rounding is switched off."""
    return _keep_fp32


@contextlib.contextmanager
def keep_fp32(flag: bool = True):
    """Context manager form of :func:`set_keep_fp32`."""
    old = _keep_fp32
    set_keep_fp32(flag)
    try:
        yield
    finally:
        set_keep_fp32(old)


def as_dtype(d, where: str = "dtype"):
    """Canonical NKI dtype for ``d`` (a NumPy dtype/type, an ``nl`` dtype, or a name).

    Raises ``err_unsupported_dtype`` for float64, int64 and other types NeuronCores lack.
    """
    if d is None:
        return None
    if d is tfloat32 or (isinstance(d, str) and d == "tfloat32"):
        return tfloat32
    try:
        dt = np.dtype(d)
    except TypeError:
        raise err_unsupported_dtype(f"{where}: {d!r} is not a data type") from None
    if dt in _SUPPORTED:
        return dt
    if dt in _EXTRA_FLOATS:
        return dt
    raise err_unsupported_dtype(f"{where}: {dt} is not supported on NeuronCores "
                                f"(supported: fp32, tf32, bf16, fp16, fp8 e4m3/e5m2, int8-32, uint8-32, bool)")


def is_float(d) -> bool:
    """True for every floating dtype, including bf16, fp8 and tf32."""
    d = as_dtype(d)
    return d is tfloat32 or d in _FLOATS or d in _EXTRA_FLOATS


def itemsize(d) -> int:
    """Bytes per element of dtype ``d``."""
    d = as_dtype(d)
    return d.itemsize


def dtype_name(d) -> str:
    """Short name ('bfloat16', 'float32', 'tfloat32', ...)."""
    d = as_dtype(d)
    return d.name


def storage_dtype(d):
    """NumPy dtype the simulator stores ``d`` in: float32 for floats, ``d`` itself otherwise."""
    return np.dtype(np.float32) if is_float(d) else as_dtype(d)


def _round_tf32(x: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    # round to nearest even on the 13 dropped mantissa bits
    lsb = (bits >> 13) & 1
    rounded = (bits + 0x0FFF + lsb) & np.uint32(0xFFFFE000)
    finite = np.isfinite(x)
    out = np.where(finite, rounded, bits).astype(np.uint32)
    return out.view(np.float32)


def round_to(values, d) -> np.ndarray:
    """Return ``values`` (any numeric array) converted to the storage of dtype ``d``.

    Floats: float32 array rounded to ``d`` (round-to-nearest-even via ml_dtypes) unless keep-fp32 is on.
    Integers: rounded to nearest and wrapped into the type's range like a hardware cast would saturate
    (we saturate). Bool: ``values != 0``.
    """
    d = as_dtype(d)
    v = np.asarray(values)
    if is_float(d):
        v32 = v.astype(np.float32, copy=False)
        if _keep_fp32 or d == float32:
            return v32
        if d is tfloat32:
            return _round_tf32(v32)
        with np.errstate(over="ignore", invalid="ignore"):
            return v32.astype(d).astype(np.float32)
    if d == bool_:
        return v != 0
    info = np.iinfo(d)
    if v.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            v = np.nan_to_num(np.rint(v), nan=0.0, posinf=info.max, neginf=info.min)
            v = np.clip(v, info.min, info.max)
    return v.astype(d)


def poison_value(d):
    """Value a fresh allocation is filled with: NaN for floats, 4 for integers, so that reads of
    memory no instruction wrote show up in the results."""
    return np.float32(np.nan) if is_float(d) else 4


def promote(*dts):
    """Result dtype of an ``nl`` op without ``dtype=``: the highest-precision operand type."""
    dts = tuple(as_dtype(d) for d in dts if d is not None)
    if not dts:
        return float32
    floats = [d for d in dts if is_float(d)]
    if not floats:
        return max(dts, key=lambda d: (d.itemsize, d.kind == "i"))
    if float32 in floats or tfloat32 in floats:
        return float32
    kinds = set(floats)
    if len(kinds) == 1:
        return floats[0]
    if bfloat16 in kinds and float16 in kinds:
        return float32
    return max(floats, key=lambda d: d.itemsize)


def input_storage(arr: np.ndarray, where: str):
    """(logical dtype, storage array) of a kernel input NumPy array; rejects fp64/int64."""
    dt = as_dtype(arr.dtype, where)
    return dt, np.array(arr, dtype=storage_dtype(dt), copy=True)


def output_array(storage: np.ndarray, d) -> np.ndarray:
    """NumPy array handed back to the caller for a tensor of logical dtype ``d``."""
    d = as_dtype(d)
    if is_float(d):
        if _keep_fp32 or d is tfloat32:
            return storage.astype(np.float32, copy=True)
        with np.errstate(over="ignore", invalid="ignore"):
            return storage.astype(d)
    return storage.astype(d, copy=True)
