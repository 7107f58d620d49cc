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

Dispatch modes: while a ``TorchDispatchMode`` is active (``CommDebugMode``, ...), a collective of
``neuron`` tensors is dispatched as the ``c10d::*`` op a C++ group's method dispatches, whose ``neuron``
kernel then runs the method (:mod:`.c10d_ops`), so the mode sees it as it sees gloo's.

Failures: a collective whose peer died or timed out raises
``torch.distributed.DistBackendError`` naming the rank(s) that stopped
(:mod:`.health`), after at most the group's timeout.
"""
from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import AllgatherOptions  # not re-exported by torch.distributed

from .. import _C
from ..estimate import active as _estimate
from . import c10d_ops, health
from .aliases import GLOO_DTYPES, byte_carriers, check_reducible, contiguous_aliases, cpu_alias
from .work import NeuronWork

BACKEND_NAME = "neuron"

#: A collective's tensor argument: one tensor, a list, or a list of lists (per-rank lists).
_Tensors = torch.Tensor | Sequence["_Tensors"]


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

    def inputs(self, tensors: _Tensors) -> _Tensors:
        """:meth:`input` over a tensor, a list of tensors or a list of lists."""
        if isinstance(tensors, torch.Tensor):
            return self.input(tensors)
        return [self.inputs(t) for t in tensors]

    def outputs(self, tensors: _Tensors, read: bool) -> _Tensors:
        """:meth:`output` over a tensor, a list of tensors or a list of lists."""
        if isinstance(tensors, torch.Tensor):
            return self.output(tensors, read)
        return [self.outputs(t, read) for t in tensors]

    def finish(self) -> None:
        """Copies each staged output back into its non-contiguous target."""
        for target, staged in self.copy_back:
            target.copy_(staged)


def _flat(tensors: _Tensors) -> list[torch.Tensor]:
    """The tensors of a tensor, a list of tensors or a list of lists, in order."""
    if isinstance(tensors, torch.Tensor):
        return [tensors]
    out: list[torch.Tensor] = []
    for item in tensors:
        if isinstance(item, torch.Tensor):
            out.append(item)
        else:
            out.extend(_flat(item))
    return out


class _WeakMethod:
    """Calls method ``name`` of a process group held by weak reference.

    The group's C++ backend (``csrc/distributed/NeuronBackend.h``) keeps its Python callbacks; a
    bound method would keep the group alive from C++, where the garbage collector cannot see the
    cycle (group -> backend -> method -> group), and no group would ever be freed.

    Raises:
        RuntimeError: the group was already freed.
    """

    __slots__ = ("_group", "_name")

    def __init__(self, group: NeuronProcessGroup, name: str) -> None:
        self._group = weakref.ref(group)
        self._name = name

    def __call__(self, *args: Any) -> Any:
        group = self._group()
        if group is None:
            raise RuntimeError(f"'neuron' process group: {self._name} called after the group was freed")
        return getattr(group, self._name)(*args)


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
        # The (rank, size) constructor of the C++ class; torch's stubs list only (store, rank, size).
        super().__init__(rank, size)  # type: ignore[call-arg]
        # torch's stubs omit the collectives ProcessGroupGloo binds (allreduce, ...): typed Any.
        self._gloo: Any = dist.ProcessGroupGloo(store, rank, size, timeout)
        self._gloo._set_sequence_number_for_group()
        self._timeout = timeout
        self._global_ranks = list(global_ranks) if global_ranks else list(range(size))
        self._name = ""
        self._desc = ""
        self._coalesced: list[NeuronWork] | None = None
        self._owns_heartbeat = False
        self._serves_cpu = False
        # The group's device type, as c10d records it for gloo ("cpu") and NCCL ("cuda"). c10d
        # returns a Python ProcessGroup from the creator as it is, without registering a device,
        # so ``_device_types`` would stay empty and everything that asks the group for its device
        # (``_get_pg_default_device``: FSDP's sharded and optimizer state dicts, the distributed
        # checkpoint planners, ``set_model_state_dict(broadcast_from_rank0=True)``; the object
        # collectives) would fail or fall back to the CPU. The backend registered is the C++
        # ``NeuronBackend`` (``csrc/distributed/NeuronBackend.h``), for ``neuron`` and ``cpu``
        # (:attr:`_device_types` reports ``cpu`` only after :meth:`serve_cpu_as_gloo`): ``allreduce``
        # is left to the C++ base class, whose ``c10d::allreduce_`` kernel calls the backend, which
        # runs the fast path or :meth:`_allreduce_general`. The other collectives are the Python
        # methods below.
        _C._install_neuron_backend(self, self._gloo, rank, size, _WeakMethod(self, "_allreduce_general"),
                                   _WeakMethod(self, "_explain"), _estimate)

    def serve_cpu_as_gloo(self) -> None:
        """Lists device ``cpu`` in this group's :attr:`_device_types` beside ``neuron``.

        What c10d does for a backend string mapping ``cpu`` to ``gloo`` (``"cpu:gloo,neuron:neuron"``):
        ``torch.distributed.checkpoint.async_save`` requires ``cpu`` there, and object collectives
        then run on CPU tensors (``_get_object_coll_device``), as with ``"cpu:gloo,cuda:nccl"``. CPU
        tensors passed to this group's collectives go to the same gloo transport with or without it.
        """
        self._serves_cpu = True

    @property
    def _device_types(self) -> list[torch.device]:  # (a C++ property of the base class)
        """The devices c10d sees this group serve: ``neuron``, and ``cpu`` after :meth:`serve_cpu_as_gloo`.

        The C++ list also holds ``cpu`` always (the backend is registered for CPU tensors, which
        this group takes as gloo does); reporting it for a plain ``"neuron"`` group would move its
        object collectives to the CPU and tell ``async_save`` a CPU backend was asked for.
        """
        devices: list[torch.device] = super()._device_types
        return [d for d in devices if d.type != "cpu" or self._serves_cpu]

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

    def _get_backend(self, device: Any) -> Any:  # (a C++ method on the base class)
        """Refuses, with the reason and what to do instead: this Python process group's one C++
        backend (``NeuronBackend``) serves ``all_reduce`` only, its other collectives being the
        Python methods here, so ``init_process_group("neuron", device_id=...)``, ``split_group``
        and other callers of ``ProcessGroup._get_backend`` are not supported.

        Raises:
            RuntimeError: always.
        """
        raise RuntimeError(
            f"the 'neuron' process group has no per-device c10d backend for {device}: "
            f"init_process_group('neuron', device_id=...) and dist.split_group are not supported. "
            f"Bind each rank to its NeuronCore with torch.neuron.set_device(local_rank) (torchrun's "
            f"LOCAL_RANK already selects it) and create sub-groups with dist.new_group(ranks) or "
            f"init_device_mesh('neuron', ...)."
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
        elif "timed out" in str(err).lower():
            msg = (
                f"{where} although every rank of the group is alive: a rank is stuck or the ranks "
                f"issued different collectives (timeout {self._timeout.total_seconds():g} s). "
                f"Transport error: {err}"
            )
        else:  # not a timeout: the transfer itself failed, at once
            msg = (
                f"{where}: {err}. Every rank of the group is alive; check that every rank issued "
                f"the same collective with tensors of the same size and dtype."
            )
        return dist.DistBackendError(msg)

    def _work(
        self,
        op: str,
        works: Sequence[dist.Work],
        result: list[torch.Tensor],
        *,
        finish: Callable[[], None] | None = None,
        keepalive: object = None,
    ) -> NeuronWork:
        """The handle of ``op`` over gloo ``works`` (recorded while coalescing)."""
        work = NeuronWork(works, result, finish=finish, op=op, explain=self._explain, keepalive=keepalive)
        if self._coalesced is not None:
            self._coalesced.append(work)
        return work

    def _collective(
        self,
        op: str,
        gloo_fn: Callable[..., dist.Work],
        *,
        outputs: _Tensors | None = None,
        inputs: _Tensors | None = None,
        read: bool = False,
        extra: tuple[Any, ...] = (),
        opts: Any = None,
        opts_type: Callable[[], Any] | None = None,
        result: list[torch.Tensor] | None = None,
        reduces: bool = False,
    ) -> NeuronWork:
        """Runs one collective on CPU aliases of its tensors and returns its handle.

        Calls ``gloo_fn(output aliases, input aliases, *extra, opts)``, leaving out the outputs or
        inputs when None and ``opts`` when ``opts_type`` is None (``opts`` defaults to
        ``opts_type()``). ``outputs`` and ``inputs`` are a tensor, a list or a list of lists;
        ``read`` says the collective also reads its outputs (in-place reductions). Non-contiguous
        outputs are staged and copied back when the work completes. The future resolves to
        ``result`` (default: the outputs, flattened). ``reduces``: the collective does arithmetic
        on the data, so a dtype the transport cannot reduce is refused (``TypeError``) before any
        transfer; a collective that only moves data carries such a tensor (float8, int16, ...) as
        the same bytes in a dtype the transport moves.

        Raises:
            TypeError: a reduction of a float8/int16/uint16/uint32/uint64 tensor (see
                :func:`.aliases.check_reducible`).
            RuntimeError: a reduction with ``ReduceOp.PREMUL_SUM``, which the gloo transport lacks
                (gloo raises RuntimeError too; the message names the fix).
            TypeError: ``ReduceOp.AVG`` of an integer or bool tensor (gloo divides in floating
                point and fails inside the transfer, after the ranks have synchronised).
        """
        if reduces:
            check_reducible(op, outputs if outputs is not None else [])
            # (one read: each read of ``reduceOp`` builds a new Python ReduceOp, ~0.5 µs)
            reduce_op = getattr(opts, "reduceOp", None) if opts is not None else None
            if reduce_op == dist.ReduceOp.PREMUL_SUM:
                raise RuntimeError(
                    f"'neuron' process group: {op} with ReduceOp.PREMUL_SUM is not supported (its gloo "
                    f"transport has no pre-multiplied sum). Multiply the tensor by the factor and use "
                    f"ReduceOp.SUM (or ReduceOp.AVG for 1/world_size)."
                )
            if reduce_op == dist.ReduceOp.AVG:
                integral = sorted({str(t.dtype) for t in _flat(outputs if outputs is not None else [])
                                   if not (t.is_floating_point() or t.is_complex())})
                if integral:
                    raise TypeError(
                        f"'neuron' process group: {op} with ReduceOp.AVG cannot average {', '.join(integral)} "
                        f"tensors (its gloo transport divides the sum in floating point and cannot write "
                        f"the quotient back into an integer tensor). Average a floating-point copy "
                        f"(t.float()), or reduce with ReduceOp.SUM and divide by the world size yourself "
                        f"(t // world_size to truncate)."
                    )
        # Contiguous tensors (the usual case) are aliased as they are; staging only when needed.
        st: _Staging | None = None
        args: list[Any] = []
        out_aliases: Any
        in_aliases: Any
        if outputs is not None:
            out_aliases = contiguous_aliases(outputs)
            if out_aliases is None:
                st = _Staging()
                out_aliases = st.outputs(outputs, read)
            args.append(out_aliases)
        if inputs is not None:
            in_aliases = contiguous_aliases(inputs)
            if in_aliases is None:
                st = st or _Staging()
                in_aliases = st.inputs(inputs)
            args.append(in_aliases)
        if not reduces:
            for i, a in enumerate(args):
                if any(t.dtype not in GLOO_DTYPES for t in _flat(a)):
                    args[i] = byte_carriers(a)
        if extra:
            args.extend(extra)
        if opts_type is not None:
            args.append(opts if opts is not None else opts_type())
        transfer = gloo_fn(*args)
        if _estimate.current is not None:   # torch_neuronx.estimate is recording: report the collective
            peer = extra[0] if op.startswith(("send", "recv from rank")) else None
            _estimate.current.record_collective(op, outputs, inputs, self._global_ranks, self._name, peer)
        if result is None:
            result = _flat(outputs) if outputs is not None else []
        if st is None:
            work = NeuronWork([transfer], result, None, op, self._explain)
        else:
            work = NeuronWork([transfer], result, st.finish if st.copy_back else None, op, self._explain,
                              st if st.copy_back or st.keep else None)
        if self._coalesced is not None:
            self._coalesced.append(work)
        return work

    # The collectives below override the C++ virtuals (tensors..., opts); torch's stubs describe the
    # Python bindings' overloads instead, hence the ignored [override] checks.

    # --------------------------------------------------------------- reductions
    # ``allreduce`` is a C++ method (set below the class, ``csrc/distributed/AllreduceMethod.h``),
    # not a Python override: for C++ callers (DDP's reducer) the C++ base class's method runs, which
    # dispatches ``c10d::allreduce_``, whose kernel calls this group's C++ backend (``NeuronBackend``);
    # Python callers (``dist.all_reduce``) reach that backend directly, or, under a dispatch mode and
    # for the other Python forms (``pg.allreduce(tensor[, op])``), through the same dispatch. The
    # backend runs the fast path for one contiguous tensor of a dtype gloo reduces with SUM, and
    # :meth:`_allreduce_general` for the rest. Dispatch modes see the op as they see gloo's.
    def _allreduce_general(self, tensors: list[torch.Tensor], opts: dist.AllreduceOptions) -> NeuronWork:
        """All-reduce each tensor in place (any shape, any dtype gloo reduces): what the C++ backend
        does not do itself (other reductions, several or non-contiguous tensors, refusals, calls
        while coalescing or while ``torch_neuronx.estimate`` records). Called by that backend only,
        after the op was dispatched (so it is not dispatched again).

        Returns:
            The handle (the backend returns it wrapped in a C++ ``Work`` that forwards to it).

        Raises:
            RuntimeError: for ``PREMUL_SUM``, naming the fix.
            TypeError: for a dtype the transport cannot reduce (float8, int16, uint16/32/64), and
                for a tensor on a device other than ``neuron`` or ``cpu``.
        """
        return self._collective("all_reduce", self._gloo.allreduce, outputs=tensors, read=True,
                                opts=opts, opts_type=dist.AllreduceOptions, reduces=True)

    def allreduce_coalesced(
        self, tensors: list[torch.Tensor], opts: dist.AllreduceCoalescedOptions | None = None
    ) -> NeuronWork:
        """All-reduce a list of same-dtype tensors in one transfer."""
        if c10d_ops.active(tensors):
            return c10d_ops.dispatch("allreduce_coalesced_", self, tensors, opts)
        return self._collective("all_reduce_coalesced", self._gloo.allreduce_coalesced, outputs=tensors,
                                read=True, opts=opts, opts_type=dist.AllreduceCoalescedOptions, reduces=True)

    def reduce(  # type: ignore[override]
        self, tensors: list[torch.Tensor] | torch.Tensor, opts: dist.ReduceOptions | int | None = None,
        op: dist.ReduceOp | None = None,
    ) -> NeuronWork:
        """Reduce into ``tensors[0]`` of rank ``opts.rootRank`` (others' tensors are scratch).

        Also takes the C++ group's Python form ``reduce(tensor, root, op=ReduceOp.SUM)``.
        """
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if isinstance(opts, int):
            root, opts = opts, dist.ReduceOptions()
            opts.rootRank = root
            if op is not None:
                opts.reduceOp = op
        if c10d_ops.active(tensors):
            return c10d_ops.dispatch("reduce_", self, tensors, opts)
        return self._collective("reduce", self._gloo.reduce, outputs=tensors, read=True,
                                opts=opts, opts_type=dist.ReduceOptions, reduces=True)

    def reduce_scatter(  # type: ignore[override]
        self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]],
        opts: dist.ReduceScatterOptions | None = None,
    ) -> NeuronWork:
        """Reduce ``input_lists[0][i]`` over ranks into rank i's ``outputs[0]``."""
        if c10d_ops.active(outputs, input_lists):
            return c10d_ops.dispatch("reduce_scatter_", self, outputs, input_lists, opts)
        return self._collective("reduce_scatter", self._gloo.reduce_scatter, outputs=outputs, inputs=input_lists,
                                opts=opts, opts_type=dist.ReduceScatterOptions, reduces=True)

    def _check_sizes(self, op: str, big: torch.Tensor, small: torch.Tensor, big_name: str) -> None:
        """The one size rule of the ``*_tensor`` collectives (NCCL's): ``big`` holds exactly
        ``size`` times the elements of ``small``, in any shape."""
        if big.numel() != self.size() * small.numel():
            raise ValueError(
                f"'neuron' process group: {op} needs the {big_name} tensor to hold world size "
                f"({self.size()}) times the elements of the other ({small.numel()}), i.e. "
                f"{self.size() * small.numel()}, got {big.numel()} (shape {tuple(big.shape)}). "
                f"Use shape ({self.size()}·n, ...) (concatenated) or ({self.size()}, n, ...) (stacked)."
            )

    def _flat_reduce_scatter(self, out: torch.Tensor, inp: torch.Tensor, opts: Any) -> dist.Work:
        # Contiguous aliases (staged if need be): any shape with the right element count works.
        return self._gloo._reduce_scatter_base(out.view(-1), inp.view(-1), opts)

    def _flat_allgather(self, out: torch.Tensor, inp: torch.Tensor, opts: Any) -> dist.Work:
        return self._gloo._allgather_base(out.view(-1), inp.view(-1), opts)

    def reduce_scatter_single(
        self, output: torch.Tensor, input: torch.Tensor, opts: dist.ReduceScatterOptions | None = None
    ) -> NeuronWork:
        """``reduce_scatter_tensor``: input ``(size·n, ...)`` or ``(size, n, ...)`` (any shape of
        ``size`` times the output's elements) → output, chunk = rank.

        Raises:
            ValueError: the input does not hold ``size`` times the output's elements.
        """
        if c10d_ops.active(output):
            return c10d_ops.dispatch("_reduce_scatter_base_", self, output, input, opts)
        self._check_sizes("reduce_scatter_tensor", input, output, "input")
        return self._collective("reduce_scatter_tensor", self._flat_reduce_scatter, outputs=output,
                                inputs=input, opts=opts, opts_type=dist.ReduceScatterOptions, reduces=True)

    _reduce_scatter_base = reduce_scatter_single  # type: ignore[assignment]

    def reduce_scatter_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
        opts: dist.ReduceScatterOptions | None = None,
    ) -> NeuronWork:
        """Several ``reduce_scatter_tensor`` in one handle."""
        if c10d_ops.active(outputs):
            return c10d_ops.dispatch("reduce_scatter_tensor_coalesced_", self, outputs, inputs, opts)
        return self._many(
            "reduce_scatter_tensor_coalesced",
            [self.reduce_scatter_single(o, i, opts) for o, i in zip(outputs, inputs, strict=True)],
        )

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced  # type: ignore[assignment]

    # ----------------------------------------------------------------- gathers
    def allgather(  # type: ignore[override]
        self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor],
        opts: AllgatherOptions | None = None,
    ) -> NeuronWork:
        """``all_gather`` (lists): ``output_lists[0][r]`` ← rank r's ``inputs[0]``.

        The ranks' tensors may differ in size (``output_lists[0][r]`` has rank r's size), as
        NCCL allows: gloo's list all-gather takes equal sizes only, so uneven lists travel as one
        ``all_to_all_single`` (this rank's input to every peer, each peer's into its output),
        waited for before the call returns.

        Raises:
            ValueError: the input's element count differs from ``output_lists[0][rank]``'s.
            TypeError: the input and outputs do not all have one dtype.
        """
        if c10d_ops.active(inputs):
            return c10d_ops.dispatch("allgather_", self, output_lists, inputs, opts)
        outs = output_lists[0] if len(output_lists) == 1 else None
        if outs is None or len({t.numel() for t in outs}) <= 1:
            return self._collective("all_gather", self._gloo.allgather, outputs=output_lists, inputs=inputs,
                                    opts=opts, opts_type=AllgatherOptions)
        mine = outs[self.rank()]
        if inputs[0].numel() != mine.numel():
            raise ValueError(
                f"'neuron' process group: all_gather of tensors of different sizes needs this rank's "
                f"input to have the size of its own output entry (output_list[{self.rank()}]: "
                f"{tuple(mine.shape)}), got {tuple(inputs[0].shape)}."
            )
        dtypes = {t.dtype for t in (*outs, inputs[0])}
        if len(dtypes) > 1:
            raise TypeError(
                f"'neuron' process group: all_gather needs one dtype for the input and every output "
                f"tensor, got {sorted(str(d) for d in dtypes)}. Cast them to one dtype first."
            )
        return self._collective("all_gather", self._uneven_allgather, outputs=outs, inputs=inputs[0],
                                opts=opts, opts_type=AllgatherOptions)

    def _uneven_allgather(self, outs: list[torch.Tensor], inp: torch.Tensor, opts: Any) -> dist.Work:
        # CPU aliases (or staged copies) of the caller's tensors: this rank's input goes to every
        # rank, rank r's input lands in outs[r].
        n = inp.numel()
        flat_in = inp.reshape(-1).repeat(self.size())
        flat_out = torch.empty(sum(t.numel() for t in outs), dtype=flat_in.dtype)
        a2a_opts = dist.AllToAllOptions()
        a2a_opts.timeout = opts.timeout
        work = self._gloo.alltoall_base(flat_out, flat_in, [t.numel() for t in outs], [n] * self.size(),
                                        a2a_opts)
        work.wait()
        for out, part in zip(outs, flat_out.split([t.numel() for t in outs]), strict=True):
            out.copy_(part.view(out.shape))
        return work

    def allgather_coalesced(
        self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor],
        opts: AllgatherOptions | None = None,
    ) -> NeuronWork:
        """``all_gather_coalesced``: one ``all_gather`` per input tensor, one handle."""
        if c10d_ops.active(inputs):
            return c10d_ops.dispatch("allgather_coalesced_", self, output_lists, inputs, opts)
        return self._collective("all_gather_coalesced", self._gloo.allgather_coalesced, outputs=output_lists,
                                inputs=inputs, opts=opts, opts_type=AllgatherOptions)

    def all_gather_single(
        self, output: torch.Tensor, input: torch.Tensor, opts: AllgatherOptions | None = None
    ) -> NeuronWork:
        """``all_gather_into_tensor``: input ``(n, ...)`` → output ``(size·n, ...)``, ``(size, n, ...)``
        or any shape of ``size`` times the input's elements, in rank order.

        Raises:
            ValueError: the output does not hold ``size`` times the input's elements.
        """
        if c10d_ops.active(input):
            return c10d_ops.dispatch("_allgather_base_", self, output, input, opts)
        self._check_sizes("all_gather_into_tensor", output, input, "output")
        return self._collective("all_gather_into_tensor", self._flat_allgather, outputs=output,
                                inputs=input, opts=opts, opts_type=AllgatherOptions)

    _allgather_base = all_gather_single

    def all_gather_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: AllgatherOptions | None = None
    ) -> NeuronWork:
        """Several ``all_gather_into_tensor`` in one handle."""
        if c10d_ops.active(inputs):
            return c10d_ops.dispatch("allgather_into_tensor_coalesced_", self, outputs, inputs, opts)
        return self._many(
            "all_gather_into_tensor_coalesced",
            [self.all_gather_single(o, i, opts) for o, i in zip(outputs, inputs, strict=True)],
        )

    allgather_into_tensor_coalesced = all_gather_single_coalesced  # type: ignore[assignment]

    def gather(  # type: ignore[override]
        self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor],
        opts: dist.GatherOptions | None = None,
    ) -> NeuronWork:
        """``gather``: on root ``output_lists[0][r]`` ← rank r's ``inputs[0]`` (empty elsewhere).

        The ranks' tensors may differ in size, as NCCL allows. gloo's gather takes equal sizes only
        and, given uneven ones, fails on the root while the other ranks wait until the timeout; a
        rank other than the root cannot see the sizes, so every gather travels as one
        ``all_to_all_single`` whose splits each rank knows (its input to the root; on the root,
        each output's size), waited for before the call returns.

        Raises:
            TypeError: the input and outputs do not all have one dtype.
        """
        if c10d_ops.active(inputs):
            return c10d_ops.dispatch("gather_", self, output_lists, inputs, opts)
        opts = opts if opts is not None else dist.GatherOptions()
        outs = output_lists[0] if output_lists else []
        self._one_dtype("gather", [*outs, *inputs])
        return self._collective("gather", self._gather_as_alltoall, outputs=outs, inputs=inputs[0], opts=opts,
                                opts_type=dist.GatherOptions)

    def _one_dtype(self, op: str, tensors: Sequence[torch.Tensor]) -> None:
        dtypes = {t.dtype for t in tensors}
        if len(dtypes) > 1:
            raise TypeError(
                f"'neuron' process group: {op} needs one dtype for every input and output tensor, "
                f"got {sorted(str(d) for d in dtypes)}. Cast them to one dtype first."
            )

    def _rooted_alltoall(self, outs: list[torch.Tensor], flat_in: torch.Tensor, send: list[int],
                         recv: list[int], timeout: timedelta) -> dist.Work:
        # One all_to_all_single with the given per-peer element counts; ``outs`` (CPU aliases or staged
        # copies of the caller's outputs, one per peer with a nonzero count) receive their parts.
        flat_out = torch.empty(sum(recv), dtype=flat_in.dtype)
        a2a_opts = dist.AllToAllOptions()
        a2a_opts.timeout = timeout
        work = self._gloo.alltoall_base(flat_out, flat_in, recv, send, a2a_opts)
        work.wait()
        parts = [part for part, n in zip(flat_out.split(recv), recv, strict=True) if n]
        for out, part in zip([o for o in outs if o.numel()], parts, strict=True):
            out.copy_(part.view(out.shape))
        return work

    def _gather_as_alltoall(self, outs: list[torch.Tensor], inp: torch.Tensor, opts: Any) -> dist.Work:
        root, size = opts.rootRank, self.size()
        send = [0] * size
        send[root] = inp.numel()
        recv = [t.numel() for t in outs] if self.rank() == root else [0] * size
        return self._rooted_alltoall(outs, inp.reshape(-1), send, recv, opts.timeout)

    def _scatter_as_alltoall(self, outs: list[torch.Tensor], ins: list[torch.Tensor], opts: Any) -> dist.Work:
        root, size = opts.rootRank, self.size()
        recv = [0] * size
        recv[root] = outs[0].numel()
        if self.rank() == root:
            send = [t.numel() for t in ins]
            flat_in = torch.cat([t.reshape(-1) for t in ins])
        else:
            send = [0] * size
            flat_in = torch.empty(0, dtype=outs[0].dtype)
        return self._rooted_alltoall(outs, flat_in, send, recv, opts.timeout)

    def scatter(  # type: ignore[override]
        self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]],
        opts: dist.ScatterOptions | None = None,
    ) -> NeuronWork:
        """``scatter``: rank r's ``outputs[0]`` ← root's ``input_lists[0][r]``.

        The tensors may differ in size per rank, as NCCL allows (gloo's scatter takes equal sizes
        only): every scatter travels as one ``all_to_all_single`` (see :meth:`gather`), waited for
        before the call returns.

        Raises:
            TypeError: the inputs and the output do not all have one dtype.
        """
        if c10d_ops.active(outputs):
            return c10d_ops.dispatch("scatter_", self, outputs, input_lists, opts)
        opts = opts if opts is not None else dist.ScatterOptions()
        ins = input_lists[0] if input_lists else []
        self._one_dtype("scatter", [*outputs, *ins])
        return self._collective("scatter", self._scatter_as_alltoall, outputs=outputs[:1], inputs=ins, opts=opts,
                                opts_type=dist.ScatterOptions)

    def broadcast(  # type: ignore[override]
        self, tensors: list[torch.Tensor] | torch.Tensor, opts: dist.BroadcastOptions | int | None = None
    ) -> NeuronWork:
        """``broadcast``: every rank's ``tensors[0]`` ← root's (``opts.rootRank``).

        Also takes the C++ group's Python form ``broadcast(tensor, root)``.
        """
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if isinstance(opts, int):
            root, opts = opts, dist.BroadcastOptions()
            opts.rootRank = root
        if c10d_ops.active(tensors):
            return c10d_ops.dispatch("broadcast_", self, tensors, opts)
        return self._collective("broadcast", self._gloo.broadcast, outputs=tensors, read=True,
                                opts=opts, opts_type=dist.BroadcastOptions)

    # -------------------------------------------------------------- all-to-all
    def all_to_all_single(  # type: ignore[override]
        self, output: torch.Tensor, input: torch.Tensor, output_split_sizes: Sequence[int],
        input_split_sizes: Sequence[int], opts: dist.AllToAllOptions | None = None,
    ) -> NeuronWork:
        """``all_to_all_single``: dim-0 slices of ``input`` (sizes ``input_split_sizes``, or
        equal) go to each rank; ``output`` receives rank r's slice at the r-th offset."""
        if c10d_ops.active(input):
            return c10d_ops.dispatch("alltoall_base_", self, output, input, output_split_sizes, input_split_sizes,
                                     opts)
        return self._collective("all_to_all_single", self._gloo.alltoall_base, outputs=output, inputs=input,
                                extra=(list(output_split_sizes), list(input_split_sizes)),
                                opts=opts, opts_type=dist.AllToAllOptions)

    alltoall_base = all_to_all_single  # type: ignore[assignment]

    def alltoall(  # type: ignore[override]
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: dist.AllToAllOptions | None = None
    ) -> NeuronWork:
        """``all_to_all`` (lists): ``outputs[r]`` ← rank r's ``inputs[my rank]``. The tensors may
        differ in size per peer (token dispatch of a mixture of experts), as NCCL allows: gloo's
        list all-to-all takes equal sizes only, so uneven lists travel as one ``all_to_all_single``
        of their concatenation with per-peer splits, waited for before the call returns.

        Raises:
            TypeError: the tensors do not all have one dtype.
        """
        if c10d_ops.active(inputs):
            return c10d_ops.dispatch("alltoall_", self, outputs, inputs, opts)
        if len({t.numel() for t in (*outputs, *inputs)}) <= 1:
            return self._collective("all_to_all", self._gloo.alltoall, outputs=outputs, inputs=inputs,
                                    opts=opts, opts_type=dist.AllToAllOptions)
        dtypes = {t.dtype for t in (*outputs, *inputs)}
        if len(dtypes) > 1:
            raise TypeError(
                f"'neuron' process group: all_to_all needs one dtype for every input and output tensor, "
                f"got {sorted(str(d) for d in dtypes)}. Cast them to one dtype first."
            )
        return self._collective("all_to_all", self._uneven_alltoall, outputs=outputs, inputs=inputs,
                                opts=opts, opts_type=dist.AllToAllOptions)

    def _uneven_alltoall(self, outs: list[torch.Tensor], ins: list[torch.Tensor], opts: Any) -> dist.Work:
        # CPU aliases (or staged copies) of the caller's tensors, one per peer.
        flat_in = torch.cat([t.reshape(-1) for t in ins])
        flat_out = torch.empty(sum(t.numel() for t in outs), dtype=flat_in.dtype)
        work = self._gloo.alltoall_base(flat_out, flat_in, [t.numel() for t in outs],
                                        [t.numel() for t in ins], opts)
        work.wait()
        for out, part in zip(outs, flat_out.split([t.numel() for t in outs]), strict=True):
            out.copy_(part.view(out.shape))
        return work

    # --------------------------------------------------------- point to point
    def send(self, tensors: list[torch.Tensor], dst: int, tag: int) -> NeuronWork:
        """Sends ``tensors[0]`` to group rank ``dst``."""
        if c10d_ops.active(tensors):
            return c10d_ops.dispatch("send", self, tensors, dst, tag)
        return self._collective(f"send to rank {dst}", self._gloo.send, inputs=tensors, extra=(dst, tag),
                                result=tensors)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int) -> NeuronWork:
        """Receives into ``tensors[0]`` from group rank ``src``."""
        if c10d_ops.active(tensors):
            return c10d_ops.dispatch("recv_", self, tensors, src, tag)
        return self._collective(f"recv from rank {src}", self._gloo.recv, outputs=tensors, extra=(src, tag))

    def recv_anysource(self, tensors: list[torch.Tensor], tag: int) -> NeuronWork:
        """Receives into ``tensors[0]`` from any rank (``work.source_rank()`` says which)."""
        if c10d_ops.active(tensors):
            return c10d_ops.dispatch("recv_any_source_", self, tensors, tag)
        return self._collective("recv from any rank", self._gloo.recv_anysource, outputs=tensors, extra=(tag,))

    # ---------------------------------------------------------- synchronisation
    def barrier(self, opts: dist.BarrierOptions | None = None) -> NeuronWork:  # type: ignore[override]
        """Barrier of the group; ``device_ids`` are accepted and ignored (gloo needs none)."""
        gloo_opts = dist.BarrierOptions()
        if opts is not None:
            gloo_opts.timeout = opts.timeout
        return self._work("barrier", [self._gloo.barrier(gloo_opts)], [])

    def _many(self, op: str, works: list[NeuronWork]) -> NeuronWork:
        """One handle over several of this group's works (each finishes its own copies)."""
        if self._coalesced is not None:
            # The parts are already recorded; record the umbrella instead.
            del self._coalesced[-len(works):]
        transfers = [t for work in works for t in work.transfers]
        result = [t for work in works for t in work.result()]

        def finish() -> None:
            for work in works:
                work.finalize()

        return self._work(op, transfers, result, finish=finish)

    def _start_coalescing(self, device: torch.device) -> None:
        """Starts recording works for :meth:`_end_coalescing` (each collective is issued at once)."""
        if self._coalesced is not None:
            raise RuntimeError("'neuron' process group: coalescing is already active on this group")
        self._coalesced = []
        _C._neuron_backend_coalescing(self, True)

    def _end_coalescing(self, device: torch.device) -> NeuronWork:
        """One handle over every work issued since :meth:`_start_coalescing`."""
        works, self._coalesced = self._coalesced or [], None
        _C._neuron_backend_coalescing(self, False)
        return self._many("coalesced", works)

    # --------------------------------------------------------------- lifecycle
    def start_heartbeat(self, store: dist.Store) -> None:
        """Starts this process's heartbeat in ``store`` (the default group's rendezvous store),
        which lets every group name a rank that stopped; :meth:`shutdown` and :meth:`abort` of
        this group stop it."""
        health.start(store, self._global_ranks[self.rank()])
        self._owns_heartbeat = True

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


_C._install_allreduce_method(NeuronProcessGroup, dist.ProcessGroup.allreduce)
