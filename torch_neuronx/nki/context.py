"""The running-kernel context: which simulated NeuronCore the NKI calls of the moment act on.

A kernel run pushes its simulator with :func:`activate`; ``nl`` / ``nisa`` calls, tile operators and
the instruction layer find it with :func:`current`. Nested kernels (a ``nki.jit`` function called
from a running kernel) are inlined on the same simulator. The stack is per thread: the two programs of
an LNC=2 launch run in two threads, each on its own core's simulator (:mod:`.simulator`).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from .errors import err_nki_api_outside_of_nki_kernel

__all__ = ["current", "active", "activate"]

_LOCAL = threading.local()


def _stack() -> list:
    s = getattr(_LOCAL, "stack", None)
    if s is None:
        s = _LOCAL.stack = []
    return s


def current() -> Any:
    """The simulator (:class:`~.simulator.NeuronCoreSim`) running the current kernel.

    Raises:
        err_nki_api_outside_of_nki_kernel: when no kernel is running.
    """
    s = _stack()
    if not s:
        raise err_nki_api_outside_of_nki_kernel("no kernel is running (decorate it with nki.jit and "
                                                "call it, or use nki.simulate / nki.simulate_kernel)")
    return s[-1]


def active() -> Any:
    """The running simulator, or None outside a kernel."""
    s = _stack()
    return s[-1] if s else None


@contextlib.contextmanager
def activate(sim: Any) -> Iterator[Any]:
    """Make ``sim`` the current simulator of this thread for the duration of the ``with`` block."""
    s = _stack()
    s.append(sim)
    try:
        yield sim
    finally:
        s.remove(sim)
