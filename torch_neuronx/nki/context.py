"""The running-kernel context: which simulated NeuronCore the NKI calls of the moment act on.

A kernel run pushes its simulator with :func:`activate`; ``nl`` / ``nisa`` calls, tile operators and
the instruction layer find it with :func:`current`. Nested kernels (a ``nki.jit`` function called
from a running kernel) are inlined on the same simulator, so the stack is usually one deep.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .errors import err_nki_api_outside_of_nki_kernel

__all__ = ["current", "active", "activate"]

_STACK: list = []


def current() -> Any:
    """The simulator (:class:`~.simulator.NeuronCoreSim`) running the current kernel.

    Raises:
        err_nki_api_outside_of_nki_kernel: when no kernel is running.
    """
    if not _STACK:
        raise err_nki_api_outside_of_nki_kernel("no kernel is running (decorate it with nki.jit and "
                                                "call it, or use nki.simulate_kernel)")
    return _STACK[-1]


def active() -> Any:
    """The running simulator, or None outside a kernel."""
    return _STACK[-1] if _STACK else None


@contextlib.contextmanager
def activate(sim: Any) -> Iterator[Any]:
    """Make ``sim`` the current simulator for the duration of the ``with`` block."""
    _STACK.append(sim)
    try:
        yield sim
    finally:
        _STACK.remove(sim)
