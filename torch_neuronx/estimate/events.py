"""What the estimator records: one :class:`OpEvent` per op, collective, NKI kernel or compiled-graph launch,
and the :class:`Segment` (a repeated part of a step) each belongs to."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .collectives import CollectiveCall, CollectiveTime
from .costs import OpCost

__all__ = ["OpEvent", "KernelInfo", "GraphInfo", "Segment", "Phase"]

Phase = Literal["forward", "backward", "optimizer", "other"]


@dataclass(frozen=True)
class KernelInfo:
    """An NKI kernel launch costed by the NKI simulator's cost model.

    Attributes:
        name: kernel function name; platform: the platform it was simulated on;
        latency_s: estimated latency of one launch; engine_busy_s: busy seconds per engine
        (tensor, vector, scalar, gpsimd, dma); flops: matmul FLOPs; dma_bytes: bytes moved by DMA.
    """

    name: str
    platform: str
    latency_s: float
    engine_busy_s: dict
    flops: float
    dma_bytes: int


@dataclass(frozen=True)
class GraphInfo:
    """One launch of a compiled graph (``torch.compile(backend="neuron")``): its kernels as compiled, and its
    ops run one by one (the eager equivalent).

    Attributes:
        name: the graph's kind and cache key prefix.
        kernels: per kernel of the compiled graph, (busy seconds per engine at peak rate, HBM bytes, DMA
            transfers); fused_ops: ATen ops fused into its fused kernels.
        eager: the same per ATen op (each op its own kernel).
        source: ``"inductor"`` (the kernels Inductor fused, captured at compile time) or ``"fusion model"``.
    """

    name: str
    kernels: tuple
    fused_ops: int
    eager: tuple
    source: str = "fusion model"


@dataclass(slots=True)
class OpEvent:
    """One recorded event.

    Attributes:
        index: position in the recording.
        name: the op (``"aten.mm.default"``), collective, kernel or graph name.
        cost: the op's :class:`~.costs.OpCost` (engines, HBM bytes, FLOPs).
        phase: forward / backward / optimizer / other; module: the module it ran in.
        segment: index of its :class:`Segment`.
        reads: ``(storage key, bytes)`` of the tensors it reads; writes: of those it writes.
        shapes: input shapes and dtype, for the trace.
        collective: the collective call and its estimated time, if it is one.
        wait: the program waits here for a collective's result (``wait_tensor``).
        kernel: the NKI kernel launch, if it is one; graph: the compiled graph launch, if it is one.
        signature: the eager first-run-compile signature (op, shapes, dtypes, constants).
    """

    index: int
    name: str
    cost: OpCost
    phase: str
    module: str
    segment: int
    reads: tuple = ()
    writes: tuple = ()
    shapes: str = ""
    collective: CollectiveCall | None = None
    collective_time: CollectiveTime | None = None
    wait: bool = False
    kernel: KernelInfo | None = None
    graph: GraphInfo | None = None


@dataclass
class Segment:
    """A part of the recording that the step repeats.

    Attributes:
        name: what it is (``"micro-batch"``, ``"optimizer step"``).
        repeat: how many times a step runs it (e.g. micro-batches x pipeline fill for 1F1B).
        graphs: compiled graphs one repetition launches (each pays the runtime's launch overhead).
        note: how ``repeat`` was derived, for the report.
    """

    name: str
    repeat: float = 1.0
    graphs: int = 1
    note: str = ""
    events: list = field(default_factory=list)
