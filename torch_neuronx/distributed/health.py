"""Which rank stopped: heartbeats through the rendezvous store.

gloo reports a dead peer as "Connection closed by peer [addr]:port" or as a
timeout, neither naming a rank. Each process therefore bumps a counter
``neuron_heartbeat/<global rank>`` in the c10d store every ``interval``
seconds from a daemon thread (one store ``add`` per interval, nothing per
collective). When a collective fails, :func:`missing_ranks` reads the counters
of the group's ranks twice, ``2 × interval`` apart: a rank whose counter did
not move has stopped.

The store is the launcher's (torchrun's agent hosts it), so it outlives any
worker; if the store itself is unreachable, the diagnosis says so.
"""
from __future__ import annotations

import atexit
import threading
import time

import torch.distributed as dist

INTERVAL_S = 0.5
_KEY = "neuron_heartbeat/{}"

_store: dist.Store | None = None
_rank: int = -1
_thread: threading.Thread | None = None
_stop = threading.Event()


def start(store: dist.Store, global_rank: int, interval: float = INTERVAL_S) -> None:
    """Starts this process's heartbeat in ``store`` (idempotent per store).

    Args:
        store: the default group's store (shared by every rank).
        global_rank: this process's rank in the default group.
        interval: seconds between beats.
    """
    global _store, _rank, _thread
    stop()
    _store, _rank = store, global_rank
    _stop.clear()
    store.add(_KEY.format(global_rank), 1)

    def beat() -> None:
        while not _stop.wait(interval):
            try:
                store.add(_KEY.format(global_rank), 1)
            except Exception:  # noqa: BLE001  (store gone: the job is ending)
                return

    _thread = threading.Thread(target=beat, name="neuron-heartbeat", daemon=True)
    _thread.start()


def stop() -> None:
    """Stops the heartbeat thread (at ``destroy_process_group`` and at exit)."""
    global _thread
    _stop.set()
    if _thread is not None:
        _thread.join(timeout=2 * INTERVAL_S)
        _thread = None


atexit.register(stop)


def running() -> bool:
    """True when this process publishes heartbeats (its default group is ``"neuron"``)."""
    return _store is not None


def missing_ranks(global_ranks: list[int], interval: float = INTERVAL_S) -> list[int] | None:
    """Global ranks among ``global_ranks`` whose heartbeat stopped.

    Blocks for ``2 × interval + ε`` seconds.

    Returns:
        The stopped ranks (possibly empty: everyone is alive), or ``None``
        when the store cannot be read (the store host itself is gone) or
        heartbeats were never started.
    """
    if _store is None:
        return None
    try:
        before = {r: _store.add(_KEY.format(r), 0) for r in global_ranks}
        time.sleep(2 * interval + 0.1)
        after = {r: _store.add(_KEY.format(r), 0) for r in global_ranks}
    except Exception:  # noqa: BLE001
        return None
    return [r for r in global_ranks if r != _rank and after[r] == before[r]]
