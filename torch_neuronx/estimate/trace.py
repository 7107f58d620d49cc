"""The estimate as a chrome trace (Trace Event Format JSON), one track per engine and per collective stream.

Opens in Perfetto (ui.perfetto.dev) and ``chrome://tracing``. Layout: process ``pid`` = the estimated rank,
named ``"neuron:<rank> ESTIMATE <platform> LNC=<lnc>"``; one thread per track (``TensorE``, ``VectorE``,
``ScalarE``, ``GpSimdE``, ``DMA/HBM``, ``launch/host``, ``collective: <group>``, ``segments``); complete
events (``"ph": "X"``, ``ts``/``dur`` in microseconds) for each kernel's busy time on each engine; counter
events (``"ph": "C"``) for HBM in use. Each segment appears once, its repeat count in its name. The format
is checked against :data:`TRACE_SCHEMA` (a JSON Schema of the subset written) in the tests, since
Perfetto's trace processor downloads its binary at run time.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import EstimateReport
    from .timeline import Schedule

__all__ = ["TRACE_SCHEMA", "chrome_trace", "TRACK_NAMES"]

TRACK_NAMES = {"tensor": "TensorE", "vector": "VectorE", "scalar": "ScalarE", "gpsimd": "GpSimdE",
               "DMA/HBM": "DMA/HBM", "launch/host": "launch/host"}
_FIXED_TRACKS = ("segments", "tensor", "vector", "scalar", "gpsimd", "DMA/HBM", "launch/host")

#: JSON Schema (draft 2020-12) of the traces written here: the Trace Event Format's object form with
#: metadata (M), complete (X) and counter (C) events.
TRACE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["traceEvents", "displayTimeUnit", "otherData"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object", "required": ["estimate"], "properties": {"estimate": {"const": True}}},
        "traceEvents": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["ph", "name", "pid"],
                "properties": {
                    "ph": {"enum": ["M", "X", "C"]},
                    "name": {"type": "string"},
                    "cat": {"type": "string"},
                    "pid": {"type": "integer", "minimum": 0},
                    "tid": {"type": "integer", "minimum": 0},
                    "ts": {"type": "number", "minimum": 0},
                    "dur": {"type": "number", "minimum": 0},
                    "args": {"type": "object"},
                },
                "allOf": [
                    {"if": {"properties": {"ph": {"const": "X"}}},
                     "then": {"required": ["ts", "dur", "tid"]}},
                    {"if": {"properties": {"ph": {"const": "C"}}},
                     "then": {"required": ["ts", "args"]}},
                    {"if": {"properties": {"ph": {"const": "M"}}},
                     "then": {"required": ["args"], "properties": {
                         "name": {"enum": ["process_name", "thread_name", "thread_sort_index"]}}}},
                ],
            },
        },
    },
}


def chrome_trace(report: EstimateReport, schedule: Schedule, memory_samples: Sequence[tuple[int, int, int]],
                 event_start: dict[int, tuple[int, float]], rank: int = 0) -> dict:
    """The trace of ``schedule`` (one mode of ``report``) as a JSON-ready dict.

    Args:
        report: the :class:`~.report.EstimateReport` (platform, LNC, constants, segments).
        schedule: the :class:`~.timeline.Schedule` drawn.
        memory_samples: [(event index, device, bytes in use)] from the memory tracker.
        event_start: {event index: (segment index, start seconds within the segment)} of ``schedule``.
        rank: the rank (pid).
    """
    tracks: dict[str, int] = {}

    def tid(track: str) -> int:
        if track not in tracks:
            tracks[track] = len(tracks) + 1
        return tracks[track]

    for fixed in _FIXED_TRACKS:
        tid(fixed)
    events: list[dict] = []
    offsets = []
    at = 0.0
    for seg_s in schedule.segment_s:
        offsets.append(at)
        at += seg_s
    for i, seg in enumerate(report.segments):
        if i < len(offsets) and schedule.segment_s[i] > 0:
            events.append({"ph": "X", "name": f"{seg['name']} (x{seg['repeat']:g} per step)", "cat": "segment",
                           "pid": rank, "tid": tid("segments"), "ts": offsets[i] * 1e6,
                           "dur": schedule.segment_s[i] * 1e6, "args": {"note": seg.get("note", "")}})
    for iv in schedule.intervals:
        if iv.duration <= 0:
            continue
        events.append({"ph": "X", "name": iv.name, "cat": iv.category, "pid": rank, "tid": tid(iv.track),
                       "ts": (offsets[iv.segment] + iv.start) * 1e6, "dur": iv.duration * 1e6,
                       "args": {k: v for k, v in iv.args.items() if v not in ("", None)}})
    if memory_samples:
        index_to_time = sorted(event_start.items())
        import bisect

        keys = [k for k, _ in index_to_time]
        for index, device, nbytes in memory_samples:
            j = bisect.bisect_right(keys, index) - 1
            if j < 0:
                ts = 0.0
            else:
                ev_index, (seg, start) = index_to_time[j]
                ts = offsets[seg] + start if seg < len(offsets) else 0.0
            events.append({"ph": "C", "name": f"HBM in use (neuron:{device})", "pid": rank, "ts": ts * 1e6,
                           "args": {"bytes": int(nbytes)}})
    meta: list[dict] = [{"ph": "M", "name": "process_name", "pid": rank,
             "args": {"name": f"neuron:{rank} ESTIMATE {report.platform} LNC={report.lnc} ({schedule.mode})"}}]
    for track, t in tracks.items():
        meta.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": t,
                     "args": {"name": TRACK_NAMES.get(track, track)}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": rank, "tid": t, "args": {"sort_index": t}})
    return {"traceEvents": meta + events, "displayTimeUnit": "ns",
            "otherData": {"estimate": True, "platform": report.platform, "lnc": report.lnc, "mode": schedule.mode,
                          "step_time_s": schedule.step_s,
                          "constants": {k: v["value"] for k, v in report.constants.items()}}}


def write(trace: dict, path: str) -> None:
    """Writes ``trace`` as JSON to ``path``."""
    with open(path, "w") as f:
        json.dump(trace, f)
