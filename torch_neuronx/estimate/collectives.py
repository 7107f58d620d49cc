"""Collectives: what a collective op moves, over which ranks, and how long it takes on Trainium.

**What** (:func:`describe`): for every ``c10d.*`` op (``torch.distributed`` calls, FSDP2),
``_c10d_functional.*`` op (DTensor, functional collectives) and ``_dtensor.shard_dim_alltoall``: the kind,
the buffer size ``S`` in nccom-test's
sense (all-reduce: the buffer; all-gather: the gathered output; reduce-scatter: the full input) and the
process group, whose global ranks ``torch.distributed.get_process_group_ranks`` gives.

**How long** (:class:`CollectiveModel`): ``t = steps x latency + factor x S / bandwidth``.

* factors are nccom-test's bus-bandwidth factors (``tools/neuron-sys-tools/nccom-test.rst``): all-reduce
  ``2(n-1)/n``; all-gather, reduce-scatter, all-to-all, gather, scatter ``(n-1)/n``; send/recv, broadcast,
  reduce 1;
* inside an instance (AWS, ``neuron-runtime/explore/intranode-collective-comm.rst``): Ring, ``2(n-1)``
  steps for all-reduce and ``n-1`` for the others; KangaRing halves the hops when the group holds every
  logical core of each chip it spans. A step costs the fitted ``alpha_cc_s`` (AWS: "about 1-2 us" per hop).
  Bandwidth per rank: the chip's NeuronLink bandwidth inside the instance
  (``InterconnectSpec.intra_instance_bytes_per_s``) shared by the group's ranks on that chip; a group
  inside one chip moves its data through the chip's DMA engines (``ChipSpec.dma_bytes_per_s``);
* across instances (``internode-collective-comm.rst``): hierarchical, intra-instance reduce-scatter /
  all-gather around an inter-instance recursive doubling-halving with ``2 ceil(log2 x)`` (all-reduce) or
  ``ceil(log2 x)`` steps of AWS's ~15 us EFA hop latency (``InterconnectSpec.inter_node_hop_latency_s``),
  at the instance's EFA bandwidth shared by all its logical cores.

The algorithm choice is a labelled assumption (``calibration.ASSUMPTIONS``). Times are ESTIMATES.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch._ops import OpOverload

from .topology import GroupShape, Placement

__all__ = ["CollectiveKind", "CollectiveCall", "CollectiveTime", "CollectiveModel", "describe", "is_collective",
           "is_wait", "bus_factor", "group_of", "on_neuron_backend", "resolve_group", "kind_of"]

CollectiveKind = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce",
                         "gather", "scatter", "send", "recv", "barrier"]

_BW_N1 = ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter")


def bus_factor(kind: str, n: int) -> float:
    """nccom-test's bus-bandwidth factor of ``kind`` over ``n`` ranks."""
    if n <= 1 or kind == "barrier":
        return 0.0
    if kind == "all_reduce":
        return 2 * (n - 1) / n
    if kind in _BW_N1:
        return (n - 1) / n
    return 1.0


@dataclass(frozen=True)
class CollectiveCall:
    """One collective as the program issued it.

    Attributes:
        kind: the collective (a :data:`CollectiveKind`); nbytes: nccom-test's buffer size S, bytes;
        ranks: global ranks of the group; group: the group's name (its chrome-trace stream);
        dtype: element dtype name.
    """

    kind: str
    nbytes: int
    ranks: tuple[int, ...]
    group: str
    dtype: str


@dataclass(frozen=True)
class CollectiveTime:
    """Estimated time of one collective: ``latency_s + bandwidth_s``; ``algorithm`` names the model used."""

    latency_s: float
    bandwidth_s: float
    algorithm: str

    @property
    def seconds(self) -> float:
        return self.latency_s + self.bandwidth_s


# --- what an op is -----------------------------------------------------------------------------------------

def _bytes(x) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_bytes(v) for v in x)
    return 0


def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (list, tuple)):
        for v in x:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


