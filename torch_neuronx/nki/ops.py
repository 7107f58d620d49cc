"""Tables of element-wise, binary and reduction operators, computed in float32.

Instructions accept an operator as an ``nl`` function (``nl.exp``, ``nl.add``), a NumPy ufunc
(``np.exp``, ``np.add`` as in AWS's tutorials) or a name. :func:`op_name` maps all three to one name;
the tables map names to NumPy implementations (a registry as data, not branches).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["UNARY", "BINARY", "REDUCE", "op_name", "unary", "binary", "reduce_fn"]


def _erf(x):
    # Abramowitz & Stegun 7.1.26, |error| < 1.5e-7: enough for float32 simulation.
    x = np.asarray(x, dtype=np.float32)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(np.float32)


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


def _gelu(x):
    return (0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))).astype(np.float32)


def _gelu_tanh(x):
    return (0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))).astype(np.float32)


def _softplus(x):
    return np.logaddexp(0.0, x).astype(np.float32)


UNARY: dict[str, Callable[..., Any]] = {
    "copy": lambda x: x, "identity": lambda x: x,
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "reciprocal": lambda x: 1.0 / x,
    "square": np.square, "tanh": np.tanh, "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, 0.0), "gelu": _gelu, "gelu_apprx_tanh": _gelu_tanh,
    "silu": lambda x: x * _sigmoid(x), "abs": np.abs, "negative": np.negative,
    "sin": np.sin, "cos": np.cos, "erf": _erf, "softplus": _softplus, "sign": np.sign,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "logical_not": lambda x: (x == 0).astype(np.float32),
    "mish": lambda x: x * np.tanh(_softplus(x)),
}

BINARY: dict[str, Callable[..., Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": lambda a, b: np.bitwise_and(a.astype(np.int64), np.asarray(b).astype(np.int64)),
    "bitwise_or": lambda a, b: np.bitwise_or(a.astype(np.int64), np.asarray(b).astype(np.int64)),
    "bitwise_xor": lambda a, b: np.bitwise_xor(a.astype(np.int64), np.asarray(b).astype(np.int64)),
    "mod": np.mod, "fmod": np.fmod,
}

# reduction name -> (numpy reducer, is add/max/min for the bf16 fast path of the cost model)
REDUCE: dict[str, Callable[..., Any]] = {
    "add": np.sum, "maximum": np.max, "minimum": np.min, "multiply": np.prod,
    "logical_and": np.all, "logical_or": np.any,
}

_UFUNC_ALIASES = {
    "true_divide": "divide", "absolute": "abs", "amax": "maximum", "amin": "minimum", "max": "maximum",
    "min": "minimum", "sum": "add", "prod": "multiply", "fabs": "abs", "remainder": "mod",
    "reciprocal": "reciprocal", "positive": "copy",
}


def op_name(op) -> str | None:
    """Canonical name of an operator given as an ``nl`` function, NumPy ufunc/function or string."""
    if op is None:
        return None
    name = getattr(op, "_nki_op_name", None)
    if name is None:
        name = op if isinstance(op, str) else getattr(op, "__name__", None)
    if name is None:
        raise TypeError(f"unsupported operator {op!r}")
    return _UFUNC_ALIASES.get(name, name)


def unary(op):
    """float32 implementation of an activation / element-wise function."""
    n = op_name(op)
    if n not in UNARY:
        raise ValueError(f"unsupported activation function {n!r}; supported: {sorted(UNARY)}")
    f = UNARY[n]

    def run(x):
        with np.errstate(all="ignore"):
            return np.asarray(f(np.asarray(x, dtype=np.float32)), dtype=np.float32)
    return run


def binary(op):
    """float32 implementation of a binary ALU operator."""
    n = op_name(op)
    if n not in BINARY:
        raise ValueError(f"unsupported binary operator {n!r}; supported: {sorted(BINARY)}")
    f = BINARY[n]

    def run(a, b):
        with np.errstate(all="ignore"):
            return np.asarray(f(a, b), dtype=np.float32)
    return run


def reduce_fn(op):
    """float32 reducer ``f(x, axis=tuple, keepdims=bool)`` for a reduction operator."""
    n = op_name(op)
    if n not in REDUCE:
        raise ValueError(f"unsupported reduce operator {n!r}; supported: {sorted(REDUCE)}")
    f = REDUCE[n]

    def run(x, axis, keepdims):
        with np.errstate(all="ignore"):
            return np.asarray(f(x, axis=axis, keepdims=keepdims), dtype=np.float32)
    return run
