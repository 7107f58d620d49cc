"""Synchronisation, communication and registers: ``core_barrier``, ``sendrecv``, the virtual-register
instructions, and the collectives of ``nki.collectives``.

``core_barrier`` / ``sendrecv`` work between the two NeuronCores of a logical NeuronCore (LNC=2,
NeuronCore-v3+; ``nki.isa`` pages: "send_to_rank and recv_from_rank must be either 0 or 1",
"Currently only cores=(0, 1) is supported"): the simulator runs both programs and hands control to the
other core at each synchronisation (:class:`~torch_neuronx.nki.simulator.Launch`).

Collectives (``nki.collectives``) work on a replica group of *ranks* (logical NeuronCores of several
devices). The simulator runs one rank, so a collective over a group holding only this rank is
simulated (its result is its input: all_reduce, all_gather, ... of one participant); a group of more
ranks raises ``NotImplementedError`` naming the API.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import cost_model, dtypes
from ..context import current
from ..errors import err_core_barrier_mismatch, err_invalid_instruction_argument, err_unsupported_dtype
from ..ops import op_name
from ..tile import NkiTensor, is_tile
from .common import NkiInstruction, VirtualRegister, free_size, issue, operand, require_generation, samep
from .dma import dma_cost

__all__ = ["core_barrier", "sendrecv", "register_alloc", "register_move", "register_load", "register_store",
           "ReplicaGroup", "collective", "rank_id"]


def core_barrier(data: NkiTensor, cores: Any, *, engine: Any = None, name: str | None = None) -> NkiInstruction:
    """Wait until every core of ``cores`` (``(0, 1)`` with LNC=2) reaches the barrier on ``data`` (any
    tile; NeuronCore-v3+). ``cores=(0,)`` / ``(0, 1)`` in a one-core launch is a no-op.

    Raises:
        err_core_barrier_mismatch: cores outside the launch, or a deadlock.
    """
    sim = current()
    api = "core_barrier"
    cs = tuple(int(c) for c in (cores if isinstance(cores, (tuple, list)) else (cores,)))
    if sim.launch is not None and sim.launch.lnc > 1:
        require_generation(api, 3)
    if not is_tile(data):
        raise err_invalid_instruction_argument(f"'{api}': data must be a tensor, got {type(data).__name__}")
    # The nki.isa.core_barrier page asks for "data in shared HBM", but AWS's tested nki-library kernels
    # (bwmm_shard_on_I) synchronize on an SBUF tile, which AWS's compiler accepts: so is any tile here.
    if sim.launch is None or sim.launch.lnc == 1:
        if any(c not in (0, 1) for c in cs):
            raise err_core_barrier_mismatch(f"'{api}': cores={cs}")
    else:
        sim.barrier(cs, api)
    with sim.instruction(name or api, "gpsimd", cost_model.GPSIMD_START):
        pass
    return issue(sim)


def sendrecv(src: NkiTensor, dst: NkiTensor, send_to_rank: int, recv_from_rank: int, pipe_id: int, *,
             dma_engine: Any = None, name: str | None = None) -> NkiInstruction:
    """Send ``src`` to core ``send_to_rank`` and receive into ``dst`` what core ``recv_from_rank``
    sends, both cores of an LNC=2 logical NeuronCore (SBUF tiles of the same dtype and shape).

    Raises:
        err_invalid_instruction_argument: ranks not 0/1, shapes or dtypes differ.
        err_core_barrier_mismatch: the partner never sends (deadlock).
    """
    sim = current()
    api = "sendrecv"
    require_generation(api, 3)
    for r in (send_to_rank, recv_from_rank):
        if int(r) not in (0, 1):
            raise err_invalid_instruction_argument(f"'{api}': ranks must be 0 or 1, got {r}")
    p = operand(src, api, "src", ("sbuf",))
    samep(api, src=p, dst=operand(dst, api, "dst", ("sbuf",)))
    if src.dtype != dst.dtype or free_size(src.shape) != free_size(dst.shape):
        raise err_invalid_instruction_argument(f"'{api}': src {src.describe()} and dst {dst.describe()} must match "
                                               "in dtype and shape")
    me = sim.core.index
    nbytes = src.size * dtypes.itemsize(src.dtype)
    busy, lat = dma_cost(nbytes)
    launch = sim.launch
    with sim.instruction(name or api, "dma", busy_ns=busy, latency_ns=lat) as ins:
        vals = ins.read(src, raw=True).copy()
        if launch is None:
            if int(send_to_rank) != me or int(recv_from_rank) != me:
                raise err_core_barrier_mismatch(f"'{api}': no other core in this run")
            got = vals
        else:
            launch.send(sim, (me, int(send_to_rank), int(pipe_id)), vals)
            got = launch.recv(sim, (int(recv_from_rank), me, int(pipe_id)), api)
        ins.write(dst, got.reshape(dst.shape))
    sim.timeline.dma_bytes += nbytes
    return issue(sim)


def register_alloc(x: int | None = None) -> VirtualRegister:
    """A new virtual register, holding ``x`` (0 when None)."""
    return VirtualRegister(x)


def register_move(dst: VirtualRegister, src: Any) -> None:
    """``dst = src`` (an int or another register)."""
    if not isinstance(dst, VirtualRegister):
        raise err_invalid_instruction_argument(f"register_move: dst must be a register, got {dst!r}")
    dst.value = int(src.get() if isinstance(src, VirtualRegister) else src)


def register_load(dst: VirtualRegister, src: NkiTensor) -> NkiInstruction:
    """Load the single element of ``src`` (HBM or SBUF) into register ``dst``."""
    sim = current()
    if not isinstance(dst, VirtualRegister) or not is_tile(src) or src.size != 1:
        raise err_invalid_instruction_argument("register_load(dst=register, src=a one-element tensor)")
    # the Sync engine's register operations are ordered by their data but not timed (no cost-model term)
    with sim.instruction("register_load", None, 0) as ins:
        v = ins.read(src, raw=True)
    dst.value = int(np.asarray(dtypes.to_f32(v, src.dtype) if dtypes.is_float(src.dtype) else v).reshape(-1)[0])
    return issue(sim)


def register_store(dst: NkiTensor, src: VirtualRegister) -> NkiInstruction:
    """Store register ``src`` into the one-element tensor ``dst``."""
    sim = current()
    if not is_tile(dst) or dst.size != 1 or not isinstance(src, VirtualRegister):
        raise err_invalid_instruction_argument("register_store(dst=a one-element tensor, src=register)")
    with sim.instruction("register_store", None, 0) as ins:
        ins.write(dst, np.asarray(src.get()).reshape(dst.shape))
    return issue(sim)


class ReplicaGroup:
    """``nki.collectives.ReplicaGroup``: groups of ranks taking part in a collective (lists of rank
    ids; sub-groups must not overlap)."""

    def __init__(self, groups: Any = None, *args: Any, **kwargs: Any):
        g = groups if groups is not None else kwargs.pop("replica_groups", kwargs.pop("groups", [[0]]))
        if args or kwargs:
            raise TypeError(f"ReplicaGroup() got unexpected arguments {list(kwargs) or args}")
        g = [list(x) for x in g] if g and isinstance(g[0], (list, tuple)) else [list(g)]
        self.groups = g

    def size(self) -> int:
        return len(self.groups[0]) if self.groups else 1

    def __repr__(self) -> str:
        return f"ReplicaGroup({self.groups})"


def rank_id() -> int:
    """This rank's id (the simulator runs rank 0)."""
    current()
    return 0


