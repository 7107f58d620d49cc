"""The result of an estimate: :class:`EstimateReport` (summary table, JSON object, chrome trace).

Every output says it is an ESTIMATE. Units: seconds, bytes, FLOPs, USD.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal, TypedDict

from .calibration import ASSUMPTIONS, FITTED, ModelConstants
from .timeline import Schedule, schedule
from .trace import chrome_trace, write

if TYPE_CHECKING:
    from .session import EstimateSession

__all__ = ["EstimateReport", "TopOp", "CollectiveSummary", "FirstRunCompiles", "build_report"]

Mode = Literal["eager", "compiled"]
Task = Literal["train", "prefill", "decode", "forward"]


class FirstRunCompiles(TypedDict):
    """What the first run compiles: distinct eager op signatures (op, shapes, dtypes, constants), each a
    compilation in TorchNeuron's eager mode; and compiled graphs."""

    eager_op_signatures: int
    graphs: int


@dataclass(frozen=True)
class TopOp:
    """One op (by name and module) with its share of the step: ``seconds`` over the step, ``calls``."""

    name: str
    module: str
    calls: float
    seconds: float
    share: float


@dataclass(frozen=True)
class CollectiveSummary:
    """Collectives of one kind over groups of one size: calls per step, bytes (nccom size) per call,
    busy seconds per step, the algorithm model used."""

    kind: str
    group_size: int
    calls: float
    bytes_per_call: float
    seconds: float
    algorithm: str


