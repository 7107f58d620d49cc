"""``torch_neuronx.profiling``: TorchNeuron's extension of ``torch.profiler`` (AWS's Neuron Explorer
guide, "PyTorch profiling").

``NeuronConfig`` is passed as ``torch.profiler.profile(experimental_config=...)`` with activities
``[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]``, and ``NeuronProfiler(config).export_trace``
as ``on_trace_ready``; the framework trace lands in AWS's layout,
``<profile_output_dir>/<instance>_pid_<pid>/<timestamp>/trace.json``. On Trainium the
``ProfileMode`` values also make the Neuron runtime write device and system traces (``.ntff``,
``ntrace.pb``, ``cpu_util.pb``, ``host_mem.pb``) next to it; the software NeuronCore has no runtime
to trace, so those files are not written (:mod:`.exporter` says what is there instead).
"""
from __future__ import annotations

from .config import NeuronConfig, ProfileMode
from .exporter import NeuronProfiler

__all__ = ["NeuronConfig", "NeuronProfiler", "ProfileMode"]