def collective(api: str, srcs: Any, dsts: Any, replica_group: Any, op: Any = None, collective_dim: int = 0,
               name: str | None = None) -> NkiInstruction:
    """A collective over ``replica_group``: simulated when the group holds only this rank (each ``dst``
    receives its ``src``: the reduction / gather / scatter of one participant).

    Raises:
        NotImplementedError: a group of several ranks (the simulator runs one rank).
    """
    sim = current()
    groups = replica_group.groups if isinstance(replica_group, ReplicaGroup) else (
        [list(g) for g in replica_group] if replica_group else [[0]])
    mine = next((g for g in groups if 0 in g), groups[0] if groups else [0])
    if len(mine) > 1:
        raise NotImplementedError(
            f"nki.collectives.{api} over a replica group of {len(mine)} ranks {mine}: the torch_neuronx NKI "
            "simulator runs one rank (one logical NeuronCore); only single-rank groups are simulated")
    srcs = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    dsts = list(dsts) if isinstance(dsts, (list, tuple)) else [dsts]
    if len(srcs) != len(dsts):
        raise err_invalid_instruction_argument(f"'{api}': {len(srcs)} srcs and {len(dsts)} dsts")
    if op is not None and op_name(op) not in ("add", "minimum", "maximum"):
        raise err_invalid_instruction_argument(f"'{api}': op {op_name(op)!r}; one of nl.add, minimum, maximum")
    nbytes = sum(s.size * dtypes.itemsize(s.dtype) for s in srcs)
    busy, lat = dma_cost(nbytes)
    with sim.instruction(name or api, "dma", busy_ns=busy, latency_ns=lat) as ins:
        for s, d in zip(srcs, dsts, strict=False):
            if s.size != d.size:
                raise err_invalid_instruction_argument(f"'{api}': with one rank, dst {d.describe()} must have the "
                                                       f"size of src {s.describe()}")
            if s.dtype != d.dtype:
                raise err_unsupported_dtype(f"'{api}': src and dst dtypes differ")
            ins.write(d, ins.read(s, raw=True).reshape(d.shape))
    _ = collective_dim
    return issue(sim)
