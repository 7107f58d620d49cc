"""``nki.collectives`` (current front end): collectives over a replica group of ranks.

The simulator runs one rank (one logical NeuronCore, one or two physical cores): a collective whose
group holds only this rank is simulated (each destination receives its source, the collective of one
participant); a group of several ranks raises ``NotImplementedError`` naming the API (see
:mod:`torch_neuronx.nki.instructions.sync`). ``rank_id()`` is 0.
"""
from __future__ import annotations

from typing import Any

from ..instructions import NkiInstruction, ReplicaGroup, collective
from ..instructions import rank_id as _rank_id

__all__ = ["ReplicaGroup", "all_reduce", "all_gather", "all_gather_v", "reduce_scatter", "all_to_all",
           "all_to_all_v", "collective_permute", "collective_permute_implicit",
           "collective_permute_implicit_reduce", "collective_permute_implicit_current_processing_rank_id",
           "rank_id"]


def rank_id(name: str | None = None) -> int:
    """This rank's id (0: the simulator runs one rank)."""
    _ = name
    return _rank_id()


def all_reduce(srcs: Any, dsts: Any, replica_group: Any, op: Any, priority: Any = None,
               name: str | None = None) -> NkiInstruction:
    """All-reduce of ``srcs`` into ``dsts`` over ``replica_group`` (op: nl.add / minimum / maximum)."""
    return collective("all_reduce", srcs, dsts, replica_group, op=op, name=name)


def all_gather(srcs: Any, dsts: Any, replica_group: Any, collective_dim: int, priority: Any = None,
               name: str | None = None) -> NkiInstruction:
    """All-gather along ``collective_dim``."""
    return collective("all_gather", srcs, dsts, replica_group, collective_dim=collective_dim, name=name)


def reduce_scatter(srcs: Any, dsts: Any, replica_group: Any, collective_dim: int, op: Any, priority: Any = None,
                   name: str | None = None) -> NkiInstruction:
    """Reduce-scatter along ``collective_dim``."""
    return collective("reduce_scatter", srcs, dsts, replica_group, op=op, collective_dim=collective_dim, name=name)


def all_to_all(srcs: Any, dsts: Any, replica_group: Any, collective_dim: int, priority: Any = None,
               name: str | None = None) -> NkiInstruction:
    """All-to-all along ``collective_dim``."""
    return collective("all_to_all", srcs, dsts, replica_group, collective_dim=collective_dim, name=name)


def all_gather_v(srcs: Any, dsts: Any, replica_group: Any, metadata_tensor: Any, recv_counts_known: bool = False,
                 has_rdispls: bool = False, priority: Any = None, name: str | None = None) -> NkiInstruction:
    """Variable-length all-gather: not simulated.

    Raises:
        NotImplementedError: always (its metadata tensor layout is device-specific).
    """
    raise NotImplementedError("nki.collectives.all_gather_v is not supported by the torch_neuronx NKI simulator")


def all_to_all_v(srcs: Any, dsts: Any, replica_group: Any, metadata_tensor: Any, recv_counts_known: bool = False,
                 has_rdispls: bool = False, priority: Any = None, name: str | None = None) -> NkiInstruction:
    """Variable-length all-to-all: not simulated.

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("nki.collectives.all_to_all_v is not supported by the torch_neuronx NKI simulator")


def collective_permute(srcs: Any, dsts: Any, source_target_pairs: Any, priority: Any = None,
                       name: str | None = None) -> NkiInstruction:
    """Permutation between ranks: simulated when every pair is (0, 0).

    Raises:
        NotImplementedError: pairs involving other ranks.
    """
    pairs = [tuple(p) for p in source_target_pairs]
    if any(p != (0, 0) for p in pairs):
        raise NotImplementedError(f"nki.collectives.collective_permute with pairs {pairs}: the torch_neuronx NKI "
                                  "simulator runs one rank")
    return collective("collective_permute", srcs, dsts, [[0]], name=name)


def collective_permute_implicit(srcs_by_channel: Any, dsts_by_channel: Any, replica_group: Any,
                                channel_ids: Any = (0,), priority: Any = None,
                                name: str | None = None) -> NkiInstruction:
    """Ring permutation over ``replica_group`` (one rank: a copy)."""
    srcs = [s for ch in srcs_by_channel for s in (ch if isinstance(ch, (list, tuple)) else [ch])]
    dsts = [d for ch in dsts_by_channel for d in (ch if isinstance(ch, (list, tuple)) else [ch])]
    return collective("collective_permute_implicit", srcs, dsts, replica_group, name=name)


def collective_permute_implicit_reduce(srcs0_by_channel: Any, srcs1_by_channel: Any, dsts_by_channel: Any,
                                       replica_group: Any, op: Any, channel_ids: Any = (0,), priority: Any = None,
                                       name: str | None = None) -> NkiInstruction:
    """Ring permutation with a reduction: not simulated.

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("nki.collectives.collective_permute_implicit_reduce is not supported by the "
                              "torch_neuronx NKI simulator")


def collective_permute_implicit_current_processing_rank_id(iteration_id: Any, replica_group: Any,
                                                           channel_id: int = 0, name: str | None = None) -> int:
    """The rank whose data this rank processes at ``iteration_id`` of a ring (one rank: 0)."""
    groups = replica_group.groups if isinstance(replica_group, ReplicaGroup) else replica_group
    if groups and len(groups[0]) > 1:
        raise NotImplementedError("nki.collectives.collective_permute_implicit_current_processing_rank_id over "
                                  "several ranks: the torch_neuronx NKI simulator runs one rank")
    return 0
