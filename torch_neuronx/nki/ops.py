"""Operator tables: ALU operators, activation functions and reductions, computed in float32.

Instructions accept an operator as an ``nl`` function or constant (``nl.exp``, ``nl.add``,
``nl.bypass``), a NumPy ufunc (``np.exp``, ``np.add``, as AWS's tutorials pass them) or a name.
:func:`op_name` maps all three to one name; the tables map names to NumPy implementations (a registry
as data, not branches).

Sources: the "Supported Math Operators for NKI ISA" table (bitvec vs arithmetic operators, and which
may be reduction operators) and "Supported Activation Functions for NKI ISA" table of AWS's
``nki.api.shared.rst``. Arithmetic operators cast their inputs to float32; bitvec operators work on
the integer bit patterns (:func:`is_bitvec`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import err_invalid_instruction_argument

__all__ = ["UNARY", "BINARY", "REDUCE", "BITVEC", "REDUCE_IDENTITY", "op_name", "unary", "binary",
           "reduce_fn", "is_bitvec", "is_compare", "reduce_identity"]


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26, |error| < 1.5e-7: enough for float32 simulation.
    x = np.asarray(x, dtype=np.float32)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))).astype(np.float32)


def _gelu_dx(x: np.ndarray) -> np.ndarray:
    pdf = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
    return (0.5 * (1.0 + _erf(x / np.sqrt(2.0))) + x * pdf).astype(np.float32)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))).astype(np.float32)


def _gelu_sigmoid(x: np.ndarray) -> np.ndarray:
    return (x * _sigmoid(1.702 * x)).astype(np.float32)


def _gelu_sigmoid_dx(x: np.ndarray) -> np.ndarray:
    s = _sigmoid(1.702 * x)
    return (s + 1.702 * x * s * (1.0 - s)).astype(np.float32)


def _silu_dx(x: np.ndarray) -> np.ndarray:
    s = _sigmoid(x)
    return (s * (1.0 + x * (1.0 - s))).astype(np.float32)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x).astype(np.float32)


def _as_int(a: Any) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind == "f":
        a = np.rint(np.nan_to_num(a))
    return a.astype(np.int64)


def _bits(op: Callable) -> Callable:
    def run(a: Any, b: Any) -> np.ndarray:
        return op(_as_int(a), _as_int(b))
    return run


UNARY: dict[str, Callable[..., Any]] = {
    "copy": lambda x: x, "identity": lambda x: x, "bypass": lambda x: x,
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "reciprocal": lambda x: 1.0 / x,
    "square": np.square, "tanh": np.tanh, "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, 0.0), "gelu": _gelu, "gelu_dx": _gelu_dx,
    "gelu_apprx_tanh": _gelu_tanh, "gelu_apprx_sigmoid": _gelu_sigmoid,
    "gelu_apprx_sigmoid_dx": _gelu_sigmoid_dx,
    "silu": lambda x: x * _sigmoid(x), "silu_dx": _silu_dx, "abs": np.abs, "negative": np.negative,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arctan": np.arctan, "erf": _erf,
    "erf_dx": lambda x: (2.0 / np.sqrt(np.pi)) * np.exp(-x * x),
    "softplus": _softplus, "sign": np.sign, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "logical_not": lambda x: (x == 0).astype(np.float32),
    "mish": lambda x: x * np.tanh(_softplus(x)),
}

BINARY: dict[str, Callable[..., Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal,
    "logical_and": lambda a, b: np.logical_and(a != 0, b != 0),
    "logical_or": lambda a, b: np.logical_or(a != 0, b != 0),
    "logical_xor": lambda a, b: np.logical_xor(a != 0, b != 0),
    "abs_max": lambda a, b: np.where(np.abs(a) > np.abs(b), a, b),
    "abs_min": lambda a, b: np.where(np.abs(a) < np.abs(b), a, b),
    "bitwise_and": _bits(np.bitwise_and), "bitwise_or": _bits(np.bitwise_or),
    "bitwise_xor": _bits(np.bitwise_xor),
    "left_shift": _bits(np.left_shift), "right_shift": _bits(np.right_shift),
    "mod": np.mod, "fmod": np.fmod, "bypass": lambda a, b: a,
    "average": lambda a, b: (a + b) * 0.5,
}

BITVEC = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"})
_COMPARE = frozenset({"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"})

# reduction operators ("Legal Reduction op" column), with their identities
REDUCE: dict[str, Callable[..., Any]] = {
    "add": np.sum, "subtract": np.sum, "maximum": np.max, "minimum": np.min, "multiply": np.prod,
    "logical_and": np.all, "logical_or": np.any, "logical_xor": lambda x, axis, keepdims: np.sum(
        x != 0, axis=axis, keepdims=keepdims) % 2,
    "bitwise_and": lambda x, axis, keepdims: np.bitwise_and.reduce(_as_int(x), axis=axis, keepdims=keepdims),
    "bitwise_or": lambda x, axis, keepdims: np.bitwise_or.reduce(_as_int(x), axis=axis, keepdims=keepdims),
    "bitwise_xor": lambda x, axis, keepdims: np.bitwise_xor.reduce(_as_int(x), axis=axis, keepdims=keepdims),
    "average": np.mean, "abs_max": lambda x, axis, keepdims: np.max(np.abs(x), axis=axis, keepdims=keepdims),
}
REDUCE_IDENTITY: dict[str, float] = {"add": 0.0, "subtract": 0.0, "maximum": -np.inf, "minimum": np.inf,
                                     "multiply": 1.0, "logical_and": 1.0, "logical_or": 0.0,
                                     "logical_xor": 0.0, "bitwise_and": -1.0, "bitwise_or": 0.0,
                                     "bitwise_xor": 0.0, "average": 0.0, "abs_max": 0.0}

_UFUNC_ALIASES = {
    "true_divide": "divide", "absolute": "abs", "amax": "maximum", "amin": "minimum", "max": "maximum",
    "min": "minimum", "sum": "add", "prod": "multiply", "fabs": "abs", "remainder": "mod",
    "positive": "copy", "invert": "invert", "bitwise_not": "invert", "mean": "average",
    "arctan2": "arctan2", "negative": "negative",
}


def op_name(op: Any) -> str | None:
    """Canonical name of an operator given as an ``nl`` function/constant, NumPy ufunc/function or
    string; None for None.

    Raises:
        err_invalid_instruction_argument: for an object that is not an operator.
    """
    if op is None:
        return None
    name = getattr(op, "_nki_op_name", None)
    if name is None:
        name = op if isinstance(op, str) else getattr(op, "__name__", None)
    if name is None:
        raise err_invalid_instruction_argument(f"{op!r} is not an operator (use nl.add, np.add or 'add')")
    return _UFUNC_ALIASES.get(name, name)


def is_bitvec(op: Any) -> bool:
    """True for the bitvec operators (bitwise and/or/xor/not, shifts): integer bit patterns."""
    return op_name(op) in BITVEC


def is_compare(op: Any) -> bool:
    """True for the comparison operators (their results are 1.0 / 0.0)."""
    return op_name(op) in _COMPARE


def unary(op: Any) -> Callable[[Any], np.ndarray]:
    """float32 implementation of an activation / element-wise function.

    Raises:
        err_invalid_instruction_argument: for a name that is not an activation function.
    """
    n = op_name(op)
    if n == "invert":
        return lambda x: np.invert(_as_int(x)).astype(np.float32)
    if n not in UNARY:
        raise err_invalid_instruction_argument(
            f"{n!r} is not a supported activation / unary function; supported: {sorted(UNARY)}")
    f = UNARY[n]

    def run(x: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(f(np.asarray(x, dtype=np.float32)), dtype=np.float32)
    return run


def binary(op: Any) -> Callable[[Any, Any], np.ndarray]:
    """float32 implementation of a binary ALU operator (bitvec operators: int64 bit patterns, returned
    as int64 so wide integers stay exact).

    Raises:
        err_invalid_instruction_argument: for a name that is not a binary operator.
    """
    n = op_name(op)
    if n not in BINARY:
        raise err_invalid_instruction_argument(
            f"{n!r} is not a supported binary operator; supported: {sorted(BINARY)}")
    f = BINARY[n]
    if n in BITVEC:
        def run_bits(a: Any, b: Any) -> np.ndarray:
            return np.asarray(f(a, b))
        return run_bits

    def run(a: Any, b: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(f(a, b), dtype=np.float32)
    return run


def reduce_fn(op: Any) -> Callable[[np.ndarray, tuple, bool], np.ndarray]:
    """Reducer ``f(x, axis=tuple, keepdims=bool)`` for a reduction operator (float32 result).

    Raises:
        err_invalid_instruction_argument: for an operator that cannot reduce (AWS's table, "Legal
            Reduction op" column).
    """
    n = op_name(op)
    if n not in REDUCE:
        raise err_invalid_instruction_argument(
            f"{n!r} is not a legal reduction operator; supported: {sorted(REDUCE)}")
    f = REDUCE[n]

    def run(x: np.ndarray, axis: tuple, keepdims: bool) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(f(x, axis=axis, keepdims=keepdims), dtype=np.float32)
    return run


def reduce_identity(op: Any) -> float:
    """The identity of a reduction operator (0 for add, -inf for max, ...)."""
    return REDUCE_IDENTITY.get(op_name(op) or "", 0.0)
