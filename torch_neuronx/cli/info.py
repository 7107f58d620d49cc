"""``torch-neuronx info``: what the process sees, like ``neuron-ls``."""
from __future__ import annotations

import os

import torch

from .. import _state
from ..runtime.platforms import SOURCES

from ..runtime.environment import NO_EFFECT, READ

#: The variables ``info`` shows when set: every one the package reads, then those it accepts with no
#: effect (marked so).
ENV_VARS = (*READ, *NO_EFFECT)


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= (1 << 30) else f"{n / (1 << 20):.2f} MiB"


def info_text() -> str:
    """The report printed by ``torch-neuronx info`` (str).

    Raises:
        TopologyError: if the environment describing the topology is invalid.
    """
    topo = _state.require_topology()
    p = topo.platform
    neuron = torch.neuron  # type: ignore[attr-defined]  # registered by the autoload; unknown to torch's stubs
    lines = [
        f"torch-neuronx {__import__('torch_neuronx').__version__} — software NeuronCore "
        f"(torch {torch.__version__})",
        f"platform      {p.name} ({p.chip.name}, {p.core.version})",
        f"chips         {topo.chips}",
        f"LNC           {topo.lnc} physical core(s) per logical NeuronCore "
        f"({topo.logical_cores_per_chip} logical per chip)",
        f"visible       {topo.device_count} of {topo.total_logical_cores} logical NeuronCores: "
        f"{','.join(map(str, topo.visible_cores))}",
        f"HBM per core  {_gib(topo.hbm_bytes_per_core)}"
        + ("  (TORCH_NEURONX_HBM_PER_CORE)" if topo.hbm_from_env else f"  ({SOURCES[p.chip.sources[0]]})"),
        f"current       neuron:{neuron.current_device()}",
        "",
        f"{'device':<10}{'core':>6}{'chip':>6}{'in use':>14}{'peak':>14}{'capacity':>14}",
    ]
    for i in range(topo.device_count):
        c = neuron.memory_stats(i)
        props = neuron.get_device_properties(i)
        lines.append(
            f"{'neuron:' + str(i):<10}{props.global_core_id:>6}{props.chip:>6}"
            f"{_gib(c['allocated_bytes.all.current']):>14}{_gib(c['allocated_bytes.all.peak']):>14}"
            f"{_gib(props.total_memory):>14}"
        )
    set_vars = [f"{k}={os.environ[k]}" for k in READ if k in os.environ]
    ignored = [f"{k}={os.environ[k]}" for k in NO_EFFECT if k in os.environ]
    lines += ["", "environment   " + (" ".join(set_vars) if set_vars else "(defaults)")]
    if ignored:
        lines.append("no effect     " + " ".join(ignored) + "  (Trainium compiler / runtime settings; see README)")
    return "\n".join(lines)
