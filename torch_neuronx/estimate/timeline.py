"""Placing kernels in time: one compute stream per logical core, one stream per collective group.

Kernels run one after another on the compute stream; a kernel takes ``max(slowest engine, HBM bytes /
sustained bandwidth)`` plus the DMA fixed cost of its transfers (the engines of one kernel overlap; kernels
do not). A collective starts when the compute stream issues it (and its group's stream is free) and runs
on that stream; the compute stream waits for it only where the program waits (``wait_tensor``) or first
reads its result, so collectives the program issues early (FSDP2's prefetching all-gathers) overlap
compute and those it needs at once (tensor parallelism's all-reduces) do not.

Eager execution pays the launch overhead of each op on the host track before the op starts; a compiled
segment pays the runtime's synchronous launch overhead once per graph (``RuntimeSpec``). A step is the sum
over segments of ``repeat x`` the segment's makespan. All ESTIMATES.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from .collectives import CollectiveCall, CollectiveTime
from .costs import ENGINES
from .fusion import Kernel, fuse, per_op_kernels
from .roofline import Roofline

__all__ = ["Interval", "Schedule", "schedule", "Mode"]

Mode = Literal["eager", "compiled"]


@dataclass(frozen=True)
class Interval:
    """A busy interval of one track (for the chrome trace): seconds from the segment's start."""

    track: str
    name: str
    category: str
    start: float
    duration: float
    segment: int
    args: dict


@dataclass
class Schedule:
    """The estimated execution of a recording in one mode.

    Attributes:
        mode: ``"eager"`` or ``"compiled"``.
        step_s: estimated step time (sum over segments of repeat x makespan), seconds.
        segment_s: makespan of one repetition of each segment, seconds.
        busy_s: busy seconds per track kind over the step: ``tensor``, ``vector``, ``scalar``, ``gpsimd``,
            ``hbm``, ``dma`` (NKI kernels), ``dma fixed cost``, ``launch``, ``collective``.
        class_s: step seconds attributed to each op class (``collective`` = compute time spent waiting).
        event_s: step seconds attributed to each event index.
        hbm_bytes: HBM bytes moved over the step.
        collective_exposed_s: seconds the compute stream waited for collectives over the step.
        kernels: device kernels launched over the step.
        intervals: one repetition of every segment, for the trace.
        event_start: {event index: (segment, start seconds within the segment)} of one repetition.
        collective_s: {event index: seconds} of each collective.
    """

    mode: Mode
    step_s: float = 0.0
    segment_s: list = field(default_factory=list)
    busy_s: dict = field(default_factory=lambda: defaultdict(float))
    class_s: dict = field(default_factory=lambda: defaultdict(float))
    event_s: dict = field(default_factory=lambda: defaultdict(float))
    hbm_bytes: float = 0.0
    collective_exposed_s: float = 0.0
    kernels: float = 0.0
    intervals: list = field(default_factory=list)
    event_start: dict = field(default_factory=dict)
    collective_s: dict = field(default_factory=dict)


def _engines(k: Kernel, roofline: Roofline) -> dict:
    """Busy seconds per engine of a kernel, the Tensor Engine at its sustained rate."""
    if k.first.kernel is not None:                        # NKI kernel: its own cost model's engine busy times
        return k.first.kernel.engine_busy_s
    out = dict(k.engine_s)
    if "tensor" in out:
        out["tensor"] = roofline.tensor_sustained(out["tensor"])
    return out


def _graph_time(parts, roofline: Roofline) -> tuple[float, float, float]:
    """(device seconds, HBM seconds, DMA fixed seconds) of a compiled graph's kernels (or of its ops run one by
    one): each ``max(slowest engine, HBM time) + DMA fixed cost``, in sequence."""
    total = hbm_total = dma_total = 0.0
    for engines, hbm_bytes, transfers in parts:
        busy = dict(engines)
        if "tensor" in busy:
            busy["tensor"] = roofline.tensor_sustained(busy["tensor"])
        hbm = roofline.hbm_seconds(hbm_bytes)
        dma = transfers * roofline.dma_fixed_s
        total += max(max(busy.values(), default=0.0), hbm) + dma
        hbm_total += hbm
        dma_total += dma
    return total, hbm_total, dma_total


def _kernel_time(k: Kernel, engines: dict, roofline: Roofline, mode: Mode = "compiled") -> tuple[float, float, float]:
    """(device seconds, HBM seconds, DMA fixed seconds) of a kernel."""
    if k.first.kernel is not None:                        # NKI kernel: its own cost model's latency
        return k.first.kernel.latency_s, 0.0, 0.0
    if k.first.graph is not None:                         # a compiled graph launch (or its ops, eagerly)
        g = k.first.graph
        return _graph_time(g.kernels if mode == "compiled" else g.eager, roofline)
    hbm = roofline.hbm_seconds(k.hbm_bytes)
    dma = k.dma_transfers * roofline.dma_fixed_s
    return max(max(engines.values(), default=0.0), hbm) + dma, hbm, dma


