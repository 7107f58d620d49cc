"""Index expressions, masks and slices of the NKI APIs.

* :class:`IndexExpr` is what ``nl.arange`` / ``nl.mgrid`` produce (legacy front end): an integer grid
  supporting affine arithmetic (``i * 512 + i_f``) and comparisons, which give a :class:`Mask`.
* :class:`Mask` is a predicate over an instruction's iteration space (``mask=``), combined with
  ``&``, ``|``, ``^``, ``~``. ``if`` / ``while`` / ``not`` / ``or`` on a mask raise
  ``err_control_flow_condition_depending_on_arange`` (AWS's errors page: ``if j > 2048:``). Python's
  ``and`` of masks in a value (``mask=(ix < n and iy < m)``) is what AWS's own ``nc_match_replace8``
  test writes (``aws-neuron/aws-neuron-sdk@81ce03a:nki/test/test_nki_isa_nc_match_replace8.py:85``), and
  its golden values hold only if the first mask counts as true there: Python then makes the expression
  the last mask alone. The known-issues page says "Use & to combine masks. We do not support using and
  for masks" (``aws-neuron/aws-neuron-sdk@cca3784:general/nki/nki_known_issues.rst:38``). The simulator
  does what that test needs and warns (:class:`.errors.NKIWarning`) that only the last mask is kept.
* :func:`ds` is ``nl.ds(start, size)``: a slice, or a :class:`DynamicSlice` when ``start`` is a
  runtime value (a tile or register), resolved when an instruction uses it.

How subscripts become views of a tensor is :mod:`.tile`'s business.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .errors import (NKIWarning, err_cannot_assign_to_index,
                     err_control_flow_condition_depending_on_arange, err_invalid_instruction_argument,
                     err_tensor_access_out_of_bound, err_unsupported_expression_in_mask)
from .truth import boolop_context

__all__ = ["IndexExpr", "Mask", "DynamicSlice", "arange", "mgrid", "ds", "as_mask_array", "is_int", "as_int",
           "pattern_pairs"]


def _val(x: Any) -> Any:
    if isinstance(x, (IndexExpr, Mask)):
        return x.values
    return x


def _operand(x: Any, op: str, cls: type) -> Any:
    """The values of the other operand of an index-expression operator: an index expression, a mask,
    an integer or float, or a NumPy array of numbers.

    Raises:
        ``cls`` (err_unsupported_expression_in_mask for a comparison, err_invalid_instruction_argument for
        arithmetic): a string, ``None``, a list or any other non-number.
    """
    v = _val(x)
    if isinstance(v, (int, float, np.number, np.bool_)) and not isinstance(v, complex):
        return v
    if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
        return v
    raise cls(f"index expression {op} {x!r} ({type(x).__name__}): the other operand must be an index "
              "expression (nl.arange / nl.mgrid) or a number")


def is_int(x: Any) -> bool:
    """True for Python / NumPy integers (bool excluded)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def as_int(x: Any, what: str) -> int:
    """``x`` as an ``int`` for an index, slice bound or loop bound: a Python / NumPy integer, a float with
    an integral value (``n / 2``), or an object with an integer value (``int(x)``: a loop register).

    Raises:
        err_invalid_instruction_argument: a fractional float, a string, ``None``, a bool or anything else
            ``int()`` would truncate or refuse (``what`` names the argument).
    """
    if is_int(x):
        return int(x)
    if isinstance(x, (float, np.floating)):
        if float(x).is_integer():
            return int(x)
    elif not isinstance(x, (str, bytes, bool, np.bool_)) and x is not None and hasattr(x, "__int__"):
        try:
            return int(x)
        except (TypeError, ValueError):
            pass
    raise err_invalid_instruction_argument(f"{what}: {x!r} is not an integer")


def pattern_pairs(pattern: Any, what: str) -> list[list[int]]:
    """An access pattern ``[[step, num], ...]`` (``t.ap(pattern=...)``, current ``nisa.iota`` /
    ``affine_select``) as a list of integer pairs.

    Raises:
        err_invalid_instruction_argument: ``pattern`` is not a sequence of ``[step, num]`` pairs of
            integers, or a num is negative (``what`` names the call).
    """
    if isinstance(pattern, (str, bytes)) or not isinstance(pattern, (tuple, list)) or \
            not all(isinstance(e, (tuple, list)) and len(e) == 2 for e in pattern):
        raise err_invalid_instruction_argument(f"{what}: pattern {pattern!r}: each pattern entry is a [step, num] pair")
    pat = [[as_int(s, f"{what}: pattern step"), as_int(n, f"{what}: pattern num")] for s, n in pattern]
    if any(n < 0 for _, n in pat):
        raise err_invalid_instruction_argument(
            f"{what}: pattern {pattern!r}: a pattern's num (element count) is negative")
    return pat


