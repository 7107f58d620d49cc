"""``nki.compiler`` (legacy ``neuronxcc.nki.compiler``, also served as the current ``nki.compiler``):
compiler directives and the direct-allocation APIs.

The decorators (``skip_middle_end_transformations``, ``enable_stack_allocator``, ``force_auto_alloc``)
and directives (``no_reorder``, ``multi_buffer``, ``allocation_scope``) steer AWS's compiler passes,
instruction order and memory placement; the simulator executes instructions in program order and gives
every tensor its own storage, so they return the kernel (or a context manager) unchanged and change no
value. ``ncc.sbuf`` / ``ncc.psum`` (:mod:`.sbuf`, :mod:`.psum`) give the direct-allocation buffers.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from . import psum, sbuf

__all__ = ["skip_middle_end_transformations", "enable_stack_allocator", "force_auto_alloc", "no_reorder",
           "multi_buffer", "allocation_scope", "sbuf", "psum"]


def _decorator(func: Callable | None, what: str) -> Any:
    if func is None:
        return lambda f: f
    if not callable(func):
        raise TypeError(f"nki.compiler.{what} decorates a kernel function, got {func!r}")
    return func


def skip_middle_end_transformations(func: Callable | None = None) -> Any:
    """Decorator: skip AWS's middle-end compiler passes (no effect on simulated values)."""
    return _decorator(func, "skip_middle_end_transformations")


def enable_stack_allocator(func: Callable | None = None, log_level: int = 50) -> Any:
    """Decorator: AWS's stack allocator for SBUF/PSUM tensors (placement only; no effect on values)."""
    _ = log_level
    return _decorator(func, "enable_stack_allocator")


def force_auto_alloc(func: Callable | None = None) -> Any:
    """Decorator: ignore direct allocations in the kernel (the simulator allocates automatically)."""
    return _decorator(func, "force_auto_alloc")


@contextlib.contextmanager
def _scope() -> Iterator[None]:
    yield


def no_reorder() -> Any:
    """Directive / context manager keeping instructions in program order (the simulator's order)."""
    return _scope()


def multi_buffer(factor: int = 2) -> Any:
    """Directive: multi-buffered allocation of ``factor`` copies (placement only)."""
    if int(factor) < 1:
        raise ValueError(f"multi_buffer factor must be >= 1, got {factor}")
    return _scope()


def allocation_scope() -> Any:
    """Context manager grouping allocations (placement only)."""
    return _scope()
