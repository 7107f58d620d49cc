"""Which Python construct asked an NKI object for its truth value.

Python calls ``__bool__`` for ``if`` / ``while`` / ``not`` / conditional expressions and for the
operands of ``and`` / ``or``; the object is not told which. NKI's rules differ between them for masks
(``indexing.Mask``): an ``if`` on an ``nl.arange`` predicate is ``err_control_flow_condition_depending_on_arange``
(AWS's errors page), while ``a and b`` of two masks in a value (``mask=(ix < n and iy < m)``) is what
AWS's own ``nc_match_replace8`` test does, and its golden values hold only if the first mask counts as
true there, so that the expression is the second mask.

:func:`boolop_context` reads the caller's current bytecode instruction to tell the value-context
``and`` / ``or`` apart from every other truth test. CPython compiles them differently:

* 3.11: ``a and b`` in a value is ``JUMP_IF_FALSE_OR_POP`` (``or``: ``JUMP_IF_TRUE_OR_POP``); ``if a``
  and ``if a and b`` are ``POP_JUMP_*_IF_FALSE``.
* 3.12 and later: the value-context forms keep the operand with ``COPY 1`` before the
  ``POP_JUMP_IF_FALSE`` / ``POP_JUMP_IF_TRUE`` (3.13 adds a ``TO_BOOL`` between them); a statement's
  test has no ``COPY``.

An ``and`` / ``or`` that is itself an ``if`` test (``if a and b:``) compiles as control flow and is
reported as such.
"""
from __future__ import annotations

import dis
import sys
from functools import lru_cache
from types import CodeType

__all__ = ["boolop_context"]

_AND_311 = {"JUMP_IF_FALSE_OR_POP"}
_OR_311 = {"JUMP_IF_TRUE_OR_POP"}
_JUMP_FALSE = {"POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE"}
_JUMP_TRUE = {"POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE"}


@lru_cache(maxsize=256)
def _instructions(code: CodeType) -> tuple[tuple[int, str, object], ...]:
    return tuple((ins.offset, ins.opname, ins.arg) for ins in dis.get_instructions(code))


def boolop_context(depth: int = 2) -> str | None:
    """``"and"`` or ``"or"`` when the frame ``depth`` levels up is evaluating a value-context ``and`` /
    ``or`` whose operand's truth is being asked, else ``None`` (``if``, ``while``, ``not``, ``x if c
    else y``, ``bool()``, or an interpreter whose bytecode is not recognised).

    Args:
        depth: frames above this function's caller (2: the caller of the ``__bool__`` that calls this).
    """
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return None
    code, lasti = frame.f_code, frame.f_lasti
    ins = _instructions(code)
    at = next((k for k, (off, _, _) in enumerate(ins) if off == lasti), None)
    if at is None:
        return None
    name = ins[at][1]
    if name in _AND_311:
        return "and"
    if name in _OR_311:
        return "or"
    # 3.12+: [COPY 1] [TO_BOOL] POP_JUMP_IF_FALSE/TRUE; __bool__ runs in TO_BOOL (3.13) or the jump (3.12)
    k = at
    if name == "TO_BOOL" and k + 1 < len(ins):
        name = ins[k + 1][1]
    elif k > 0 and ins[k - 1][1] == "TO_BOOL":
        k -= 1
    if k > 0 and ins[k - 1][1] == "COPY" and ins[k - 1][2] == 1:
        if name in _JUMP_FALSE:
            return "and"
        if name in _JUMP_TRUE:
            return "or"
    return None