@dataclass
class EstimateReport:
    """An ESTIMATE of one step of the recorded program on Trainium, for one logical NeuronCore (rank).

    Attributes (seconds, bytes, FLOPs, USD):
        platform, lnc, instance, instances, world_size: the hardware.
        mode: the headline estimate, ``"compiled"`` (graphs) or ``"eager"`` (op by op).
        task: ``"train"``, ``"prefill"``, ``"decode"``, ``"forward"`` or None (a user program).
        step_time_s: headline step time; eager_step_time_s / compiled_step_time_s: both estimates.
        tokens_per_step / tokens_per_s: when known; ttft_s (prefill) / tpot_s (decode): the step time.
        flops: FLOPs of one rank per step (``torch.utils.flop_counter``'s counts); mfu: flops / (step time x
            the logical core's dense BF16 peak).
        hbm_bytes: HBM traffic per step (headline mode); device_time_by_engine_s: busy seconds per track;
        time_by_op_class_s: step seconds per op class; top_ops: the ten costliest ops.
        collective_time_s: busy seconds of all collectives; collective_exposed_s: compute waiting on them;
        collective_share: exposed / step; collectives: by kind and group size.
        launch_overhead_s: launch overhead per step (headline mode).
        first_run_compiles: eager op signatures and compiled graphs.
        peak_hbm_bytes_per_core, memory_by_category (at the peak), capacity_bytes_per_core, fits.
        usd_per_hour (price x instances, None when no price is known), usd_per_step, usd_per_million_tokens,
        price_source.
        uncosted_ops / host_fallback_ops: {op: calls} with no cost rule / run on the host (fp64, complex);
        host_syncs: device-to-host synchronisations (``.item()``...).
        constants: the fitted constants used; assumptions: the labelled assumptions; segments: the parts of
        a step and their repeats; notes: what the estimate did to reproduce the setup.
    """

    platform: str
    lnc: int
    instance: str
    instances: int
    world_size: int
    mode: Mode
    step_time_s: float
    eager_step_time_s: float
    compiled_step_time_s: float
    flops: float
    mfu: float
    hbm_bytes: float
    device_time_by_engine_s: dict
    time_by_op_class_s: dict
    top_ops: list
    collective_time_s: float
    collective_exposed_s: float
    collective_share: float
    collectives: list
    launch_overhead_s: float
    first_run_compiles: FirstRunCompiles
    peak_hbm_bytes_per_core: int
    memory_by_category: dict
    capacity_bytes_per_core: int
    fits: bool
    usd_per_hour: float | None
    price_source: str
    uncosted_ops: dict
    host_fallback_ops: dict
    host_syncs: int
    constants: dict
    assumptions: dict
    segments: list
    peak_flops_per_core: float
    task: Task | None = None
    tokens_per_step: int | None = None
    notes: list = field(default_factory=list)
    estimate: bool = True
    _schedules: dict = field(default_factory=dict, repr=False)
    _memory_samples: list = field(default_factory=list, repr=False)
    _session: EstimateSession | None = field(default=None, repr=False)

    # --- derived ---------------------------------------------------------------------------------------------
    @property
    def tokens_per_s(self) -> float | None:
        """Tokens per second of the whole job, when tokens per step are known."""
        return self.tokens_per_step / self.step_time_s if self.tokens_per_step and self.step_time_s else None

    @property
    def ttft_s(self) -> float | None:
        """Time to first token: the prefill step (task ``"prefill"``), else None."""
        return self.step_time_s if self.task == "prefill" else None

    @property
    def tpot_s(self) -> float | None:
        """Time per output token: the decode step (task ``"decode"``), else None."""
        return self.step_time_s if self.task == "decode" else None

    @property
    def usd_per_step(self) -> float | None:
        """Cost of one step of the whole job, USD."""
        return None if self.usd_per_hour is None else self.usd_per_hour * self.step_time_s / 3600

    @property
    def usd_per_million_tokens(self) -> float | None:
        """Cost of a million tokens, USD (None without a price or tokens)."""
        if self.usd_per_step is None or not self.tokens_per_step:
            return None
        return self.usd_per_step / self.tokens_per_step * 1e6

    def step_time_with(self, constants: ModelConstants, mode: Mode | None = None) -> float:
        """Step time (seconds) of the same recording with other constants, in ``mode`` (default the
        headline): the quick form of :meth:`with_constants` used to fit them.

        Raises:
            ValueError: the report was not built from a recording (see :meth:`with_constants`).
        """
        return _schedule_one(self._recording(), constants, mode or self.mode).step_s

    def with_constants(self, constants: ModelConstants) -> EstimateReport:
        """The same recording re-estimated with other :class:`~.calibration.ModelConstants` (no re-run; this
        is how ``bench/estimate.py --fit`` fits them).

        Raises:
            ValueError: the report was not built from a recording (constructed by hand instead of by
                :func:`build_report`): there is nothing to re-estimate.
        """
        return build_report(self._recording(), constants)

    def _recording(self) -> EstimateSession:
        if self._session is None:
            raise ValueError("this EstimateReport holds no recording (it was not made by build_report / "
                             "torch_neuronx.estimate): re-estimating it with other constants needs one")
        return self._session

    # --- outputs ---------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """One JSON-ready object (the CLI's ``--json``): the fields of the issue first, then the details."""
        d = {
            "estimate": True,
            "step_time_s": self.step_time_s, "tokens_per_s": self.tokens_per_s, "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s, "peak_hbm_bytes_per_core": self.peak_hbm_bytes_per_core, "fits": self.fits,
            "mfu": self.mfu, "first_run_compiles": dict(self.first_run_compiles), "usd_per_hour": self.usd_per_hour,
            "usd_per_step": self.usd_per_step, "usd_per_million_tokens": self.usd_per_million_tokens,
            "platform": self.platform, "lnc": self.lnc, "instance": self.instance, "instances": self.instances,
            "world_size": self.world_size, "mode": self.mode, "task": self.task,
            "eager_step_time_s": self.eager_step_time_s, "compiled_step_time_s": self.compiled_step_time_s,
            "tokens_per_step": self.tokens_per_step, "flops": self.flops,
            "peak_flops_per_core": self.peak_flops_per_core, "hbm_bytes": self.hbm_bytes,
            "device_time_by_engine_s": self.device_time_by_engine_s,
            "time_by_op_class_s": self.time_by_op_class_s,
            "top_ops": [asdict(t) for t in self.top_ops],
            "collective_time_s": self.collective_time_s, "collective_exposed_s": self.collective_exposed_s,
            "collective_share": self.collective_share, "collectives": [asdict(c) for c in self.collectives],
            "launch_overhead_s": self.launch_overhead_s, "memory_by_category": self.memory_by_category,
            "capacity_bytes_per_core": self.capacity_bytes_per_core, "price_source": self.price_source,
            "uncosted_ops": self.uncosted_ops, "host_fallback_ops": self.host_fallback_ops,
            "host_syncs": self.host_syncs, "constants": self.constants, "assumptions": self.assumptions,
            "segments": self.segments, "notes": self.notes,
        }
        return d

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON."""
        return json.dumps(self.to_dict())

    def chrome_trace(self, mode: Mode | None = None) -> dict:
        """The chrome trace of ``mode`` (default the headline) as a dict (see :mod:`.trace`)."""
        sched = self._schedules[mode or self.mode]
        return chrome_trace(self, sched, self._memory_samples, sched.event_start)

    def save_chrome_trace(self, path: str, mode: Mode | None = None) -> None:
        """Writes :meth:`chrome_trace` to ``path`` (open it in ui.perfetto.dev)."""
        write(self.chrome_trace(mode), path)

    def summary(self) -> str:
        """The summary table (plain text); every heading says ESTIMATE."""
        return _summary(self)

    def __str__(self) -> str:
        return self.summary()


# --- building --------------------------------------------------------------------------------------------------

def _fmt_s(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def _fmt_b(b: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(b) >= scale:
            return f"{b / scale:.2f} {unit}"
    return f"{int(b)} B"


def _schedule_one(session: EstimateSession, constants: ModelConstants, mode: Mode) -> Schedule:
    from .collectives import CollectiveModel
    from .roofline import Roofline

    roofline = Roofline(session.platform, session.lnc, constants)
    model = CollectiveModel(session.placement, constants.alpha_cc_s)
    return schedule(session.segments, mode, roofline, constants.eager_op_launch_s,
                    session.platform.runtime.sync_launch_overhead_s, session.memory.is_live,
                    lambda call: model.time(call.kind, call.nbytes, call.ranks), session.kernel_cache)


_LAYER_INDEX = re.compile(r"\.\d+\.")


def build_report(session: EstimateSession, constants: ModelConstants | None = None) -> EstimateReport:
    """Builds the report of a finished :class:`~.session.EstimateSession` (with ``constants`` instead of the
    session's, if given: the same recording re-estimated, which is how the constants are fitted)."""
    from .collectives import CollectiveCall, CollectiveModel, CollectiveTime
    from .roofline import Roofline

    constants = constants or session.constants
    platform = session.platform
    roofline = Roofline(platform, session.lnc, constants)
    collectives_model = CollectiveModel(session.placement, constants.alpha_cc_s)

    def collective_time(call: CollectiveCall) -> CollectiveTime:
        return collectives_model.time(call.kind, call.nbytes, call.ranks)

    alive = session.memory.is_live
    launch = platform.runtime.sync_launch_overhead_s
    cache = session.kernel_cache
    eager = schedule(session.segments, "eager", roofline, constants.eager_op_launch_s, launch, alive,
                     collective_time, cache)
    compiled = schedule(session.segments, "compiled", roofline, constants.eager_op_launch_s, launch, alive,
                        collective_time, cache)
    has_graphs = any(ev.graph is not None for seg in session.segments for ev in seg.events)
    mode: Mode = "compiled" if (session.compiled if session.compiled is not None else has_graphs) else "eager"
    head: Schedule = compiled if mode == "compiled" else eager

    events = {ev.index: (ev, seg.repeat) for seg in session.segments for ev in seg.events}
    flops = sum(ev.cost.flops * rep for ev, rep in events.values())
    peak = roofline.peak_flops("bfloat16")
    step = head.step_s
    by_op: dict = defaultdict(lambda: [0.0, 0.0])
    for index, s in head.event_s.items():
        ev, rep = events[index]
        key = (ev.name, _LAYER_INDEX.sub(".*.", ev.module))          # one row for the same op of every layer
        by_op[key][0] += rep
        by_op[key][1] += s
    top = sorted(by_op.items(), key=lambda kv: -kv[1][1])[:10]
    top_ops = [TopOp(n, m, c, s, s / step if step else 0.0) for (n, m), (c, s) in top]
    coll: dict = defaultdict(lambda: [0.0, 0.0, 0.0, ""])
    for ev, rep in events.values():
        if ev.collective is not None:
            k = (ev.collective.kind, len(ev.collective.ranks))
            coll[k][0] += rep
            coll[k][1] += ev.collective.nbytes * rep
            ct = collective_time(ev.collective)
            coll[k][2] += ct.seconds * rep
            coll[k][3] = ct.algorithm
    collectives = [CollectiveSummary(k, n, c, b / c if c else 0.0, s, a)
                   for (k, n), (c, b, s, a) in sorted(coll.items())]

    mem = session.memory
    devices = list(mem.peak_bytes) or [0]
    worst = max(devices, key=lambda d: mem.peak_bytes.get(d, 0))
    peak_bytes = int(mem.peak_bytes.get(worst, 0))
    capacity = roofline.hbm_capacity_bytes
    inst = session.placement.instance
    if session.price_per_hour is not None:
        usd, source = session.price_per_hour * session.placement.instances, "--price-per-hour (given)"
    elif inst.on_demand_usd_per_hour is not None:
        from ..runtime.platforms import SOURCES

        usd = inst.on_demand_usd_per_hour * session.placement.instances
        source = f"on-demand {inst.name}: {SOURCES[inst.sources[-1]]}"
    else:
        usd, source = None, f"no published on-demand price for {inst.name}: pass --price-per-hour"
    graphs = len(session.graph_keys) or (sum(seg.graphs for seg in session.segments if seg.events)
                                          if mode == "compiled" else 0)
    import torch.distributed as dist

    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    return EstimateReport(
        platform=platform.name, lnc=session.lnc, instance=inst.name, instances=session.placement.instances,
        world_size=world, mode=mode, step_time_s=step, eager_step_time_s=eager.step_s,
        compiled_step_time_s=compiled.step_s, flops=flops, mfu=flops / (step * peak) if step else 0.0,
        hbm_bytes=head.hbm_bytes, device_time_by_engine_s={k: v for k, v in head.busy_s.items() if v},
        time_by_op_class_s={k: v for k, v in sorted(head.class_s.items(), key=lambda kv: -kv[1]) if v},
        top_ops=top_ops, collective_time_s=head.busy_s.get("collective", 0.0),
        collective_exposed_s=head.collective_exposed_s,
        collective_share=head.collective_exposed_s / step if step else 0.0, collectives=collectives,
        launch_overhead_s=head.busy_s.get("launch", 0.0),
        first_run_compiles=FirstRunCompiles(eager_op_signatures=len(session.signatures), graphs=graphs),
        peak_hbm_bytes_per_core=peak_bytes,
        memory_by_category=dict(mem.peak_by_category.get(worst, {})), capacity_bytes_per_core=capacity,
        fits=peak_bytes <= capacity, usd_per_hour=usd, price_source=source, uncosted_ops=dict(session.uncosted),
        host_fallback_ops=dict(session.host_fallbacks), host_syncs=session.host_syncs,
        constants={c.name: {"value": getattr(constants, c.name), "fitted_on": c.fitted_on,
                            "published": c.published} for c in FITTED},
        assumptions={a.name: {"value": getattr(constants, a.name, a.value), "why": a.why}
                     for a in ASSUMPTIONS},
        segments=[{"name": s.name, "repeat": s.repeat, "graphs": s.graphs, "note": s.note,
                   "eager_s": eager.segment_s[i], "compiled_s": compiled.segment_s[i]}
                  for i, s in enumerate(session.segments)],
        peak_flops_per_core=peak, task=session.task, tokens_per_step=session.tokens_per_step,
        notes=list(session.notes), _schedules={"eager": eager, "compiled": compiled},
        _memory_samples=list(mem.samples), _session=session)


def _summary(r: EstimateReport) -> str:
    lines = [f"ESTIMATE (not a measurement) of one step on {r.platform}, LNC={r.lnc}, {r.instances} x {r.instance}"
             f" — rank 0 of {r.world_size}; headline: {r.mode}"]
    saving = 1 - r.compiled_step_time_s / r.eager_step_time_s if r.eager_step_time_s else 0.0
    lines.append(f"  step time (estimate)    {_fmt_s(r.step_time_s)}   [eager {_fmt_s(r.eager_step_time_s)}, "
                 f"compiled {_fmt_s(r.compiled_step_time_s)}: torch.compile saves {100 * saving:.0f}%]")
    if r.tokens_per_s:
        lines.append(f"  tokens/s (estimate)     {r.tokens_per_s:,.1f}  ({r.tokens_per_step:,} tokens per step)")
    if r.ttft_s is not None:
        lines.append(f"  time to first token     {_fmt_s(r.ttft_s)} (estimate)")
    if r.tpot_s is not None:
        lines.append(f"  time per output token   {_fmt_s(r.tpot_s)} (estimate)")
    lines.append(f"  MFU (estimate)          {100 * r.mfu:.1f}% of {r.peak_flops_per_core / 1e12:.0f} TFLOPS bf16 per "
                 f"logical core; {r.flops / 1e12:.3f} TFLOP per rank per step")
    lines.append(f"  HBM traffic (estimate)  {_fmt_b(r.hbm_bytes)} per step per core")
    ncoll = sum(c.calls for c in r.collectives)
    lines.append(f"  collectives (estimate)  {ncoll:,.0f} per step, {_fmt_s(r.collective_time_s)} busy, "
                 f"{_fmt_s(r.collective_exposed_s)} exposed ({100 * r.collective_share:.1f}% of the step)")
    for c in r.collectives:
        lines.append(f"      {c.kind:<15} over {c.group_size:>4} ranks: {c.calls:>8,.0f} x "
                     f"{_fmt_b(c.bytes_per_call):>11}"
                     f" = {_fmt_s(c.seconds)} ({c.algorithm})")
    lines.append(f"  launch overhead         {_fmt_s(r.launch_overhead_s)} per step")
    lines.append(f"  first-run compiles      {r.first_run_compiles['eager_op_signatures']:,} eager op signatures; "
                 f"{r.first_run_compiles['graphs']} compiled graph(s)")
    lines.append("  device time by engine (busy, estimate):")
    for k, v in sorted(r.device_time_by_engine_s.items(), key=lambda kv: -kv[1]):
        lines.append(f"      {k:<14} {_fmt_s(v)}")
    lines.append("  step time by op class (estimate):")
    for k, v in r.time_by_op_class_s.items():
        lines.append(f"      {k:<18} {_fmt_s(v):>11}  {100 * v / r.step_time_s if r.step_time_s else 0:5.1f}%")
    lines.append("  top ops (estimate):")
    for t in r.top_ops:
        lines.append(f"      {100 * t.share:5.1f}%  {_fmt_s(t.seconds):>11}  {t.calls:>9,.0f} x {t.name}"
                     + (f"  [{t.module}]" if t.module else ""))
    cats = ", ".join(f"{k} {_fmt_b(v)}" for k, v in sorted(r.memory_by_category.items(), key=lambda kv: -kv[1]) if v)
    lines.append(f"  peak HBM per core (estimate) {_fmt_b(r.peak_hbm_bytes_per_core)} of "
                 f"{_fmt_b(r.capacity_bytes_per_core)}: {'fits' if r.fits else 'DOES NOT FIT (out of memory)'}"
                 + (f" — {cats}" if cats else ""))
    if r.usd_per_hour is not None:
        per_m = f", ${r.usd_per_million_tokens:,.4f} per 1M tokens" if r.usd_per_million_tokens is not None else ""
        lines.append(f"  cost (estimate)         ${r.usd_per_hour:,.2f}/h, ${r.usd_per_step:,.6f} per step{per_m} "
                     f"({r.price_source})")
    else:
        lines.append(f"  cost                    price unknown ({r.price_source})")
    if r.uncosted_ops:
        lines.append(f"  NOT COSTED: {len(r.uncosted_ops)} op kind(s) have no cost rule; their time is not included: "
                     + ", ".join(f"{k} x{v}" for k, v in sorted(r.uncosted_ops.items())))
    if r.host_fallback_ops:
        lines.append("  host fallbacks (fp64/complex, not on NeuronCores): "
                     + ", ".join(f"{k} x{v}" for k, v in sorted(r.host_fallback_ops.items())))
    if r.host_syncs:
        lines.append(f"  host syncs: {r.host_syncs} (device-to-host round trips, not timed)")
    if len(r.segments) > 1 or r.segments[0]["repeat"] != 1:
        lines.append("  segments of a step:")
        for s in r.segments:
            if s["eager_s"] or s["compiled_s"]:
                lines.append(f"      {s['name']:<34} x{s['repeat']:<8g} {_fmt_s(s[r.mode + '_s'])} each  {s['note']}")
    lines.append("  fitted constants: " + "; ".join(f"{k}={v['value']:.4g} (fitted on {v['fitted_on']})"
                                                   for k, v in r.constants.items()))
    launch = r.assumptions["eager_op_launch_s"]["value"]
    lines.append(f"  assumption: eager op launch {_fmt_s(launch)} (no public figure)")
    for n in r.notes:
        lines.append(f"  note: {n}")
    return "\n".join(lines)