class IndexExpr:
    """An integer index grid (``nl.arange(128)[:, None]``, ``i * 512 + nl.arange(512)[None, :]``).

    ``values`` is an int64 NumPy array; arithmetic with ints or other IndexExprs is element-wise with
    broadcasting; comparisons return a :class:`Mask`.
    """

    __slots__ = ("values",)
    __array_priority__ = 100

    def __init__(self, values: Any):
        self.values = np.asarray(values, dtype=np.int64)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    @property
    def ndim(self) -> int:
        return int(self.values.ndim)

    def __getitem__(self, key: Any) -> IndexExpr:
        return IndexExpr(self.values[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        raise err_cannot_assign_to_index(f"index expression of shape {list(self.shape)}")

    def __repr__(self) -> str:
        return f"IndexExpr(shape={list(self.shape)})"

    def __len__(self) -> int:
        return len(self.values)

    def __bool__(self) -> bool:
        raise err_control_flow_condition_depending_on_arange(
            f"truth value of an index expression of shape {list(self.shape)}")

    def __iter__(self) -> Any:
        raise err_control_flow_condition_depending_on_arange(
            f"iterating over an index expression of shape {list(self.shape)}; use nl.affine_range")

    # arithmetic -------------------------------------------------------------------------------
    def _bin(self, other: Any, fn: Any) -> IndexExpr:
        return IndexExpr(fn(self.values, _operand(other, "arithmetic with", err_invalid_instruction_argument)))

    def __add__(self, o: Any) -> Any:
        if hasattr(o, "storage") and hasattr(o, "describe"):   # a tile: a runtime offset (tile.DynamicIndex)
            return o.__radd__(self)
        return self._bin(o, np.add)

    def __radd__(self, o: Any) -> IndexExpr: return self._bin(o, lambda a, b: b + a)
    def __sub__(self, o: Any) -> IndexExpr: return self._bin(o, np.subtract)
    def __rsub__(self, o: Any) -> IndexExpr: return self._bin(o, lambda a, b: b - a)
    def __mul__(self, o: Any) -> IndexExpr: return self._bin(o, np.multiply)
    def __rmul__(self, o: Any) -> IndexExpr: return self._bin(o, lambda a, b: b * a)
    def __floordiv__(self, o: Any) -> IndexExpr: return self._bin(o, np.floor_divide)
    def __rfloordiv__(self, o: Any) -> IndexExpr: return self._bin(o, lambda a, b: b // a)
    def __mod__(self, o: Any) -> IndexExpr: return self._bin(o, np.mod)
    def __neg__(self) -> IndexExpr: return IndexExpr(-self.values)

    # comparisons -> Mask ----------------------------------------------------------------------
    def _cmp(self, other: Any, fn: Any) -> Mask:
        return Mask(fn(self.values, _operand(other, "compared with", err_unsupported_expression_in_mask)))

    def __lt__(self, o: Any) -> Mask: return self._cmp(o, np.less)
    def __le__(self, o: Any) -> Mask: return self._cmp(o, np.less_equal)
    def __gt__(self, o: Any) -> Mask: return self._cmp(o, np.greater)
    def __ge__(self, o: Any) -> Mask: return self._cmp(o, np.greater_equal)

    def __eq__(self, o: Any) -> Mask:  # type: ignore[override]
        return self._cmp(o, np.equal)

    def __ne__(self, o: Any) -> Mask:  # type: ignore[override]
        return self._cmp(o, np.not_equal)

    __hash__ = object.__hash__


class Mask:
    """A boolean predicate over an instruction's iteration space (``mask=`` argument).

    Built by comparing index expressions; combine with ``&``, ``|``, ``^``, ``~``.
    """

    __slots__ = ("values",)

    def __init__(self, values: Any):
        self.values = np.asarray(values, dtype=bool)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def _combine(self, o: Any, op: str) -> np.ndarray:
        v = _operand(o, op, err_unsupported_expression_in_mask)
        return np.asarray(v, dtype=bool)

    def __and__(self, o: Any) -> Mask:
        return Mask(self.values & self._combine(o, "&"))

    __rand__ = __and__

    def __or__(self, o: Any) -> Mask:
        return Mask(self.values | self._combine(o, "|"))

    __ror__ = __or__

    def __xor__(self, o: Any) -> Mask:
        return Mask(self.values ^ self._combine(o, "^"))

    def __invert__(self) -> Mask:
        return Mask(~self.values)

    def __bool__(self) -> bool:
        """True for an operand of a value-context ``and`` (so ``a and b`` is ``b``, as AWS's tracer makes
        it; module docstring), with an :class:`.errors.NKIWarning`.

        Raises:
            err_control_flow_condition_depending_on_arange: in ``if`` / ``while`` / ``not`` / ``or`` /
                ``x if m else y`` / ``bool(m)`` (AWS's errors page: ``if j > 2048:``).
        """
        context = boolop_context()
        if context == "and":
            warnings.warn(NKIWarning(
                f"Python `and` on NKI masks keeps only the last mask: `m1 and m2` is m2 (AWS's compiler "
                f"takes a mask as true there; this {list(self.shape)} mask is dropped); use `m1 & m2` to "
                "require both"), stacklevel=2)
            return True
        if context == "or":
            raise err_control_flow_condition_depending_on_arange(
                f"Python `or` on a mask of shape {list(self.shape)}; combine masks with | and pass them as mask=")
        raise err_control_flow_condition_depending_on_arange(
            f"mask of shape {list(self.shape)} used in if / while / not; combine masks with & | ~ and "
            "pass them as mask=")

    def __repr__(self) -> str:
        return f"Mask(shape={list(self.shape)}, true={int(self.values.sum())})"


class DynamicSlice:
    """``nl.ds(start, size)`` whose ``start`` is a runtime value (a ``[1, 1]`` tile or a register):
    resolved to a slice when an instruction uses the view."""

    __slots__ = ("start", "size")

    def __init__(self, start: Any, size: int):
        self.start = start
        self.size = int(size)

    def __repr__(self) -> str:
        return f"ds({self.start!r}, {self.size})"


def arange(*args: Any) -> IndexExpr:
    """``nl.arange(stop)`` / ``nl.arange(start, stop[, step])``: a 1-D index grid; add axes with
    ``[:, None]`` (partition) or ``[None, :]`` (free) before indexing a tensor."""
    return IndexExpr(np.arange(*[int(a) for a in args], dtype=np.int64))


class _MGridResult(tuple):
    """Result of ``nl.mgrid[...]``: unpackable, and with ``.p`` (partition) ``.x`` ``.y`` ``.z``."""

    @property
    def p(self) -> IndexExpr:
        return self[0]

    @property
    def x(self) -> IndexExpr:
        return self[1]

    @property
    def y(self) -> IndexExpr:
        return self[2]

    @property
    def z(self) -> IndexExpr:
        return self[3]


class _MGrid:
    """``nl.mgrid[0:128, 0:512]`` -> open grids of shape (128, 1) and (1, 512) (like ``np.ogrid``)."""

    def __getitem__(self, key: Any) -> _MGridResult:
        if not isinstance(key, tuple):
            key = (key,)
        n = len(key)
        out = []
        for ax, sl in enumerate(key):
            if not isinstance(sl, slice):
                raise err_invalid_instruction_argument(
                    f"nl.mgrid takes slices, e.g. nl.mgrid[0:128, 0:512]; got {sl!r}")
            vals = np.arange(sl.start or 0, sl.stop, sl.step or 1, dtype=np.int64)
            shape = [1] * n
            shape[ax] = len(vals)
            out.append(IndexExpr(vals.reshape(shape)))
        return _MGridResult(out)


mgrid = _MGrid()


def ds(start: Any, size: int) -> Any:
    """``nl.ds(start, size)``: the slice ``start:start+size`` (a :class:`DynamicSlice` when ``start`` is
    a runtime value)."""
    n = as_int(size, "nl.ds size")
    if n < 0:
        raise err_invalid_instruction_argument(f"nl.ds({start!r}, {size!r}): the size is negative")
    if isinstance(start, IndexExpr) and start.values.size == 1:
        start = int(start.values.reshape(-1)[0])
    if is_int(start) or isinstance(start, (float, np.floating)):
        s = as_int(start, "nl.ds start")
        if s < 0:
            # a negative start is not Python's count from the end: the slice would read nothing or wrap
            raise err_tensor_access_out_of_bound(f"nl.ds({start!r}, {size!r}): the start is negative")
        return slice(s, s + n, 1)
    return DynamicSlice(start, n)


def as_mask_array(mask: Any, shape: tuple) -> np.ndarray | None:
    """Boolean array of ``shape`` for a ``mask=`` argument (Mask, bool array; None -> None).

    Dimensions align from the partition axis (left); trailing missing dims count as 1. Returns None
    when the mask does not broadcast to ``shape`` (the caller decides what that means).
    """
    if mask is None:
        return None
    vals = mask.values if isinstance(mask, Mask) else np.asarray(mask, dtype=bool)
    shape = tuple(shape)
    if vals.ndim < len(shape):
        vals = vals.reshape(vals.shape + (1,) * (len(shape) - vals.ndim))
    elif vals.ndim > len(shape):
        extra = vals.shape[len(shape):]
        if all(s == 1 for s in extra):
            vals = vals.reshape(vals.shape[:len(shape)])
    try:
        return np.ascontiguousarray(np.broadcast_to(vals, shape))
    except ValueError:
        return None
