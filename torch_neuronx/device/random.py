"""``torch.neuron`` RNG API. Each logical core has a default generator whose
state is 16 bytes, (uint64 seed, uint64 offset), the Philox-style layout
DTensor's random ops rewrite per shard. Random streams differ from CPU's
(as CUDA's do) but are reproducible for a given seed.
"""
from __future__ import annotations

from collections.abc import Iterable

import torch

from .. import _C
from .._device_index import DeviceLike, device_index


def _generator(device: DeviceLike = None) -> torch.Generator:
    return _C._default_generator(device_index(device))


def _all_indices() -> range:
    return range(_C._device_count())


def default_generator(device: DeviceLike = None) -> torch.Generator:
    """The default ``torch.Generator`` of ``device`` (default: current)."""
    return _generator(device)


def all_default_generators() -> tuple[torch.Generator, ...]:
    """Every visible device's default generator, by index (what ``torch.cuda.default_generators``
    holds); served as the attribute ``torch.neuron.default_generators``."""
    return tuple(_C._default_generator(i) for i in _all_indices())


def manual_seed(seed: int) -> None:
    """Seeds the current device's default generator."""
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds the default generator of every visible device."""
    for i in _all_indices():
        _C._default_generator(i).manual_seed(int(seed))


def seed() -> None:
    """Seeds the current device's generator with a non-deterministic random number."""
    _generator().seed()


def seed_all() -> None:
    """Seeds every device's generator with one non-deterministic random number."""
    value = _generator().seed() if _C._device_count() else 0
    for i in _all_indices():
        _C._default_generator(i).manual_seed(value)


def initial_seed() -> int:
    """The current device's seed."""
    return _generator().initial_seed()


def get_rng_state(device: DeviceLike = "neuron") -> torch.Tensor:
    """The 16-byte uint8 CPU tensor (seed, offset) of ``device``'s generator."""
    return _generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: DeviceLike = "neuron") -> None:
    """Restores a state returned by :func:`get_rng_state`.

    ``new_state`` may be on any device (a checkpoint loaded with ``map_location="neuron"`` holds it
    on the device); it is read from the CPU.

    Raises:
        TypeError: if ``new_state`` is not a uint8 tensor (as ``torch.set_rng_state`` refuses one):
            converting its values would set a state nobody saved.
        RuntimeError: if ``new_state`` is not 16 uint8 values, or has no data (a FakeTensor).
    """
    if new_state.dtype != torch.uint8:
        raise TypeError(
            f"RNG state must be a torch.uint8 (ByteTensor) tensor, got {new_state.dtype}: pass the value "
            f"torch.neuron.get_rng_state() returned, unconverted (16 bytes: uint64 seed, uint64 offset)")
    if new_state.device.type != "cpu":
        # Moving dispatches an op: under FakeTensorMode (activation checkpointing in a
        # shape-only run) the result would be a FakeTensor without data.
        new_state = new_state.detach().to("cpu")
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    """States of every visible device, index order."""
    return [get_rng_state(i) for i in _all_indices()]


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    """Restores every device from :func:`get_rng_state_all`'s list."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
