"""``NeuronProfiler``: writes a ``torch.profiler`` run where Neuron Explorer looks for it (AWS's
Neuron Explorer guide: ``NeuronProfiler.export_trace()`` "places the framework trace in the same
directory as Neuron system traces").

Layout: ``<profile_output_dir>/<instance>_pid_<pid>/<timestamp>/trace.json``, one timestamp folder per
export (a ``schedule`` with several cycles exports several). ``<instance>`` is the EC2 instance id on
Trainium; here it is the host name. ``trace.json`` is ``torch.profiler``'s Chrome trace: the CPU-side
ops, their shapes, stacks and FLOPs as requested, and with ``profile_memory=True`` every ``neuron``
allocation and free (the allocator reports them to the profiler).

Not written, because they come from the Neuron runtime and the NeuronCore hardware the software
NeuronCore does not have: the files of ``ProfileMode.DEVICE`` (``.ntff``, ``.neff``) and
``ProfileMode.RUNTIME`` (``ntrace.pb``, ``trace_info.pb``), and the runtime's host samplers of
``CPU_UTIL`` (``cpu_util.pb``) and ``HOST_MEMORY`` (``host_mem.pb``). The first export logs (INFO)
which of the requested modes produced no file. Trainium's per-op and per-graph times are estimated by
``torch_neuronx.estimate`` instead.
"""
from __future__ import annotations

import datetime
import logging
import os
import socket
from pathlib import Path
from typing import Any

from .config import NeuronConfig, ProfileMode

log = logging.getLogger(__name__)

#: The Trainium files of each mode that the software NeuronCore does not write.
NOT_WRITTEN: dict[ProfileMode, str] = {
    ProfileMode.DEVICE: ".ntff device traces and .neff files (no NeuronCore hardware or NEFFs)",
    ProfileMode.RUNTIME: "ntrace.pb and trace_info.pb (no Neuron runtime)",
    ProfileMode.CPU_UTIL: "cpu_util.pb (the Neuron runtime's sampler)",
    ProfileMode.HOST_MEMORY: "host_mem.pb (the Neuron runtime's sampler)",
}


class NeuronProfiler:
    """Exports ``torch.profiler`` runs into a Neuron profile folder.

    Args:
        config: the :class:`~torch_neuronx.profiling.NeuronConfig` given to
            ``torch.profiler.profile(experimental_config=...)``; its ``profile_output_dir`` is where
            traces go.

    Raises:
        TypeError: ``config`` is not a ``NeuronConfig``.
    """

    def __init__(self, config: NeuronConfig) -> None:
        if not isinstance(config, NeuronConfig):
            raise TypeError(f"NeuronProfiler(config={config!r}): pass the NeuronConfig given to "
                            "torch.profiler.profile(experimental_config=...)")
        self.config = config
        #: the folder of every export of this process: ``<profile_output_dir>/<instance>_pid_<pid>``.
        self.process_dir: Path = Path(config.profile_output_dir) / f"{socket.gethostname()}_pid_{os.getpid()}"
        #: the ``trace.json`` files written so far, in order.
        self.exported: list[Path] = []

    def export_trace(self, prof: Any) -> Path:
        """Writes ``prof``'s Chrome trace to ``<process_dir>/<timestamp>/trace.json`` (use it as
        ``on_trace_ready``).

        Args:
            prof: the ``torch.profiler.profile`` that finished (what ``on_trace_ready`` receives).

        Returns:
            The path of the ``trace.json`` written.

        Raises:
            OSError: the folder cannot be created or written.
        """
        stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S_%f")
        folder = self.process_dir / stamp
        suffix = 1
        while folder.exists():                   # two exports in the same microsecond
            folder = self.process_dir / f"{stamp}_{suffix}"
            suffix += 1
        folder.mkdir(parents=True)
        path = folder / "trace.json"
        prof.export_chrome_trace(str(path))
        if not self.exported:
            missing = [f"{mode.name}: {NOT_WRITTEN[mode]}" for mode in self.config.modes]
            log.info("Neuron profile: framework trace written to %s; not written on the software NeuronCore: %s",
                     path, "; ".join(missing))
        self.exported.append(path)
        return path
