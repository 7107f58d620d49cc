"""The async handle a ``"neuron"`` collective returns (a ``torch.distributed.Work``).

A collective becomes one or more gloo works on CPU aliases, plus an optional
*finish* step that runs once after they complete (copying a contiguous staging
tensor back into a non-contiguous output). ``wait()`` and ``get_future()`` both
run it exactly once; errors are rewritten by the process group's failure
diagnosis so that they name a rank that stopped.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta

import torch
import torch.distributed as dist


class NeuronWork(dist.Work):
    """Handle of one collective of the ``"neuron"`` process group.

    Args:
        works: the gloo works doing the transfer (may be empty for a no-op).
        result: the tensors the future resolves to (the collective's outputs,
            ``neuron`` tensors; DDP's reducer reads them).
        finish: called once, after every work completed successfully.
        op: the collective's name, for error messages.
        explain: ``explain(op, transport_error)`` returns the exception to raise
            (it adds which rank is missing); called on failure only.
        keepalive: objects (aliases, staging tensors) that must outlive the
            transfer.
    """

    # Defaults on the class: a handle sets only what differs (attribute writes on a subclass of
    # the C++ Work cost ~0.1 µs each, and a collective's fast path makes one handle per call).
    _finish: Callable[[], None] | None = None
    _keepalive: object = None
    _lock: threading.Lock | None = None  # only a finish step needs it (wait() and the future may race)
    _finished = False
    _error: BaseException | None = None

    def __init__(
        self,
        works: Sequence[dist.Work],
        result: list[torch.Tensor],
        finish: Callable[[], None] | None = None,
        op: str = "collective",
        explain: Callable[[str, BaseException], BaseException] | None = None,
        keepalive: object = None,
    ) -> None:
        super().__init__()
        self._op = op
        self._works = works if type(works) is list else list(works)
        self._result = result
        self._explain = explain
        if finish is not None:
            self._finish = finish
            self._lock = threading.Lock()
        if keepalive is not None:
            self._keepalive = keepalive

    @property
    def transfers(self) -> tuple[dist.Work, ...]:
        """The gloo works doing this collective's transfers (empty for a no-op)."""
        return tuple(self._works)

    def finalize(self) -> None:
        """Runs the finish step (staging copies) once; later calls do nothing.

        Call it only after every transfer completed: :meth:`wait` and the future do, and a
        handle over several works (coalescing) calls it on each of its parts.
        """
        if self._lock is None:  # nothing to run: only let go of the keepalive
            if self._keepalive is not None:
                self._keepalive = None
            return
        with self._lock:
            if not self._finished:
                if self._finish is not None:  # (always set when the lock is)
                    self._finish()
                self._finished = True
                self._keepalive = None

    def _raise(self, err: BaseException):
        if self._error is None:
            self._error = self._explain(self._op, err) if self._explain is not None else err
        raise self._error from err

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Blocks until the collective completed and its outputs are written.

        Args:
            timeout: optional bound per underlying transfer; the process
                group's timeout applies otherwise.

        Returns:
            True.

        Raises:
            torch.distributed.DistBackendError: when a peer stopped or the
                transfer timed out; the message names the missing rank(s).
        """
        if self._error is not None:
            raise self._error
        try:
            if not timeout:  # None or timedelta(0) (what C++ passes for "no timeout"): the group's
                for work in self._works:
                    work.wait()
            else:
                for work in self._works:
                    work.wait(timeout)
        except Exception as err:  # noqa: BLE001  (rewritten, re-raised)
            self._raise(err)
        if self._lock is not None or self._keepalive is not None:
            self.finalize()
        return True

    def get_future(self) -> torch.futures.Future:
        """A future resolving to the output tensors once the collective completed."""
        if not self._works:
            self.finalize()
            fut: torch.futures.Future = torch.futures.Future()
            fut.set_result(self._result)
            return fut
        inner = [work.get_future() for work in self._works]
        combined = inner[0] if len(inner) == 1 else torch.futures.collect_all(inner)

        def done(f: torch.futures.Future):
            try:
                values = f.value()
                if len(inner) > 1:
                    for v in values:
                        v.value()
            except Exception as err:  # noqa: BLE001
                self._raise(err)
            self.finalize()
            return self._result

        return combined.then(done)

    def is_completed(self) -> bool:
        """True when every transfer finished (successfully or not)."""
        return all(work.is_completed() for work in self._works)

    def is_success(self) -> bool:
        """True when every transfer completed without error."""
        return self._error is None and all(work.is_success() for work in self._works)

    def exception(self) -> BaseException | None:
        """The rewritten error of a failed collective, or None."""
        return self._error

    def result(self) -> list[torch.Tensor]:
        """The output tensors (after :meth:`wait`)."""
        return self._result

    def synchronize(self) -> None:
        """Same as :meth:`wait` (the software NeuronCore has no queued streams)."""
        self.wait()

    def source_rank(self) -> int:
        """For ``recv`` from any source: the rank the data came from."""
        return self._works[0]._source_rank() if self._works else -1

    # ``torch.distributed.recv(t)`` (no ``src``) asks the handle for ``_source_rank()``, a C++
    # method the Python trampoline does not forward to :meth:`source_rank`.
    _source_rank = source_rank