def schedule(segments: list, mode: Mode, roofline: Roofline, eager_launch_s: float, graph_launch_s: float,
             alive_at_end: Callable[[int], bool], collective_time: Callable[[CollectiveCall], CollectiveTime],
             kernel_cache: dict | None = None) -> Schedule:
    """Schedules every segment's events in ``mode`` (see the module docstring).

    Args:
        segments: the recording's :class:`~.events.Segment` list.
        mode: ``"eager"`` (one kernel per op, each with ``eager_launch_s``) or ``"compiled"`` (fused
            kernels, ``graph_launch_s`` per graph of a segment).
        roofline: the rates and efficiencies.
        alive_at_end: whether a storage key is alive at the end of the recording (fusion's write rule).
        collective_time: ``CollectiveCall -> CollectiveTime`` (the collective model).
        kernel_cache: where to keep each segment's kernels between calls (they do not depend on the rates).
    """
    out = Schedule(mode)
    for seg_index, seg in enumerate(segments):
        key = (seg_index, mode, len(seg.events))
        kernels = kernel_cache.get(key) if kernel_cache is not None else None
        if kernels is None:
            kernels = fuse(seg.events, alive_at_end) if mode == "compiled" else per_op_kernels(seg.events)
            if kernel_cache is not None:
                kernel_cache[key] = kernels
        rep = seg.repeat
        t = 0.0
        if mode == "compiled" and kernels:
            launch = graph_launch_s * seg.graphs
            out.intervals.append(Interval("launch/host", f"{seg.graphs} graph launch(es)", "launch", 0.0, launch,
                                          seg_index, {}))
            out.busy_s["launch"] += launch * rep
            out.class_s["launch overhead"] += launch * rep
            t = launch
        ready: dict[int, float] = {}
        streams: dict[str, float] = defaultdict(float)
        for k in kernels:
            ev = k.first
            if ev.collective is not None:
                track = f"collective: group {ev.collective.group} ({len(ev.collective.ranks)} ranks)"
                start = max(t, streams[track], max((ready.get(key, 0.0) for key, _ in ev.reads), default=0.0))
                ct = collective_time(ev.collective)
                dur = ct.seconds
                streams[track] = start + dur
                for key, _ in ev.writes:
                    ready[key] = start + dur
                out.busy_s["collective"] += dur * rep
                out.collective_s[ev.index] = dur
                out.intervals.append(Interval(track, ev.collective.kind, "collective", start, dur, seg_index, {
                    "bytes": ev.collective.nbytes, "group_size": len(ev.collective.ranks),
                    "algorithm": ct.algorithm}))
                out.event_start[ev.index] = (seg_index, start)
                continue
            dep = max((ready.get(key, 0.0) for key, _ in ev.reads), default=0.0)
            if ev.wait:
                dep = max(dep, max(ready.values(), default=0.0)) if not ev.reads else dep
            if dep > t:
                waited = dep - t
                out.collective_exposed_s += waited * rep
                out.class_s["collective"] += waited * rep
                t = dep
            if ev.wait:
                continue
            if mode == "eager" or ev.graph is not None:
                if ev.graph is None:
                    launch = eager_launch_s
                elif mode == "compiled":
                    launch = graph_launch_s
                else:                                     # the graph's ops launched one by one
                    launch = eager_launch_s * len(ev.graph.eager)
                out.intervals.append(Interval("launch/host", ev.name, "launch", t, launch, seg_index, {}))
                out.busy_s["launch"] += launch * rep
                out.class_s["launch overhead"] += launch * rep
                t += launch
            for e in k.events:
                out.event_start[e.index] = (seg_index, t)
            engine_busy = _engines(k, roofline)
            dur, hbm, dma = _kernel_time(k, engine_busy, roofline, mode)
            name = ev.name if len(k.events) == 1 else f"fused[{len(k.events)}]: {ev.name} ..."
            for engine in ENGINES:
                s = engine_busy.get(engine, 0.0)
                if s:
                    out.busy_s[engine] += s * rep
                    out.intervals.append(Interval(engine, name, ev.cost.op_class, t, s, seg_index,
                                                  {"shapes": ev.shapes, "flops": sum(e.cost.flops for e in k.events)}))
            if hbm:
                out.busy_s["hbm"] += hbm * rep
                out.intervals.append(Interval("DMA/HBM", name, ev.cost.op_class, t, hbm, seg_index,
                                              {"bytes": k.hbm_bytes}))
            if ev.kernel is not None:
                out.busy_s["dma"] += ev.kernel.engine_busy_s.get("dma", 0.0) * rep
            out.busy_s["dma fixed cost"] += dma * rep
            if ev.graph is not None and mode == "eager":
                out.hbm_bytes += sum(part[1] for part in ev.graph.eager) * rep
            else:
                out.hbm_bytes += (k.hbm_bytes if ev.kernel is None else ev.kernel.dma_bytes) * rep
            out.kernels += rep
            weights = [sum(e.cost.engine_s.values()) + e.cost.hbm_bytes * 1e-12 for e in k.events]
            total_w = sum(weights) or 1.0
            for e, w in zip(k.events, weights, strict=True):
                share = dur * rep * (w / total_w if len(k.events) > 1 else 1.0)
                out.event_s[e.index] += share
                out.class_s[e.cost.op_class] += share
            t += dur
        makespan = max([t, *streams.values()])
        tail = makespan - t
        if tail > 0:
            out.collective_exposed_s += tail * rep
            out.class_s["collective"] += tail * rep
        out.segment_s.append(makespan)
        out.step_s += makespan * rep
    return out
