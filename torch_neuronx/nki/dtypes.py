"""NKI data types, their storage in the simulator, rounding, and the keep-fp32 switch.

Types (AWS "Supported Data Types", ``nki.api.shared.rst`` of the current ``nki`` reference and the
legacy ``nki.language`` page): ``float32``, ``tfloat32``, ``bfloat16``, ``float16``, ``float8_e4m3``
(Trainium's FP8 E4M3, maximum 240), ``float8_e4m3fn`` (OCP FP8, maximum 448, NeuronCore-v4),
``float8_e5m2``, ``float8_e8m0fnu`` (MX scale), the 4-packed MX types ``float8_e4m3fn_x4``,
``float8_e5m2_x4`` and ``float4_e2m1fn_x4``, ``int8/16/32``, ``uint8/16/32`` and ``bool_``.
NeuronCores have no fp64 or int64 arithmetic (``err_unsupported_dtype``).

Every scalar type is a NumPy dtype (``ml_dtypes`` for bf16 and the FP8/FP4 formats), so comparing with
AWS's spelling works both ways: ``nl.bfloat16 == "bfloat16"``. ``tfloat32`` (fp32 range, 10-bit
mantissa) and the packed types are :class:`TFloat32` / :class:`PackedDType` objects that compare equal
to their names too.

Storage. A tensor's bytes are kept in a NumPy array of its *storage dtype*:

* **precise** (the default; AWS's current simulator with ``NKI_PRECISE_FP=1``, and the hardware): the
  logical dtype itself, so a bf16 value is a real bf16 (``ml_dtypes``, round to nearest even) and
  reinterpreting bytes (``t.view(dtype)``) is exact. tf32 is stored as fp32 rounded to 10 mantissa
  bits. Packed x4 types are stored as unsigned integers of their width (4 x FP8 in a uint32, 4 x FP4 in
  a uint16); a NumPy kernel input of such a type is an unsigned-integer array of that width or a
  structured array with one field named after the type (``np.dtype([("float8_e4m3fn_x4", "<u4")])``).
* **fp32** (AWS's ``NKI_PRECISE_FP=0``; and the *legacy* simulator, whose known-issues page says "Custom
  data types like nl.float32r, nl.bfloat16, nl.float8_e4m3, and nl.float8_e5m2 simulate in fp32
  precision", ``nki_known_issues.rst``): every float type is stored as float32 without rounding, while
  byte counts and costs follow the declared types.

Which mode a run uses: :func:`set_keep_fp32` / :func:`keep_fp32` / ``TORCH_NEURONX_NKI_KEEP_FP32``
(``1`` = fp32 everywhere, ``0`` = precise everywhere) when set; otherwise the entry point's default
(legacy ``simulate_kernel`` and ``jit(mode="simulation")``: fp32; everything else: precise).

Engine math is float32 (the engine pages: "the engine automatically casts the input data to float32",
"casting results to the output dtype at no additional performance cost"): instructions read with
:func:`to_f32`, compute in NumPy float32 and write with :func:`from_f32`, which rounds once.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np

from ..runtime.environment import env_flag
from .errors import err_unsupported_dtype

__all__ = [
    "float32", "tfloat32", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
    "float8_e8m0fnu", "float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4",
    "int8", "int16", "int32", "uint8", "uint16", "uint32", "bool_",
    "TFloat32", "PackedDType", "DTypeAlias", "fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2",
    "finfo", "as_dtype", "is_float", "is_int", "is_packed", "itemsize", "dtype_name", "storage_dtype",
    "to_f32", "from_f32", "round_to", "poison_value", "set_keep_fp32", "get_keep_fp32", "keep_fp32",
    "env_keep_fp32", "promote", "output_array", "input_storage", "np_dtype",
]


class TFloat32:
    """``nl.tfloat32``: fp32 range with a 10-bit mantissa (Tensor Engine input format); stored as
    float32 rounded to 10 mantissa bits. Equal to the string ``"tfloat32"``."""

    name = "tfloat32"
    itemsize = 4
    kind = "f"

    def __repr__(self) -> str:
        return "tfloat32"

    def __eq__(self, other: object) -> bool:
        return other is self or other == "tfloat32" if isinstance(other, str) else other is self

    def __hash__(self) -> int:
        return hash("tfloat32")

    def __reduce__(self) -> str:
        return "tfloat32"


class PackedDType:
    """A 4-packed OCP MX element type (``float8_e4m3fn_x4``, ``float8_e5m2_x4``, ``float4_e2m1fn_x4``).

    One element holds ``count`` (4) values of ``elem`` (an ``ml_dtypes`` type); the element is stored as
    an unsigned integer of ``itemsize`` bytes (uint32 for 4 x FP8, uint16 for 4 x FP4), values packed
    little-endian, value 0 in the lowest bits (the byte order of ``ml_dtypes`` arrays viewed as
    integers). Used by ``nisa.quantize_mx`` and ``nisa.nc_matmul_mx`` (nki.isa pages, NeuronCore-v4).

    Attributes:
        name: AWS's name; the object compares equal to it.
        elem: NumPy dtype of one packed value.
        count: values per element (4).
        itemsize: bytes per element.
    """

    kind = "V"

    def __init__(self, name: str, elem: Any, count: int, storage: Any):
        self.name = name
        self.elem = np.dtype(elem)
        self.count = count
        self.storage = np.dtype(storage)
        self.itemsize = self.storage.itemsize
        self.bits = 8 * self.itemsize // count

    def __repr__(self) -> str:
        return self.name

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of host arrays of this type (``np.zeros(shape, dtype=nl.float8_e4m3fn_x4)``):
        one unsigned field of the packed width, named after the type; :func:`as_dtype` maps it back."""
        return np.dtype([(self.name, self.storage)])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self.name
        if isinstance(other, np.dtype):
            return other == self.dtype
        return other is self

    def __hash__(self) -> int:
        return hash(self.name)

    def unpack(self, raw: np.ndarray) -> np.ndarray:
        """float32 values, shape ``raw.shape + (count,)``, of packed storage ``raw``."""
        raw = np.ascontiguousarray(raw, dtype=self.storage)
        if self.bits == 8:
            vals = raw.view(np.uint8).reshape(raw.shape + (self.count,)).view(self.elem)
        else:   # 4-bit values, two per byte, low nibble first
            b = raw.view(np.uint8).reshape(raw.shape + (self.count // 2,))
            nib = np.stack([b & 0xF, b >> 4], axis=-1).reshape(raw.shape + (self.count,))
            vals = nib.astype(np.uint8).view(self.elem) if self.elem.itemsize == 1 else nib
        return vals.astype(np.float32)

    def pack(self, values: np.ndarray) -> np.ndarray:
        """Packed storage for float32 ``values`` of shape ``(..., count)``, each rounded to ``elem``."""
        v = np.asarray(values, dtype=np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            e = v.astype(self.elem)
        if self.bits == 8:
            return np.ascontiguousarray(e).view(np.uint8).reshape(v.shape[:-1] + (self.itemsize,)) \
                .view(self.storage).reshape(v.shape[:-1])
        nib = np.ascontiguousarray(e).view(np.uint8) & 0xF
        nib = nib.reshape(v.shape[:-1] + (self.count // 2, 2))
        b = (nib[..., 0] | (nib[..., 1] << 4)).astype(np.uint8)
        return np.ascontiguousarray(b).view(self.storage).reshape(v.shape[:-1])


class DTypeAlias:
    """``nl.fp32`` / ``nl.bf16`` ...: a dtype alias with ``.min``, ``.max``, ``.eps`` and ``.tiny``
    (AWS's kernels write ``nl.fp32.min`` as a fill value, e.g. ``nl.full(..., fill_value=nl.fp32.min)``).
    Accepted wherever a dtype is; compares equal to its dtype."""

    def __init__(self, dtype: Any):
        self.dtype = dtype
        fi = finfo(dtype)
        self.min = float(fi.min)
        self.max = float(fi.max)
        self.eps = float(fi.eps)
        self.tiny = float(fi.tiny)
        self.name = dtype_name(dtype)

    def __repr__(self) -> str:
        return f"DTypeAlias({self.name})"

    def __eq__(self, other: object) -> bool:
        return self.dtype == (other.dtype if isinstance(other, DTypeAlias) else other)

    def __hash__(self) -> int:
        return hash(self.name)


float32 = np.dtype(np.float32)
tfloat32 = TFloat32()
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float16 = np.dtype(np.float16)
# Trainium's FP8 E4M3 is IEEE-style with maximum 240 (NeuronCore-v3 arch page); ml_dtypes.float8_e4m3.
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = np.dtype(ml_dtypes.float4_e2m1fn)
float8_e4m3fn_x4 = PackedDType("float8_e4m3fn_x4", ml_dtypes.float8_e4m3fn, 4, np.uint32)
float8_e5m2_x4 = PackedDType("float8_e5m2_x4", ml_dtypes.float8_e5m2, 4, np.uint32)
float4_e2m1fn_x4 = PackedDType("float4_e2m1fn_x4", ml_dtypes.float4_e2m1fn, 4, np.uint16)
int8, int16, int32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
uint8, uint16, uint32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)

_FLOATS = (float32, bfloat16, float16, float8_e4m3, float8_e4m3fn, float8_e5m2, float8_e8m0fnu)
_INTS = (int8, int16, int32, uint8, uint16, uint32)
_SUPPORTED = _FLOATS + _INTS + (bool_,)
_EXTRA_FLOATS = {np.dtype(ml_dtypes.float8_e4m3fnuz), np.dtype(ml_dtypes.float8_e5m2fnuz), float4_e2m1fn}
_PACKED = {d.name: d for d in (float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4)}
_NAMES = {d.name: d for d in _SUPPORTED}
_NAMES.update({"tfloat32": tfloat32, "bool": bool_, "fp32": float32, "bf16": bfloat16, "fp16": float16})
_NAMES.update(_PACKED)


def finfo(dtype: Any) -> Any:
    """``nl.finfo(dtype)``: machine limits (``.min``, ``.max``, ``.eps``, ``.tiny``, ``.bits``) of a float
    NKI dtype (``ml_dtypes.finfo``; tfloat32 has fp32's range).

    Raises:
        err_unsupported_dtype: for a non-float or unknown dtype.
    """
    d = as_dtype(dtype)
    if d is tfloat32:
        return np.finfo(np.float32)
    if isinstance(d, PackedDType) or not is_float(d):
        raise err_unsupported_dtype(f"finfo({d!r}): not a scalar float dtype")
    return ml_dtypes.finfo(d)



# --- the keep-fp32 switch ---------------------------------------------------------------------------


def env_keep_fp32() -> bool | None:
    """``TORCH_NEURONX_NKI_KEEP_FP32`` read now: True (``1``/``true``/``yes``/``on``), False
    (``0``/``false``/``no``/``off``), or None when unset, empty or ``none`` (then each entry point's
    default applies). Any other value warns once (``UserWarning``) and reads as unset."""
    if os.environ.get("TORCH_NEURONX_NKI_KEEP_FP32", "").strip().lower() == "none":
        return None
    return env_flag("TORCH_NEURONX_NKI_KEEP_FP32", None)


_keep_fp32: bool | None = None     # set_keep_fp32 override; None: environment / entry-point default


def set_keep_fp32(flag: bool | None) -> None:
    """Store every float in fp32 without rounding (True), round to the declared types (False), or
    follow ``TORCH_NEURONX_NKI_KEEP_FP32`` and each entry point's default (None)."""
    global _keep_fp32
    _keep_fp32 = None if flag is None else bool(flag)


def get_keep_fp32(default: bool = False) -> bool:
    """Whether a run starting now keeps fp32: the :func:`set_keep_fp32` override, else
    ``TORCH_NEURONX_NKI_KEEP_FP32``, else AWS's ``NKI_PRECISE_FP`` (``0`` = keep fp32; AWS's simulator
    guide), else ``default`` (the entry point's: True for the legacy simulator)."""
    if _keep_fp32 is not None:
        return _keep_fp32
    env = env_keep_fp32()
    if env is not None:
        return env
    precise = os.environ.get("NKI_PRECISE_FP", "").strip().lower()
    if precise in ("0", "false", "no", "off"):
        return True
    if precise in ("1", "true", "yes", "on"):
        return False
    return default


@contextlib.contextmanager
def keep_fp32(flag: bool = True) -> Iterator[None]:
    """Context manager form of :func:`set_keep_fp32`."""
    old = _keep_fp32
    set_keep_fp32(flag)
    try:
        yield
    finally:
        set_keep_fp32(old)


# --- conversions -------------------------------------------------------------------------------------

def as_dtype(d: Any, where: str = "dtype") -> Any:
    """Canonical NKI dtype for ``d``: a NumPy dtype/type, an ``nl`` dtype or alias, or AWS's name.

    Raises:
        err_unsupported_dtype: for float64, int64 and other types NeuronCores lack.
    """
    if d is None:
        return None
    if isinstance(d, (TFloat32, PackedDType)):
        return d
    if isinstance(d, DTypeAlias):
        return d.dtype
    if isinstance(d, str):
        if d in _NAMES:
            return _NAMES[d]
    try:
        dt = np.dtype(d)
    except TypeError:
        raise err_unsupported_dtype(f"{where}: {d!r} is not a data type") from None
    if dt in _SUPPORTED or dt in _EXTRA_FLOATS:
        return dt
    if dt.names is not None and len(dt.names) == 1 and dt.names[0] in _PACKED \
            and dt.itemsize == _PACKED[dt.names[0]].itemsize:
        return _PACKED[dt.names[0]]          # NumPy x4 data: one unsigned field named after the MX type
    raise err_unsupported_dtype(f"{where}: {dt} is not supported on NeuronCores (supported: fp32, tf32, bf16, "
                                "fp16, fp8 e4m3/e4m3fn/e5m2/e8m0, the MX x4 types, int8-32, uint8-32, bool)")


def is_float(d: Any) -> bool:
    """True for every scalar floating dtype (bf16, fp8, tf32 included; packed types excluded)."""
    d = as_dtype(d)
    return d is tfloat32 or d in _FLOATS or d in _EXTRA_FLOATS


def is_int(d: Any) -> bool:
    """True for the integer dtypes (bool excluded)."""
    return as_dtype(d) in _INTS


def is_packed(d: Any) -> bool:
    """True for the 4-packed MX types."""
    return isinstance(as_dtype(d), PackedDType)


def itemsize(d: Any) -> int:
    """Bytes per element of dtype ``d`` (4 for tfloat32, 4 or 2 for the packed types)."""
    return int(as_dtype(d).itemsize)


def dtype_name(d: Any) -> str:
    """AWS's name of dtype ``d`` ('bfloat16', 'float32', 'tfloat32', 'float8_e4m3fn_x4', ...)."""
    return str(as_dtype(d).name)


def np_dtype(d: Any) -> np.dtype:
    """The NumPy dtype holding one element of ``d`` in precise storage (float32 for tfloat32, the
    unsigned integer of the packed width for the x4 types)."""
    d = as_dtype(d)
    if d is tfloat32:
        return float32
    if isinstance(d, PackedDType):
        return d.storage
    return d


def storage_dtype(d: Any, keep: bool) -> np.dtype:
    """NumPy dtype the simulator stores ``d`` in: float32 for every float in fp32 mode (``keep``),
    else :func:`np_dtype`."""
    if keep and is_float(d):
        return float32
    return np_dtype(d)


def _round_tf32(x: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    lsb = (bits >> 13) & 1                        # round to nearest even on the 13 dropped bits
    rounded = (bits + 0x0FFF + lsb) & np.uint32(0xFFFFE000)
    out = np.where(np.isfinite(x), rounded, bits).astype(np.uint32)
    return out.view(np.float32)


def to_f32(values: np.ndarray, d: Any) -> np.ndarray:
    """float32 values (engine input) of storage ``values`` of logical dtype ``d``; the packed types
    give shape ``values.shape + (4,)``."""
    d = as_dtype(d)
    if isinstance(d, PackedDType) and values.dtype == d.storage:
        return d.unpack(values)
    return np.asarray(values).astype(np.float32, copy=False)


def from_f32(values: Any, d: Any, keep: bool) -> np.ndarray:
    """Storage array of dtype ``d`` for float32 (or integer) ``values``: one rounding to ``d``
    (round to nearest even; integers: toward zero, NaN -> 0, saturating; bool: ``!= 0``).
    In fp32 mode (``keep``) floats stay float32 unrounded within the type's range; beyond it they
    overflow as the cast does (inf, or NaN for types without inf)."""
    d = as_dtype(d)
    v = np.asarray(values)
    if isinstance(d, PackedDType):
        if v.dtype == d.storage:
            return v
        return d.pack(v)
    if is_float(d):
        v32 = v.astype(np.float32, copy=False)
        if d == float32 or d is tfloat32 and keep:
            return v32
        if keep:
            # fp32 *precision*, the declared type's *range*: a value beyond it overflows as the hardware's
            # downcast does (AWS's range_select page: FP32_MIN written to a BF16/FP16/FP8 tile "will become
            # -INF"; AWS's range_select test expects it from the simulator)
            with np.errstate(invalid="ignore"):
                big = np.abs(v32) > float(finfo(d).max)
            if big.any():
                v32 = v32.copy()
                with np.errstate(over="ignore", invalid="ignore"):
                    v32[big] = v32[big].astype(d).astype(np.float32)
            return v32
        if d is tfloat32:
            return _round_tf32(v32)
        with np.errstate(over="ignore", invalid="ignore"):
            return v32.astype(d)
    if d == bool_:
        return v != 0
    if v.dtype.kind in "iub":
        if v.dtype == d:
            return v
        info = np.iinfo(d)
        return np.clip(v.astype(np.int64), info.min, info.max).astype(d)
    info = np.iinfo(d)
    with np.errstate(invalid="ignore"):
        # toward zero, as AWS's simulator (NumPy casts) and its tested kernels have it: the nki-samples
        # nearest-neighbour resize computes floor(pos / w) as an int32 division and relies on it
        w = np.nan_to_num(np.trunc(v.astype(np.float64)), nan=0.0, posinf=info.max, neginf=info.min)
        w = np.clip(w, info.min, info.max)
    return w.astype(d)


def round_to(values: Any, d: Any) -> np.ndarray:
    """float32 array of ``values`` rounded to dtype ``d`` (precise rounding whatever the mode; for
    host-side use and tests). Integers and bool keep their own dtype."""
    d = as_dtype(d)
    if is_float(d):
        return to_f32(from_f32(values, d, False), d)
    return from_f32(values, d, False)


def poison_value(d: Any) -> Any:
    """Value a fresh allocation is filled with: NaN for floats, 4 for integers and packed types, so
    that reads of memory no instruction wrote show up in the results (AWS: "Unwritten output tensor
    will have garbage data", ``nki_known_issues.rst``)."""
    return np.float32(np.nan) if is_float(d) else 4


def promote(*dts: Any) -> Any:
    """Result dtype of an ``nl`` op without ``dtype=``: the highest-precision operand type (legacy
    ``nki.language`` page, "NKI type promotion": bf16 with fp16 gives fp32; floats win over ints)."""
    ds = tuple(as_dtype(d) for d in dts if d is not None)
    if not ds:
        return float32
    floats = [d for d in ds if is_float(d)]
    if not floats:
        return max(ds, key=lambda d: (d.itemsize, d.kind == "i"))
    if float32 in floats or tfloat32 in floats:
        return float32
    kinds = set(floats)
    if len(kinds) == 1:
        return floats[0]
    if bfloat16 in kinds and float16 in kinds:
        return float32
    return max(floats, key=lambda d: d.itemsize)


def input_storage(arr: np.ndarray, where: str, keep: bool) -> tuple[Any, np.ndarray]:
    """(logical dtype, flat storage copy) of a kernel input NumPy array.

    Raises:
        err_unsupported_dtype: for float64, int64 and other types NeuronCores lack.
    """
    dt = as_dtype(arr.dtype, where)
    if isinstance(dt, PackedDType) and arr.dtype.names is not None:
        arr = np.ascontiguousarray(arr).view(dt.storage)
    return dt, np.array(arr, dtype=storage_dtype(dt, keep), copy=True).reshape(-1)


def output_array(storage: np.ndarray, d: Any, keep: bool) -> np.ndarray:
    """NumPy array handed back to the caller for storage of logical dtype ``d``: the dtype itself
    (fp32 mode: float types come back as float32, unrounded; tfloat32 always as float32)."""
    d = as_dtype(d)
    if is_float(d) and (keep or d is tfloat32):
        return np.array(storage, dtype=np.float32, copy=True)
    return np.array(storage, dtype=np_dtype(d), copy=True)


# dtype aliases with limits (nl.fp32.min ...), defined once as_dtype exists
fp32 = DTypeAlias(float32)
tf32 = DTypeAlias(tfloat32)
bf16 = DTypeAlias(bfloat16)
fp16 = DTypeAlias(float16)
fp8_e4m3 = DTypeAlias(float8_e4m3)
fp8_e5m2 = DTypeAlias(float8_e5m2)
