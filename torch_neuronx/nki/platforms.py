"""Which platform a simulated NeuronCore is: a view of the runtime's platform table.

The numbers (SBUF/PSUM per partition, engine clocks, MIN_II, DMA queues, Tensor Engine peaks) are
those of :data:`torch_neuronx.runtime.platforms.PLATFORMS`, the table the ``neuron`` device reads
too; the simulator models one *physical* NeuronCore of the row (``platform.core``), with the chip's
HBM divided among its physical cores.

Which row, when a kernel does not name one (``nki.jit(platform_target=...)``,
``nki.benchmark(platform=...)``): the platform of the ``neuron`` device's topology when it is valid,
so an ``nki_op`` on a trn1 device is checked against trn1's SBUF; otherwise
``TORCH_NEURONX_PLATFORM``, read at the call (default ``trn2``).
"""
from __future__ import annotations

from .. import _state
from ..runtime.platforms import PLATFORMS, Platform, get_platform as _runtime_platform, platform_from_env

__all__ = ["PLATFORMS", "Platform", "get_platform", "default_platform"]

# Spellings of AWS's NeuronCore generations accepted wherever a platform name is.
_GENERATIONS = {"gen2": "trn1", "gen3": "trn2", "gen4": "trn3"}


def default_platform() -> Platform:
    """The platform a kernel runs on when it names none (see the module docstring).

    Raises:
        ValueError: when the device topology is invalid and ``TORCH_NEURONX_PLATFORM`` names no
            platform (the message names the variable).
    """
    if _state.topology is not None:
        return _state.topology.platform
    return platform_from_env()


def get_platform(name: str | Platform | None = None) -> Platform:
    """The :class:`~torch_neuronx.runtime.platforms.Platform` for ``name``: ``"trn1" | "trn2" |
    "trn3" | "inf2"`` (or ``"gen2" | "gen3" | "gen4"``); ``None`` gives :func:`default_platform`;
    a Platform is returned unchanged.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).
    """
    if isinstance(name, Platform):
        return name
    if name is None:
        return default_platform()
    key = str(name).strip().lower()
    return _runtime_platform(_GENERATIONS.get(key, key))
