"""What a graph compiler fuses: the recorded op stream of a segment as the kernels of one compiled graph.

The model is Inductor's (what ``torch.compile(backend="neuron")`` runs): matmuls, convolutions, attention,
collectives, NKI kernels, sorts and host syncs are extern kernels; every maximal run of fusible ops between
two of them (pointwise ops, reductions, normalisations, copies, gathers and scatters, optimizer updates)
becomes one fused kernel. A fused kernel reads from HBM each tensor it did not produce itself (once) and
writes each tensor it produces that a later kernel reads or that is still alive at the end of the segment;
intermediates it both produces and consumes stay on chip. Extern kernels move their own inputs and outputs.

A fused kernel's engine work is the sum of its ops' engine work. This is what Inductor's scheduler does for
the CPU/GPU code generators; the Neuron compiler fuses at least as much (it also fuses elementwise work into
matmul prologues/epilogues), so compiled-graph HBM traffic is, if anything, over-estimated.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

from .events import OpEvent

__all__ = ["Kernel", "fuse", "per_op_kernels", "NO_WORK"]

#: op classes that do no device work (views, allocations, host syncs, fallbacks, uncosted ops)
NO_WORK = frozenset({"view", "memory", "host_sync", "host_fallback", "uncosted"})


@dataclass
class Kernel:
    """One device kernel: an extern op or a fused group of ops.

    Attributes:
        events: the ops it runs (one for an extern kernel).
        extern: True for an extern kernel (matmul, attention, collective, NKI kernel...).
        engine_s: busy seconds per engine; hbm_bytes: HBM bytes read and written; dma_transfers: DMA
        transfers paying the fixed DMA cost.
    """

    events: list = field(default_factory=list)
    extern: bool = False
    engine_s: dict = field(default_factory=dict)
    hbm_bytes: int = 0
    dma_transfers: int = 0
    _read: set = field(default_factory=set)
    _written: dict = field(default_factory=dict)

    @property
    def first(self) -> OpEvent:
        return self.events[0]


def _is_extern(ev: OpEvent) -> bool:
    return ev.collective is not None or ev.kernel is not None or ev.graph is not None or ev.wait \
        or not ev.cost.fusible


def per_op_kernels(events: list) -> list[Kernel]:
    """Eager execution: every op with device work is its own kernel, moving its own inputs and outputs."""
    out = []
    for ev in events:
        if ev.cost.op_class in NO_WORK and ev.collective is None and not ev.wait:
            continue
        out.append(Kernel([ev], True, dict(ev.cost.engine_s), ev.cost.hbm_bytes, ev.cost.dma_transfers))
    return out


def fuse(events: list, alive_at_end: Callable[[int], bool]) -> list[Kernel]:
    """The kernels of one compiled graph running ``events`` (see the module docstring).

    Args:
        events: the segment's events, in program order.
        alive_at_end: whether a storage (by key) is still alive when the segment ends.
    """
    kernels: list[Kernel] = []
    producer: dict[int, Kernel] = {}
    current: Kernel | None = None
    for ev in events:
        if ev.cost.op_class in NO_WORK and ev.collective is None and not ev.wait:
            continue
        if _is_extern(ev):
            current = None
            k = Kernel([ev], True, dict(ev.cost.engine_s), ev.cost.hbm_bytes, ev.cost.dma_transfers)
            kernels.append(k)
            for key, _ in ev.reads:
                p = producer.get(key)
                if p is not None and not p.extern and key in p._written:
                    p.hbm_bytes += p._written.pop(key)         # a later kernel reads it: written out
            for key, _ in ev.writes:
                producer[key] = k
            continue
        if current is None:
            current = Kernel([], False)
            kernels.append(current)
        k = current
        k.events.append(ev)
        for engine, s in ev.cost.engine_s.items():
            k.engine_s[engine] = k.engine_s.get(engine, 0.0) + s
        if ev.cost.dma_transfers:
            k.dma_transfers = 1
        for key, nbytes in ev.reads:
            p = producer.get(key)
            if p is k or key in k._read:
                continue
            if p is not None and not p.extern and key in p._written:
                p.hbm_bytes += p._written.pop(key)
            k._read.add(key)
            k.hbm_bytes += nbytes
        for key, nbytes in ev.writes:
            producer[key] = k
            k._written[key] = max(nbytes, k._written.get(key, 0))
    for k in kernels:
        if not k.extern:
            for key, nbytes in k._written.items():
                if alive_at_end(key):
                    k.hbm_bytes += nbytes
            k._written.clear()
            k._read.clear()
    return kernels
