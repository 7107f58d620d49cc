"""A clean interpreter exit after ``neuron`` backward passes.

PyTorch's autograd engine runs each ``neuron`` backward on a per-device worker thread
(``pt_autograd_<i>``), and since PyTorch 2.12 every backward stashes the caller's
``contextvars.Context`` in the graph task. The worker thread often drops the last
reference to it after ``backward()`` returned; if the interpreter is finalizing by then,
that release needs the GIL, CPython ends the thread, and the C++ runtime aborts the
process (SIGABRT, "terminate called without an active exception"; upstream
pytorch/pytorch#117762, CUDA has the same race). At exit, while Python is fully alive,
:func:`flush_autograd_device_threads` makes each worker thread release it first
(``csrc/runtime/AutogradThreads.cpp`` says how).
"""
from __future__ import annotations

import atexit
import os

from .. import _C

_THREAD_PREFIX = "pt_autograd_"


def _device_threads_started() -> bool:
    """True if this process runs autograd device threads (Linux: thread names in /proc)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return True  # cannot tell: flushing costs one tiny backward per device
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().startswith(_THREAD_PREFIX):
                    return True
        except OSError:
            continue
    return False


def flush_autograd_device_threads() -> None:
    """Makes every ``neuron`` autograd worker thread release the graph tasks it still holds.

    Runs one C++-only backward (a 0-dim float32 tensor per device, no Python object) on the
    worker thread of each visible ``neuron`` device and waits for it. Does nothing when the
    device is unavailable (invalid topology) or when this process has no autograd device
    threads (PyTorch starts them at the first backward on any device; a forked child has
    none: threads do not survive ``fork``), so programs that never ran a backward pay nothing.
    """
    count = _C._device_count()
    if count <= 0 or not _device_threads_started():
        return
    _C._flush_autograd_device_threads(count)


def register() -> None:
    """Registers :func:`flush_autograd_device_threads` to run at interpreter exit.

    Registered inside ``import torch``: ``atexit`` runs handlers in reverse order, so the flush
    also runs after any handler a program registers later (a backward inside such a handler is
    flushed too).
    """
    atexit.register(flush_autograd_device_threads)


__all__ = ["flush_autograd_device_threads", "register"]
