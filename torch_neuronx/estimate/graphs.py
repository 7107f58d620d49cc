"""Compiled graphs under the estimator: one entry per graph launch, costed from the graph's own ATen ops.

Backend ``"neuron"`` wraps every ATen graph it compiles (forward, backward, inference) in a
:class:`GraphLauncher` (``torch_neuronx/compile/aten_compile.py``). Without an active estimate the wrapper
only reads ``active.current`` and calls the compiled graph. While an estimate records, each launch:

* runs the compiled graph with op recording paused (its extern kernels, e.g. matmuls, would otherwise be
  recorded a second time as eager ops), and
* is recorded as one event costed from the graph's ATen ops (``node.meta["val"]`` gives each one's shapes,
  :mod:`.costs` their engine work). The kernels are what Inductor fused when the graph was compiled while an
  estimate was recording (:class:`InductorCapture`, Inductor's post-fusion scheduler pass: each scheduler
  node's origin ATen ops and the bytes it reads and writes); for a graph compiled outside any estimate (or
  loaded from the compile cache, where Inductor does not schedule) they are :mod:`.fusion`'s model of
  Inductor's fusion over the same ops. Its eager equivalent (the same ops one by one) is kept beside it, so the
  report shows what ``torch.compile`` saves. Collectives inside a graph on a process group other than
  ``"neuron"`` (the fake one
  of shape-only runs) are recorded as collectives after the graph; the ``"neuron"`` process group reports its
  own. NKI kernels inside a graph report themselves (:mod:`torch_neuronx.nki.torch_op`).

The graph's cost is computed once per estimate (per platform). Buffers a compiled graph allocates and frees
inside one launch are not seen by the memory tracker; its outputs are.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from . import active

if TYPE_CHECKING:
    from .session import EstimateSession

__all__ = ["GraphLauncher", "InductorCapture", "graph_cost"]


class InductorCapture:
    """Inductor's post-fusion scheduler pass (``torch._inductor.config._post_fusion_custom_pass``, a private
    config that is not part of Inductor's cache key) that records what Inductor fused and changes nothing.

    Attributes:
        kernels: per scheduler node, ``(kind, origin ATen fx nodes, bytes read and written)`` (None until
            Inductor scheduled the graph).
    """

    def __init__(self):
        self.kernels: list | None = None

    def __call__(self, nodes):
        kernels = []
        for node in nodes:
            kind = type(node).__name__
            if kind == "NopKernelSchedulerNode":
                continue
            origins: list = []
            for sub in node.get_nodes():
                ir = getattr(sub, "node", None)
                origins.extend(getattr(ir, "origins", None) or ())
            try:
                nbytes = int(node.get_read_write_buffers_sizes())
            except (AttributeError, NotImplementedError, TypeError):
                # Inductor cannot size this node (extern or template kernels without a size
                # formula): it adds a launch to the fusion model but no HBM traffic.
                nbytes = 0
            kernels.append((kind, origins, nbytes))
        self.kernels = kernels
        return nodes


class GraphLauncher:
    """A compiled ATen graph that reports its launches to an active estimate.

    Args:
        compiled: the compiled callable (boxed calling convention when it has ``_boxed_call``).
        gm: the ATen graph it was compiled from (read for costing; not run).
        kind: ``"forward"``, ``"backward"`` or ``"inference"``; key: the graph's cache key.
        inductor: what Inductor fused, when it was captured while compiling.
    """

    def __init__(self, compiled: Callable[..., Any], gm: torch.fx.GraphModule, kind: str, key: str,
                 inductor: InductorCapture | None = None):
        self.compiled = compiled
        self.gm = gm
        self.kind = kind
        self.key = key
        self.inductor = inductor.kernels if inductor is not None else None
        self._boxed_call = getattr(compiled, "_boxed_call", False)
        self.costs: dict = {}

    def __call__(self, *args: Any) -> Any:
        session = active.current
        if session is None:
            return self.compiled(*args)
        return session.launch_graph(self, args)

    def __getattr__(self, name: str) -> Any:       # Inductor's own attributes of the compiled graph
        return getattr(self.__dict__["compiled"], name)


def _val(x):
    return x.meta.get("val") if isinstance(x, torch.fx.Node) else x


def graph_cost(gm: torch.fx.GraphModule, session: EstimateSession,
               inductor: list | None = None) -> tuple[list, list, list, str]:
    """(events, kernels, collectives, source) of ``gm`` on ``session``'s platform.

    ``events``: one :class:`~.events.OpEvent` per ATen op with device work (reads/writes keyed by node);
    ``kernels``: what Inductor fused (``inductor``, from :class:`InductorCapture`) or else :func:`~.fusion.fuse`
    of the events; ``collectives``: the :class:`~.collectives.CollectiveCall` of each collective node not on
    the ``"neuron"`` backend, in graph order; ``source``: ``"inductor"`` or ``"fusion model"``.
    """
    from .collectives import describe, group_of, is_collective, is_wait, on_neuron_backend
    from .costs import OpCost
    from .events import OpEvent
    from .fusion import NO_WORK, fuse

    events: list = []
    collectives: list = []
    alive: set[int] = set()
    by_node: dict = {}

    def nbytes(v) -> int:
        return v.numel() * v.element_size() if isinstance(v, torch.Tensor) else 0

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            alive.add(id(node))
        elif node.op == "output":                      # the graph's outputs are written to HBM
            for arg in node.all_input_nodes:
                alive.add(id(arg))
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        func = node.target
        args = torch.fx.node.map_arg(node.args, _val)
        kwargs = torch.fx.node.map_arg(node.kwargs, _val)
        out = node.meta.get("val")
        if is_wait(func):
            continue
        if is_collective(func):
            if not on_neuron_backend(group_of(func, args, kwargs)):
                collectives.append(describe(func, args, kwargs, out))
            continue
        if session._is_nki_op(func):
            continue                                    # the kernel reports itself when the graph runs it
        try:
            cost = session.costs.cost(func, args, kwargs, out)
        except (TypeError, AttributeError, IndexError, RuntimeError):
            cost = OpCost("uncosted")
        if cost.op_class == "uncosted":
            session.uncosted[str(func)] += 1
        if cost.op_class in NO_WORK:
            continue
        reads = [(id(n), nbytes(n.meta.get("val"))) for n in node.all_input_nodes]
        writes = [(id(node), nbytes(out))]
        for i, a in enumerate(func._schema.arguments):        # in-place ops write their inputs
            if a.alias_info is not None and a.alias_info.is_write and i < len(node.args) \
                    and isinstance(node.args[i], torch.fx.Node):
                writes.append((id(node.args[i]), nbytes(node.args[i].meta.get("val"))))
        events.append(OpEvent(len(events), str(func), cost, "", "", 0, tuple(reads), tuple(writes)))
        by_node[node] = events[-1]
    if inductor:
        return events, _inductor_kernels(inductor, by_node), collectives, "inductor"
    return events, fuse(events, lambda key: key in alive), collectives, "fusion model"


def _inductor_kernels(captured: list, by_node: dict) -> list:
    """Kernels of Inductor's scheduler nodes: each origin ATen op's engine work counted once (in the first
    kernel naming it), the node's own bytes read and written."""
    from .fusion import Kernel

    claimed: set = set()
    kernels = []
    for kind, origins, nbytes in captured:
        events = []
        for origin in origins:
            ev = by_node.get(origin)
            if ev is not None and id(origin) not in claimed:
                claimed.add(id(origin))
                events.append(ev)
        engines: dict = {}
        for ev in events:
            for engine, sec in ev.cost.engine_s.items():
                engines[engine] = engines.get(engine, 0.0) + sec
        extern = kind.startswith("Extern")
        hbm = sum(ev.cost.hbm_bytes for ev in events) if extern and not nbytes else nbytes
        kernels.append(Kernel(events, extern, engines, hbm, max((ev.cost.dma_transfers for ev in events), default=0)))
    return kernels
