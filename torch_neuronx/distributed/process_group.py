"""``NeuronProcessGroup``: the c10d process group behind backend ``"neuron"``.

A Python ``torch.distributed.ProcessGroup`` that owns a gloo backend and hands
it zero-copy CPU aliases (:func:`.aliases.cpu_alias`) of the ``neuron``
tensors: gloo reads and writes device memory in place, across processes on
one machine or many (gloo's TCP transport). Nothing is copied between device
and host.

What each collective does to its tensors:

* contiguous tensors are aliased as they are;
* a non-contiguous *input* is first made contiguous on the device (a device
  copy), a non-contiguous *output* gets a contiguous device staging tensor that
  is copied back into it when the work completes (``wait()`` or the future).

Entry points: the methods the C++ trampoline ``PyProcessGroup`` forwards to
Python (so DDP's reducer and the functional collectives of DTensor/FSDP2 reach
them) and those ``torch.distributed``'s Python functions look up (``scatter``,
``gather``, ``reduce``, ``alltoall``...). Reductions: ``SUM``, ``AVG``,
``PRODUCT``, ``MIN``, ``MAX`` (and the bitwise ones on integers), as gloo
implements them; ``PREMUL_SUM`` is not supported (gloo rejects it).

Failures: a collective whose peer died or timed out raises
``torch.distributed.DistBackendError`` naming the rank(s) that stopped
(:mod:`.health`), after at most the group's timeout.
"""
from __future__ import annotations

import os
from datetime import timedelta
from typing import Sequence

import torch
import torch.distributed as dist

from . import health
from .aliases import cpu_alias
from .work import NeuronWork

BACKEND_NAME = "neuron"


class _Staging:
    """CPU aliases for one collective, with contiguous device staging where needed."""

    __slots__ = ("copy_back", "keep")

    def __init__(self) -> None:
        self.copy_back: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.keep: list[torch.Tensor] = []

    def input(self, t: torch.Tensor) -> torch.Tensor:
        """Alias of a tensor the collective only reads."""
        if not t.is_contiguous():
            t = t.contiguous()
            self.keep.append(t)
        return cpu_alias(t)

    def output(self, t: torch.Tensor, read: bool) -> torch.Tensor:
        """Alias of a tensor the collective writes (``read``: and reads first)."""
        if t.is_contiguous():
            return cpu_alias(t)
        staged = t.contiguous() if read else torch.empty_like(t, memory_format=torch.contiguous_format)
        self.copy_back.append((t, staged))
        return cpu_alias(staged)

    def finish(self) -> None:
        for target, staged in self.copy_back:
            target.copy_(staged)


