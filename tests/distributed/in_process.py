"""Two ranks of a process group in this process: each rank is built in its own thread on one
``HashStore`` (building waits for the other rank), so collectives between them really move data."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch.distributed as dist


def connect_two(make: Callable[[dist.Store, int], Any], what: str) -> list[Any]:
    """``[make(store, 0), make(store, 1)]``, built concurrently on one store.

    Raises:
        AssertionError: naming ``what`` when a rank is not built within 90 seconds.
    """
    store = dist.HashStore()
    ranks: list[Any] = [None, None]

    def build(r: int) -> None:
        ranks[r] = make(store, r)

    threads = [threading.Thread(target=build, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert all(r is not None for r in ranks), f"the two {what} did not connect"
    return ranks
