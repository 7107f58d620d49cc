"""``NeuronConfig`` and ``ProfileMode``: what a Neuron profile collects (AWS's Neuron Explorer guide,
"NeuronConfig parameters" and "NeuronConfig profile modes").

``NeuronConfig`` is a ``torch._C._profiler._ExperimentalConfig`` (the only type
``torch.profiler.profile(experimental_config=...)`` accepts) that also carries the Neuron parameters.
Every parameter is checked when the config is made, so a bad value fails there, not at export.
"""
from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable

from torch._C._profiler import _ExperimentalConfig

#: ``capture_enabled_for_nc``: comma-separated NeuronCore indices or ranges, ``"0,1,2-5"``.
_CORE_LIST = re.compile(r"^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$")


class ProfileMode(enum.Enum):
    """What a Neuron profile collects on Trainium (and the files the Neuron runtime writes for it)."""

    #: hardware-level NeuronCore instructions (``.neff``, ``.ntff``)
    DEVICE = "device"
    #: the Neuron runtime's system-level trace (``trace_info.pb``, ``ntrace.pb``)
    RUNTIME = "runtime"
    #: host CPU utilization (``cpu_util.pb``)
    CPU_UTIL = "cpu_util"
    #: host memory usage (``host_mem.pb``)
    HOST_MEMORY = "host_memory"


def parse_core_list(text: str) -> list[int]:
    """``"0,1,2-5"`` → ``[0, 1, 2, 3, 4, 5]`` (sorted, without repeats).

    Raises:
        ValueError: not a comma-separated list of indices and ``a-b`` ranges with ``a <= b``.
    """
    if not _CORE_LIST.match(text):
        raise ValueError(f"capture_enabled_for_nc={text!r} is not a list of NeuronCore indices or ranges: "
                         "write it as '0,1,2-5'")
    cores: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if first > last:
            raise ValueError(f"capture_enabled_for_nc={text!r}: the range {part.strip()!r} runs backwards; "
                             f"write it as '{last}-{first}'")
        cores.update(range(first, last + 1))
    return sorted(cores)


class NeuronConfig(_ExperimentalConfig):
    """The Neuron part of a ``torch.profiler.profile`` run (``experimental_config=NeuronConfig(...)``).

    Args:
        modes: the :class:`ProfileMode` values to collect (default ``[DEVICE, RUNTIME]``, AWS's default).
        max_events_per_nc: most trace events kept per NeuronCore (an int > 0), or None for the
            runtime's default.
        capture_enabled_for_nc: the NeuronCores to capture, ``"0,1,2-5"``; None: all.
        profile_output_dir: folder of the profile output (default ``NEURON_RT_INSPECT_OUTPUT_DIR``, else
            ``./output``, the Neuron runtime's default); :class:`~torch_neuronx.profiling.NeuronProfiler`
            writes the framework trace under it.
        neff_cache_dir: the NEFF cache folder whose NEFFs Trainium copies into the profile; kept for the
            caller (there are no NEFFs here).
        precache_node_info: on Trainium, fill per-NEFF metadata during warm-up (default True); kept.

    Raises:
        TypeError: a mode that is not a :class:`ProfileMode` (or its name), or a parameter of the
            wrong type.
        ValueError: ``max_events_per_nc`` <= 0, a malformed ``capture_enabled_for_nc``, or no mode.
    """

    def __init__(self, modes: Iterable[ProfileMode | str] | None = None, max_events_per_nc: int | None = None,
                 capture_enabled_for_nc: str | None = None, profile_output_dir: str | os.PathLike[str] | None = None,
                 neff_cache_dir: str | os.PathLike[str] | None = None, precache_node_info: bool = True) -> None:
        super().__init__()
        chosen = [ProfileMode.DEVICE, ProfileMode.RUNTIME] if modes is None else [_mode(m) for m in modes]
        if not chosen:
            raise ValueError("NeuronConfig(modes=[]): give at least one ProfileMode (default: DEVICE, RUNTIME)")
        self.modes: list[ProfileMode] = list(dict.fromkeys(chosen))
        if max_events_per_nc is not None and (isinstance(max_events_per_nc, bool)
                                              or not isinstance(max_events_per_nc, int)):
            raise TypeError(f"NeuronConfig(max_events_per_nc={max_events_per_nc!r}): an int > 0, or None")
        if max_events_per_nc is not None and max_events_per_nc <= 0:
            raise ValueError(f"NeuronConfig(max_events_per_nc={max_events_per_nc}): must be > 0")
        self.max_events_per_nc: int | None = max_events_per_nc
        if capture_enabled_for_nc is not None and not isinstance(capture_enabled_for_nc, str):
            raise TypeError(f"NeuronConfig(capture_enabled_for_nc={capture_enabled_for_nc!r}): a string such "
                            "as '0,1,2-5', or None for every NeuronCore")
        self.capture_enabled_for_nc: str | None = capture_enabled_for_nc
        #: the cores of ``capture_enabled_for_nc`` (None: all).
        self.capture_cores: list[int] | None = (None if capture_enabled_for_nc is None
                                                else parse_core_list(capture_enabled_for_nc))
        if profile_output_dir is None:
            profile_output_dir = os.environ.get("NEURON_RT_INSPECT_OUTPUT_DIR") or "./output"
        self.profile_output_dir: str = os.fspath(profile_output_dir)
        self.neff_cache_dir: str | None = None if neff_cache_dir is None else os.fspath(neff_cache_dir)
        if not isinstance(precache_node_info, bool):
            raise TypeError(f"NeuronConfig(precache_node_info={precache_node_info!r}): True or False")
        self.precache_node_info: bool = precache_node_info

    def __repr__(self) -> str:
        return (f"NeuronConfig(modes={[m.name for m in self.modes]}, max_events_per_nc={self.max_events_per_nc}, "
                f"capture_enabled_for_nc={self.capture_enabled_for_nc!r}, "
                f"profile_output_dir={self.profile_output_dir!r}, neff_cache_dir={self.neff_cache_dir!r}, "
                f"precache_node_info={self.precache_node_info})")


def _mode(value: ProfileMode | str) -> ProfileMode:
    if isinstance(value, ProfileMode):
        return value
    if isinstance(value, str) and value.upper() in ProfileMode.__members__:
        return ProfileMode[value.upper()]
    raise TypeError(f"NeuronConfig(modes=[..., {value!r}, ...]): each mode is a ProfileMode "
                    f"({', '.join('ProfileMode.' + n for n in ProfileMode.__members__)})")
