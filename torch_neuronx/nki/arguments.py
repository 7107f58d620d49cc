"""Type checks of the public NKI API's arguments, by parameter name, before an API runs.

AWS's API pages give each parameter name one meaning across ``nki.language`` and ``nki.isa`` (both front
ends): ``x`` / ``y`` are "a tile or a scalar value", ``data`` / ``src`` / ``dst`` / ``stationary`` /
``moving`` are tiles, ``dtype`` is a data type, ``mask`` "a compile-time constant predicate", ``axis``
an integer or a tuple of integers (``aws-neuron/aws-neuron-sdk@cca3784:general/nki/api/nki/language/__init__.py``,
``@81ce03a:nki/api/nki/isa/__init__.py``). A value of a type no such parameter ever takes (a string, a
list or dict where a tile goes, a float axis, a tile as a mask) would otherwise reach NumPy or an
attribute access inside the simulator and escape as Python's own ``ValueError`` / ``AttributeError``.
:func:`install` wraps each public function of a front-end module so that such a value raises the
NKI error instead, naming the API, the parameter and what it takes:

* a wrong-typed tile operand, axis, shape, size or name: ``err_invalid_instruction_argument``;
* a mask that is not a predicate of index expressions (a tile, a number, a string):
  ``err_unsupported_expression_in_mask`` (AWS's errors page: "NKI mask expressions must be affine
  expressions of static loop indices"; "tensor elements ... are not supported in mask predicates");
* a ``dtype`` that is not a data type: ``err_unsupported_dtype``.

Values of the right kind pass unchanged; the API itself checks their shapes, buffers and ranges.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import dtypes
from .errors import (NKIError, err_invalid_instruction_argument, err_unsupported_dtype,
                     err_unsupported_expression_in_mask)
from .indexing import IndexExpr, Mask
from .tile import NkiTensor

__all__ = ["install", "check_call", "TILE_PARAMS", "INT_PARAMS"]

#: parameters that take a tile (or, for the APIs whose pages say so, a scalar number)
TILE_PARAMS = frozenset({
    "x", "y", "data", "data0", "data1", "data2", "src", "dst", "stationary", "moving", "on_true_tile",
    "predicate", "vals", "condition", "operand0", "operand1", "scale", "bias", "fill_value",
    "on_false_value", "imm", "imm0", "imm1", "src_buffer", "in_tensor", "rate", "prob", "initial", "on_true",
    "on_false"})
#: parameters that take an integer (a Python / NumPy int, an integral float, or a loop register)
INT_PARAMS = frozenset({"n", "size", "num_elem_per_idx", "channel_multiplier", "offset"})
_NON_NEGATIVE = frozenset({"n", "size", "num_elem_per_idx"})
#: annotations of our signatures that mean "a tile, never a number" (``x: NkiTensor``)
_TILE_ONLY = frozenset({"NkiTensor", "NkiTensor | None"})

#: (API, parameter) pairs whose API checks the argument itself with a more specific error
_OWN_CHECKS = frozenset({("program_id", "axis"), ("num_programs", "axis")})

_NEVER_A_TILE = (str, bytes, dict, set, frozenset, list, tuple, complex)


def _kind(v: Any) -> str:
    return type(v).__name__


def _check_tile(api: str, name: str, v: Any, required: bool, tile_only: bool) -> None:
    if v is None:
        if required:
            raise err_invalid_instruction_argument(f"{api}: '{name}' is None; it takes a tile")
        return
    if tile_only and not isinstance(v, (NkiTensor, IndexExpr, Mask)) and \
            isinstance(v, (int, float, complex, np.number, np.bool_, *_NEVER_A_TILE)):
        raise err_invalid_instruction_argument(
            f"{api}: '{name}' is {v!r} ({_kind(v)}); it takes a tile (nl.load / nl.ndarray / an nl or nisa "
            "result), not a number")
    if isinstance(v, _NEVER_A_TILE) or callable(v) and not hasattr(v, "shape"):
        raise err_invalid_instruction_argument(
            f"{api}: '{name}' is {v!r} ({_kind(v)}); it takes a tile (nl.load / nl.ndarray) or, where the "
            "API's page allows one, a scalar number")


def _check_axis(api: str, v: Any, required: bool) -> None:
    if v is None:
        if required:
            raise err_invalid_instruction_argument(f"{api}: axis is None; it takes an integer or a tuple of integers")
        return
    items = list(v) if isinstance(v, (tuple, list)) else [v]
    for a in items:
        ok = isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)) or \
            isinstance(a, (float, np.floating)) and float(a).is_integer()
        if not ok:
            raise err_invalid_instruction_argument(
                f"{api}: axis {v!r} is not an integer or a tuple of integers")


def _check_int(api: str, name: str, v: Any, required: bool) -> None:
    if v is None:
        if required:
            raise err_invalid_instruction_argument(f"{api}: '{name}' is None; it takes an integer")
        return
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) or \
            isinstance(v, (float, np.floating)) and float(v).is_integer():
        if name in _NON_NEGATIVE and v < 0:
            raise err_invalid_instruction_argument(f"{api}: '{name}' is {v!r}; it takes a count >= 0")
        return
    if isinstance(v, (str, bytes, dict, set, list, tuple, complex, float, np.floating, bool)):
        raise err_invalid_instruction_argument(f"{api}: '{name}' is {v!r} ({_kind(v)}); it takes an integer")


def _check_shape(api: str, v: Any, required: bool) -> None:
    if v is None:
        if required:
            raise err_invalid_instruction_argument(f"{api}: shape is None; it takes a tuple of integers")
        return
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return
    if isinstance(v, (tuple, list)):
        for d in v:
            if isinstance(d, (str, bytes, dict, set, list, tuple, complex, type(None))):
                raise err_invalid_instruction_argument(
                    f"{api}: shape {v!r} has a dimension {d!r} that is not a non-negative integer")
        return
    if isinstance(v, (str, bytes, dict, set, float, complex, np.floating)):
        raise err_invalid_instruction_argument(f"{api}: shape {v!r} ({_kind(v)}) is not a tuple of integers")


def _check_mask(api: str, v: Any) -> None:
    if v is None or isinstance(v, (Mask, bool, np.bool_)):
        return
    if isinstance(v, np.ndarray) and v.dtype == np.bool_:
        return
    raise err_unsupported_expression_in_mask(
        f"{api}: mask {v!r} ({_kind(v)}) is not a predicate of index expressions; build it by comparing "
        "nl.arange / nl.mgrid expressions (ix < n) and combine with & | ~")


def _check_dtype(api: str, v: Any) -> None:
    if v is None:
        return
    try:
        dtypes.as_dtype(v)
    except NKIError:
        return            # a real type the API itself accepts or refuses (float64, ...)
    except Exception:  # noqa: BLE001 - any failure to read it as a dtype is the user's argument
        raise err_unsupported_dtype(f"{api}: dtype {v!r} ({_kind(v)}) is not a data type (nl.float32, "
                                    "nl.bfloat16, np.int32, ...)") from None


def _check_name(api: str, v: Any) -> None:
    if v is not None and not isinstance(v, str):
        raise err_invalid_instruction_argument(f"{api}: name {v!r} ({_kind(v)}) is not a string")


def check_call(api: str, params: dict[str, inspect.Parameter], bound: dict[str, Any]) -> None:
    """Check the arguments ``bound`` (parameter name -> value, the ones the caller gave) of ``api``.

    Raises:
        err_invalid_instruction_argument, err_unsupported_expression_in_mask, err_unsupported_dtype:
            a value of a type the parameter never takes (module docstring).
    """
    short = api.rsplit(".", 1)[-1]
    for name, v in bound.items():
        if isinstance(v, IndexExpr) and name not in ("x", "y", "expr") or (short, name) in _OWN_CHECKS:
            continue
        p = params.get(name)
        required = p is not None and p.default is inspect.Parameter.empty
        tile_only = p is not None and str(p.annotation) in _TILE_ONLY
        if name in TILE_PARAMS or tile_only:
            _check_tile(api, name, v, required, tile_only)
        elif name in ("axis", "axes"):
            _check_axis(api, v, required)
        elif name in INT_PARAMS:
            _check_int(api, name, v, required)
        elif name == "shape":
            _check_shape(api, v, required)
        elif name == "mask":
            _check_mask(api, v)
        elif name in ("dtype", "compute_dtype"):
            _check_dtype(api, v)
        elif name == "name":
            _check_name(api, v)


def _wrap(api: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    sig = inspect.signature(fn)
    params = dict(sig.parameters)
    positional = [p.name for p in params.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        bound = dict(zip(positional, args, strict=False))   # extra positionals: *args
        bound.update((k, v) for k, v in kwargs.items() if k in params)
        check_call(api, params, bound)
        return fn(*args, **kwargs)

    checked.__nki_checked__ = True  # type: ignore[attr-defined]
    return checked


def install(namespace: dict[str, Any], names: Iterable[str], prefix: str,
            skip: Iterable[str] = ()) -> None:
    """Replace each plain function ``namespace[name]`` (``name`` in ``names``, not in ``skip``) by a
    wrapper that runs :func:`check_call` first; ``prefix`` names the API in messages (``"nl"``,
    ``"nisa"``)."""
    skipped = set(skip)
    for name in names:
        fn = namespace.get(name)
        if name in skipped or not inspect.isfunction(fn) or getattr(fn, "__nki_checked__", False):
            continue
        namespace[name] = _wrap(f"{prefix}.{name}", fn)