class NeuronProcessGroup(dist.ProcessGroup):
    """Process group of backend ``"neuron"``: gloo on zero-copy aliases of ``neuron`` tensors.

    Created by :func:`create_process_group` (``init_process_group("neuron")``,
    ``new_group``, ``init_device_mesh("neuron", ...)``); not meant to be built
    by hand.

    Args:
        store: the group's c10d store (a ``PrefixStore``).
        rank: this process's rank in the group.
        size: number of ranks in the group.
        timeout: bound on every collective; a collective that cannot finish
            in time raises ``DistBackendError``.
        global_ranks: default-group ranks of the group's members, in group
            order (used to name a missing rank); ``range(size)`` if None.
    """

    def __init__(
        self,
        store: dist.Store,
        rank: int,
        size: int,
        timeout: timedelta,
        global_ranks: Sequence[int] | None = None,
    ) -> None:
        super().__init__(rank, size)
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        self._gloo._set_sequence_number_for_group()
        self._timeout = timeout
        self._global_ranks = list(global_ranks) if global_ranks else list(range(size))
        self._name = ""
        self._desc = ""
        self._coalesced: list[NeuronWork] | None = None
        self._owns_heartbeat = False

    # ----------------------------------------------------------------- identity
    def getBackendName(self) -> str:  # noqa: N802  (C++ virtual name)
        return BACKEND_NAME

    def getGroupName(self) -> str:  # noqa: N802
        return self._name

    def setGroupName(self, name: str) -> None:  # noqa: N802
        self._name = name

    def getGroupDesc(self) -> str:  # noqa: N802
        return self._desc

    def setGroupDesc(self, desc: str) -> None:  # noqa: N802
        self._desc = desc

    def __repr__(self) -> str:
        return (
            f"NeuronProcessGroup(name={self._name!r}, rank={self.rank()}, size={self.size()}, "
            f"global_ranks={self._global_ranks})"
        )

    # ------------------------------------------------------------------ plumbing
    def _explain(self, op: str, err: BaseException) -> BaseException:
        """The error to raise when ``op`` failed with transport error ``err``."""
        me = self._global_ranks[self.rank()] if self.rank() < len(self._global_ranks) else self.rank()
        where = (
            f"'neuron' process group {self._name or '?'} (global ranks {self._global_ranks}), "
            f"on rank {me}: {op} failed"
        )
        if not health.running():
            return dist.DistBackendError(
                f"{where} (the default group is not 'neuron', so no heartbeats tell which rank "
                f"stopped; timeout {self._timeout.total_seconds():g} s). Transport error: {err}"
            )
        missing = health.missing_ranks(self._global_ranks)
        if missing:
            names = ", ".join(str(r) for r in missing)
            msg = (
                f"{where}: rank {names} stopped (no heartbeat in the rendezvous store: the process "
                f"exited or its node is unreachable). Timeout {self._timeout.total_seconds():g} s. "
                f"Transport error: {err}"
            )
        elif missing is None:
            host = (
                "torchrun's agent on the MASTER_ADDR node"
                if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
                else "rank 0, which hosts the store"
            )
            msg = (
                f"{where}, and the rendezvous store cannot be reached: its host ({host}) is gone, "
                f"so the missing rank is not known. Transport error: {err}"
            )
        else:
            msg = (
                f"{where} although every rank of the group is alive: a rank is stuck or the ranks "
                f"issued different collectives (timeout {self._timeout.total_seconds():g} s). "
                f"Transport error: {err}"
            )
        return dist.DistBackendError(msg)

    def _work(self, op: str, works, result, staging: _Staging | None = None) -> NeuronWork:
        finish = staging.finish if staging is not None and staging.copy_back else None
        work = NeuronWork(
            works if isinstance(works, (list, tuple)) else [works],
            result,
            finish=finish,
            op=op,
            explain=self._explain,
            keepalive=staging,
        )
        if self._coalesced is not None:
            self._coalesced.append(work)
        return work

    # --------------------------------------------------------------- reductions
    def allreduce(self, tensors: list[torch.Tensor], opts=None) -> NeuronWork:
        """All-reduce each tensor in place (any shape, any dtype gloo reduces).

        Raises:
            RuntimeError: from gloo for ``PREMUL_SUM`` or a dtype it cannot reduce.
        """
        opts = opts if opts is not None else dist.AllreduceOptions()
        if all(t.is_contiguous() for t in tensors):  # the common case: no staging
            return self._work("all_reduce", self._gloo.allreduce([cpu_alias(t) for t in tensors], opts), tensors)
        st = _Staging()
        aliases = [st.output(t, read=True) for t in tensors]
        return self._work("all_reduce", self._gloo.allreduce(aliases, opts), tensors, st)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts=None) -> NeuronWork:
        """All-reduce a list of same-dtype tensors in one transfer."""
        opts = opts if opts is not None else dist.AllreduceCoalescedOptions()
        st = _Staging()
        aliases = [st.output(t, read=True) for t in tensors]
        return self._work("all_reduce_coalesced", self._gloo.allreduce_coalesced(aliases, opts), tensors, st)

    def reduce(self, tensors: list[torch.Tensor], opts=None) -> NeuronWork:
        """Reduce into ``tensors[0]`` of rank ``opts.rootRank`` (others' tensors are scratch)."""
        opts = opts if opts is not None else dist.ReduceOptions()
        st = _Staging()
        aliases = [st.output(t, read=True) for t in tensors]
        return self._work("reduce", self._gloo.reduce(aliases, opts), tensors, st)

    def reduce_scatter(self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts=None):
        """Reduce ``input_lists[0][i]`` over ranks into rank i's ``outputs[0]``."""
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        st = _Staging()
        outs = [st.output(t, read=False) for t in outputs]
        ins = [[st.input(t) for t in lst] for lst in input_lists]
        return self._work("reduce_scatter", self._gloo.reduce_scatter(outs, ins, opts), outputs, st)

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor, opts=None) -> NeuronWork:
        """``reduce_scatter_tensor``: input ``(size·n, ...)`` → output ``(n, ...)``, chunk = rank."""
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        st = _Staging()
        out, inp = st.output(output, read=False), st.input(input)
        return self._work("reduce_scatter_tensor", self._gloo._reduce_scatter_base(out, inp, opts), [output], st)

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None) -> NeuronWork:
        """Several ``reduce_scatter_tensor`` in one handle."""
        return self._many(
            "reduce_scatter_tensor_coalesced",
            [self.reduce_scatter_single(o, i, opts) for o, i in zip(outputs, inputs, strict=True)],
        )

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # ----------------------------------------------------------------- gathers
    def allgather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts=None):
        """``all_gather`` (lists): ``output_lists[0][r]`` ← rank r's ``inputs[0]``."""
        opts = opts if opts is not None else dist.AllgatherOptions()
        st = _Staging()
        outs = [[st.output(t, read=False) for t in lst] for lst in output_lists]
        ins = [st.input(t) for t in inputs]
        flat = [t for lst in output_lists for t in lst]
        return self._work("all_gather", self._gloo.allgather(outs, ins, opts), flat, st)

    def allgather_coalesced(self, output_lists, inputs, opts=None) -> NeuronWork:
        """``all_gather_coalesced``: one ``all_gather`` per input tensor, one handle."""
        opts = opts if opts is not None else dist.AllgatherOptions()
        st = _Staging()
        outs = [[st.output(t, read=False) for t in lst] for lst in output_lists]
        ins = [st.input(t) for t in inputs]
        flat = [t for lst in output_lists for t in lst]
        return self._work("all_gather_coalesced", self._gloo.allgather_coalesced(outs, ins, opts), flat, st)

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts=None) -> NeuronWork:
        """``all_gather_into_tensor``: input ``(n, ...)`` → output ``(size·n, ...)`` in rank order."""
        opts = opts if opts is not None else dist.AllgatherOptions()
        st = _Staging()
        out, inp = st.output(output, read=False), st.input(input)
        return self._work("all_gather_into_tensor", self._gloo._allgather_base(out, inp, opts), [output], st)

    _allgather_base = all_gather_single

    def all_gather_single_coalesced(self, outputs, inputs, opts=None) -> NeuronWork:
        """Several ``all_gather_into_tensor`` in one handle."""
        return self._many(
            "all_gather_into_tensor_coalesced",
            [self.all_gather_single(o, i, opts) for o, i in zip(outputs, inputs, strict=True)],
        )

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def gather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts=None):
        """``gather``: on root ``output_lists[0][r]`` ← rank r's ``inputs[0]`` (empty elsewhere)."""
        opts = opts if opts is not None else dist.GatherOptions()
        st = _Staging()
        outs = [[st.output(t, read=False) for t in lst] for lst in output_lists]
        ins = [st.input(t) for t in inputs]
        flat = [t for lst in output_lists for t in lst]
        return self._work("gather", self._gloo.gather(outs, ins, opts), flat, st)

    def scatter(self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts=None):
        """``scatter``: rank r's ``outputs[0]`` ← root's ``input_lists[0][r]``."""
        opts = opts if opts is not None else dist.ScatterOptions()
        st = _Staging()
        outs = [st.output(t, read=False) for t in outputs]
        ins = [[st.input(t) for t in lst] for lst in input_lists]
        return self._work("scatter", self._gloo.scatter(outs, ins, opts), outputs, st)

    def broadcast(self, tensors: list[torch.Tensor], opts=None) -> NeuronWork:
        """``broadcast``: every rank's ``tensors[0]`` ← root's (``opts.rootRank``)."""
        opts = opts if opts is not None else dist.BroadcastOptions()
        st = _Staging()
        aliases = [st.output(t, read=True) for t in tensors]
        return self._work("broadcast", self._gloo.broadcast(aliases, opts), tensors, st)

    # -------------------------------------------------------------- all-to-all
    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        """``all_to_all_single``: dim-0 slices of ``input`` (sizes ``input_split_sizes``, or
        equal) go to each rank; ``output`` receives rank r's slice at the r-th offset."""
        opts = opts if opts is not None else dist.AllToAllOptions()
        st = _Staging()
        out, inp = st.output(output, read=False), st.input(input)
        work = self._gloo.alltoall_base(out, inp, list(output_split_sizes), list(input_split_sizes), opts)
        return self._work("all_to_all_single", work, [output], st)

    alltoall_base = all_to_all_single

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts=None) -> NeuronWork:
        """``all_to_all`` (lists): ``outputs[r]`` ← rank r's ``inputs[my rank]``."""
        opts = opts if opts is not None else dist.AllToAllOptions()
        st = _Staging()
        outs = [st.output(t, read=False) for t in outputs]
        ins = [st.input(t) for t in inputs]
        return self._work("all_to_all", self._gloo.alltoall(outs, ins, opts), outputs, st)

    # --------------------------------------------------------- point to point
    def send(self, tensors: list[torch.Tensor], dst: int, tag: int) -> NeuronWork:
        """Sends ``tensors[0]`` to group rank ``dst``."""
        st = _Staging()
        aliases = [st.input(t) for t in tensors]
        return self._work(f"send to rank {dst}", self._gloo.send(aliases, dst, tag), tensors, st)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int) -> NeuronWork:
        """Receives into ``tensors[0]`` from group rank ``src``."""
        st = _Staging()
        aliases = [st.output(t, read=False) for t in tensors]
        return self._work(f"recv from rank {src}", self._gloo.recv(aliases, src, tag), tensors, st)

    def recv_anysource(self, tensors: list[torch.Tensor], tag: int) -> NeuronWork:
        """Receives into ``tensors[0]`` from any rank (``work.source_rank()`` says which)."""
        st = _Staging()
        aliases = [st.output(t, read=False) for t in tensors]
        return self._work("recv from any rank", self._gloo.recv_anysource(aliases, tag), tensors, st)

    # ---------------------------------------------------------- synchronisation
    def barrier(self, opts=None) -> NeuronWork:
        """Barrier of the group; ``device_ids`` are accepted and ignored (gloo needs none)."""
        gloo_opts = dist.BarrierOptions()
        if opts is not None:
            gloo_opts.timeout = opts.timeout
        return self._work("barrier", self._gloo.barrier(gloo_opts), [])

    def _many(self, op: str, works: list[NeuronWork]) -> NeuronWork:
        """One handle over several of this group's works (each finishes its own copies)."""
        if self._coalesced is not None:
            # The parts are already recorded; record the umbrella instead.
            del self._coalesced[-len(works):]
        inner = [w for work in works for w in work._works]
        result = [t for work in works for t in work._result]

        def finish() -> None:
            for work in works:
                work._complete()

        return self._work(op, inner, result, _FinishAll(finish))

    def _start_coalescing(self, device: torch.device) -> None:
        """Starts recording works for :meth:`_end_coalescing` (each collective is issued at once)."""
        if self._coalesced is not None:
            raise RuntimeError("'neuron' process group: coalescing is already active on this group")
        self._coalesced = []

    def _end_coalescing(self, device: torch.device) -> NeuronWork:
        """One handle over every work issued since :meth:`_start_coalescing`."""
        works, self._coalesced = self._coalesced or [], None
        return self._many("coalesced", works)

    # --------------------------------------------------------------- lifecycle
    def set_timeout(self, timeout: timedelta) -> None:
        """Changes the bound on later collectives of this group."""
        self._timeout = timeout
        self._gloo._set_default_timeout(timeout)

    def shutdown(self) -> None:
        """Releases the gloo transport (``destroy_process_group``)."""
        if self._owns_heartbeat:
            health.stop()
        self._gloo.shutdown()

    def abort(self) -> None:
        """Aborts in-flight transfers (``destroy_process_group`` after a failure)."""
        if self._owns_heartbeat:
            health.stop()
        self._gloo.abort()


class _FinishAll:
    """A staging stand-in whose ``finish`` completes several works."""

    __slots__ = ("finish", "copy_back")

    def __init__(self, finish) -> None:
        self.finish = finish
        self.copy_back = True