# c10d op name -> (kind, index of the process group argument, where S is: ("arg", i) or ("out", None))
_C10D: dict[str, tuple[str, int, int]] = {
    "allreduce_": ("all_reduce", 1, 0), "allreduce_coalesced_": ("all_reduce", 1, 0),
    "broadcast_": ("broadcast", 1, 0), "reduce_": ("reduce", 1, 0),
    "allgather_": ("all_gather", 2, 0), "_allgather_base_": ("all_gather", 2, 0),
    "allgather_coalesced_": ("all_gather", 2, 0), "allgather_into_tensor_coalesced_": ("all_gather", 2, 0),
    "reduce_scatter_": ("reduce_scatter", 2, 1), "_reduce_scatter_base_": ("reduce_scatter", 2, 1),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", 2, 1),
    "gather_": ("gather", 2, 0), "scatter_": ("scatter", 2, 1),
    "alltoall_": ("all_to_all", 2, 1), "alltoall_base_": ("all_to_all", 2, 1),
    "send": ("send", 1, 0), "recv_": ("recv", 1, 0), "recv_any_source_": ("recv", 1, 0),
    "barrier": ("barrier", 1, -1), "monitored_barrier_": ("barrier", 1, -1),
}
# _c10d_functional op name -> (kind, index of the group-name argument, where S is: -2 = output, i = argument i)
_FUNCTIONAL: dict[str, tuple[str, int, int]] = {
    "all_reduce": ("all_reduce", 2, 0), "all_reduce_": ("all_reduce", 2, 0),
    "all_reduce_coalesced": ("all_reduce", 2, 0), "all_reduce_coalesced_": ("all_reduce", 2, 0),
    "all_gather_into_tensor": ("all_gather", 2, -2), "all_gather_into_tensor_out": ("all_gather", 2, -2),
    "all_gather_into_tensor_coalesced": ("all_gather", 2, -2),
    "reduce_scatter_tensor": ("reduce_scatter", 3, 0), "reduce_scatter_tensor_out": ("reduce_scatter", 3, 0),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter", 3, 0),
    "all_to_all_single": ("all_to_all", 3, 0), "broadcast": ("broadcast", 2, 0), "broadcast_": ("broadcast", 2, 0),
    "shard_dim_alltoall": ("all_to_all", 3, 0),          # _dtensor: a Shard(i) -> Shard(j) redistribution
}


# op names of the "neuron" process group's collectives -> kinds
_PG_OPS: dict[str, str] = {
    "all_reduce": "all_reduce", "all_reduce_coalesced": "all_reduce", "reduce": "reduce",
    "reduce_scatter": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter", "all_gather": "all_gather",
    "all_gather_coalesced": "all_gather", "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather", "gather": "gather", "scatter": "scatter",
    "broadcast": "broadcast", "all_to_all_single": "all_to_all", "all_to_all": "all_to_all", "barrier": "barrier",
}


def kind_of(op: str) -> str | None:
    """The kind of a ``"neuron"`` process-group op name (``"all_reduce"``, ``"send to rank 1"``...); None for
    an umbrella op (``"coalesced"``) whose parts are reported on their own."""
    if op.startswith("send"):
        return "send"
    if op.startswith("recv"):
        return "recv"
    return _PG_OPS.get(op)


def is_collective(func: OpOverload) -> bool:
    """True for a collective op (``c10d.*``, ``_c10d_functional(_autograd).*``) other than ``wait_tensor``."""
    ns = func.namespace
    name = func._overloadpacket.__name__
    if ns == "c10d":
        return name in _C10D
    if ns in ("_c10d_functional", "_c10d_functional_autograd", "_dtensor"):
        return name in _FUNCTIONAL
    return False


def is_wait(func: OpOverload) -> bool:
    """True for ``_c10d_functional.wait_tensor``: the program waits for a collective's result here."""
    return func.namespace == "_c10d_functional" and func._overloadpacket.__name__ == "wait_tensor"


def resolve_group(group: str | dist.ProcessGroup | torch.ScriptObject) -> dist.ProcessGroup:
    """The ProcessGroup a collective op argument names: a boxed ``ProcessGroup`` (``c10d.*`` ops) or a
    group name (``_c10d_functional.*`` ops, resolved by c10d's registry, as functional collectives do)."""
    if isinstance(group, str):
        from torch._C._distributed_c10d import _resolve_process_group

        return _resolve_process_group(group)  # type: ignore[arg-type]  # a GroupName is a str
    if isinstance(group, dist.ProcessGroup):
        return group
    return dist.ProcessGroup.unbox(group)


def group_of(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dist.ProcessGroup:
    """The process group a collective op (``is_collective(func)``) runs on.

    Raises:
        ValueError: a functional collective called without its ``group_name``.
    """
    name = func._overloadpacket.__name__
    if func.namespace == "c10d":
        return resolve_group(args[_C10D[name][1]])
    index = _FUNCTIONAL[name][1]
    group = args[index] if len(args) > index else kwargs.get("group_name")
    if group is None:
        raise ValueError(f"{func} was called without a group_name: the process group it runs on is unknown")
    return resolve_group(group)


def on_neuron_backend(pg: dist.ProcessGroup) -> bool:
    """True when ``pg`` runs on backend ``"neuron"`` (whose process group reports its collectives to the
    estimator itself)."""
    try:
        if pg.getBackendName() == "neuron":  # type: ignore[attr-defined]  # the Python process group itself
            return True
        backend = pg._get_backend(torch.device("neuron"))       # a c10d group wrapping it
    except (RuntimeError, AttributeError):
        return False
    return getattr(backend, "getBackendName", lambda: "")() == "neuron"


def describe(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> CollectiveCall:
    """The :class:`CollectiveCall` of one collective op (``is_collective(func)`` must hold).

    Raises:
        ValueError: for an op this table does not know (a new c10d op).
    """
    name = func._overloadpacket.__name__
    if func.namespace == "c10d":
        kind, _, size_index = _C10D[name]
        nbytes = _bytes(args[size_index]) if size_index >= 0 else 0
        sample = _first_tensor(args[size_index]) if size_index >= 0 else None
    else:
        if name not in _FUNCTIONAL:
            raise ValueError(f"no collective rule for {func}")
        kind, _, size_index = _FUNCTIONAL[name]
        nbytes = _bytes(out) if size_index == -2 else _bytes(args[size_index])
        sample = _first_tensor(args[0])
    pg = group_of(func, args, kwargs)
    ranks = tuple(dist.get_process_group_ranks(pg))
    group_name = pg.group_name if hasattr(pg, "group_name") else str(id(pg))
    dtype = str(sample.dtype).replace("torch.", "") if sample is not None else ""
    return CollectiveCall(kind, nbytes, ranks, group_name, dtype)


# --- how long it takes -------------------------------------------------------------------------------------

class CollectiveModel:
    """Time of collectives on ``placement`` (see the module docstring).

    Args:
        placement: platform, LNC, instance type and count.
        alpha_cc_s: seconds per intra-instance algorithm step (the fitted constant).

    Raises (from :meth:`time`):
        ValueError: a group spans instances on a platform whose EFA bandwidth or hop latency AWS does not
            publish, or ranks beyond the instances.
    """

    def __init__(self, placement: Placement, alpha_cc_s: float):
        self.placement = placement
        self.alpha = alpha_cc_s

    def _intra(self, kind: str, nbytes: float, g: GroupShape) -> CollectiveTime:
        n = g.size
        if n <= 1:
            return CollectiveTime(0.0, 0.0, "local")
        p = self.placement
        if kind == "all_reduce" or kind == "barrier":
            steps = 2 * (n - 1)
        elif kind in ("send", "recv"):
            steps = 1
        else:
            steps = n - 1
        algorithm = "ring"
        if g.whole_chips and g.chips > 1 and p.cores_per_chip >= 2 and kind not in ("send", "recv"):
            steps = math.ceil(steps / 2)
            algorithm = "kangaring"
        per_chip: float | None
        if g.chips == 1:
            per_chip = p.platform.chip.dma_bytes_per_s
            algorithm += " (one chip, DMA)"
        else:
            per_chip = p.instance.neuronlink_bytes_per_s_per_chip or p.platform.interconnect.intra_instance_bytes_per_s
            if not per_chip:
                raise ValueError(f"{p.instance.name} has no published chip-to-chip bandwidth: a collective "
                                 f"over {g.chips} chips cannot be estimated")
        per_rank = per_chip / max(1, g.ranks_per_chip)
        return CollectiveTime(steps * self.alpha, bus_factor(kind, n) * nbytes / per_rank, algorithm)

    def _efa(self) -> tuple[float, float]:
        p = self.placement
        inter = p.platform.interconnect
        bits = p.instance.efa_bits_per_s
        per_instance = bits / 8 if bits else (inter.efa_bytes_per_s_per_chip or 0) * p.instance.chips
        if not per_instance or inter.inter_node_hop_latency_s is None:
            raise ValueError(f"AWS publishes no EFA bandwidth or hop latency for {p.instance.name} "
                             f"({p.platform.name}): collectives across instances cannot be estimated")
        return per_instance / p.cores_per_instance, inter.inter_node_hop_latency_s

    def time(self, kind: str, nbytes: float, ranks: Iterable[int]) -> CollectiveTime:
        """Estimated time of one ``kind`` collective of buffer size ``nbytes`` over global ``ranks``."""
        ranks = list(ranks)
        p = self.placement
        if ranks and max(ranks) >= p.total_cores:
            raise ValueError(f"rank {max(ranks)} does not exist: {p.instances} x {p.instance.name} at LNC={p.lnc} "
                             f"has {p.total_cores} logical NeuronCores; add instances (--instances)")
        g = p.group(ranks)
        if g.instances <= 1:
            return self._intra(kind, nbytes, g)
        efa_per_rank, hop = self._efa()
        x, y = g.instances, g.ranks_per_instance
        first = [r for r in ranks if p.locate(r)[0] == p.locate(ranks[0])[0]]
        inner = p.group(first)
        log_x = math.ceil(math.log2(x))
        if kind in ("all_reduce", "barrier"):
            rs = self._intra("reduce_scatter", nbytes, inner)
            ag = self._intra("all_gather", nbytes, inner)
            lat = rs.latency_s + ag.latency_s + 2 * log_x * hop
            bw = rs.bandwidth_s + ag.bandwidth_s + bus_factor("all_reduce", x) * nbytes / y / efa_per_rank
        elif kind in ("all_gather", "reduce_scatter", "broadcast", "reduce", "gather", "scatter"):
            part = self._intra(kind, nbytes, inner)
            lat = part.latency_s + log_x * hop
            bw = part.bandwidth_s + bus_factor("all_gather", x) * nbytes / y / efa_per_rank
        elif kind == "all_to_all":
            part = self._intra(kind, nbytes * y / g.size, inner)
            lat = part.latency_s + (x - 1) * hop
            bw = part.bandwidth_s + (g.size - y) / g.size * nbytes / efa_per_rank
        else:  # send / recv
            lat, bw = hop, nbytes / efa_per_rank
        return CollectiveTime(lat, bw, f"hierarchical ({x} instances x {y} ranks, EFA)")
