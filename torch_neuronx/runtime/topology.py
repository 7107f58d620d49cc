"""The software NeuronCore topology, read from the environment.

Variables (all optional):

* ``TORCH_NEURONX_PLATFORM`` — ``trn1`` | ``trn2`` (default) | ``trn3`` | ``inf2``: a row of
  :data:`.platforms.PLATFORMS`.
* ``TORCH_NEURONX_CHIPS`` — number of Trainium chips, default 1.
* ``NEURON_LOGICAL_NC_CONFIG`` — physical cores per logical core, 1 or 2
  (default 2 on trn2/trn3, 1 on trn1/inf2, which have no LNC=2). ``NEURON_RT_VIRTUAL_CORE_SIZE``,
  the Neuron runtime's name for the same number (AWS's launch scripts set it, with
  ``NEURON_RT_NUM_CORES`` = physical cores ÷ it), is read when ``NEURON_LOGICAL_NC_CONFIG`` is not
  set; both set to different values is an error.
* ``NEURON_RT_VISIBLE_CORES`` — which logical cores this process sees:
  ``"0-3"``, ``"1"``, ``"0,2"``. Visible cores are renumbered from 0, as
  ``CUDA_VISIBLE_DEVICES`` does.
* ``TORCH_NEURONX_HBM_PER_CORE`` — HBM capacity of each logical core
  (``"64MiB"``, ``"2GiB"``, ``"1.5GB"`` or plain bytes); default: the chip's
  HBM divided among its logical cores (24 GiB at LNC=2 on trn2).
* ``NEURON_RT_NUM_CORES`` — how many logical cores the process takes (``0`` or unset: all).
  The Neuron runtime reserves that many *free* cores per process, so processes of one launcher
  each get their own; modelled deterministically: with ``LOCAL_RANK=r`` (and no
  ``NEURON_RT_VISIBLE_CORES``) the process takes cores ``[r*N, (r+1)*N)``, otherwise the first
  ``N`` visible ones; its default device is the first of them (``neuron:0``).
* ``LOCAL_RANK`` — the process's current device defaults to it (torchrun); ``-1`` (the usual
  "not one of several local processes" value) counts as unset.

Bad values raise :class:`TopologyError` naming the variable and the fix.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .platforms import Platform, platform_from_env


class TopologyError(RuntimeError, ValueError):
    """An environment variable describing the topology has a bad value.

    A ``RuntimeError`` (what device errors are in PyTorch) and a ``ValueError``.
    """


@dataclass(frozen=True)
class Topology:
    """What the process sees of the (software) Trainium instance.

    Attributes:
        platform: the :class:`Platform` row.
        chips: number of chips.
        lnc: physical NeuronCores per logical NeuronCore.
        visible_cores: global logical-core ids this process sees; ``neuron:i``
            is ``visible_cores[i]``.
        hbm_bytes_per_core: capacity of each logical core, bytes.
        hbm_from_env: True when ``TORCH_NEURONX_HBM_PER_CORE`` set it.
        default_device: index of the process's default current device.
        cores_per_process: ``NEURON_RT_NUM_CORES`` (0: unset or 0, i.e. every visible core).
        core_block_from_rank: True when ``LOCAL_RANK`` chose which ``cores_per_process`` cores
            this process took (no ``NEURON_RT_VISIBLE_CORES``): the launcher's processes share
            the instance's cores in blocks, and a node may run ``total_logical_cores //
            cores_per_process`` of them.
    """

    platform: Platform
    chips: int
    lnc: int
    visible_cores: tuple[int, ...]
    hbm_bytes_per_core: int
    hbm_from_env: bool = False
    default_device: int = 0
    env: dict = field(default_factory=dict)
    cores_per_process: int = 0
    core_block_from_rank: bool = False

    @property
    def logical_cores_per_chip(self) -> int:
        return self.platform.chip.physical_cores // self.lnc

    @property
    def total_logical_cores(self) -> int:
        return self.chips * self.logical_cores_per_chip

    @property
    def device_count(self) -> int:
        return len(self.visible_cores)

    def describe(self) -> str:
        """One line, e.g. ``trn2, 1 chip, LNC=2, 4 logical NeuronCores visible``."""
        taken = f" (NEURON_RT_NUM_CORES={self.cores_per_process})" if self.cores_per_process else ""
        return (
            f"{self.platform.name} ({self.platform.chip.name}), {self.chips} chip"
            f"{'s' if self.chips != 1 else ''}, LNC={self.lnc}, {self.device_count} of "
            f"{self.total_logical_cores} logical NeuronCores visible{taken}"
        )


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kb": 10**3, "kib": 1 << 10,
    "m": 1 << 20, "mb": 10**6, "mib": 1 << 20,
    "g": 1 << 30, "gb": 10**9, "gib": 1 << 30,
    "t": 1 << 40, "tb": 10**12, "tib": 1 << 40,
}


def parse_bytes(text: str, variable: str = "TORCH_NEURONX_HBM_PER_CORE") -> int:
    """Parses ``"64MiB"``, ``"2GiB"``, ``"1.5GB"``, ``"1048576"`` into bytes.

    Raises:
        TopologyError: naming ``variable`` when the text is not a size.
    """
    match = _SIZE.match(text)
    unit = (match.group(2) or "").lower() if match else None
    if not match or unit not in _UNITS:
        raise TopologyError(
            f"{variable}={text!r} is not a size: use bytes or a number with a unit, "
            f"e.g. {variable}=64MiB, 2GiB or 1073741824"
        )
    number = float(match.group(1))
    if _UNITS[unit] == 1 and not number.is_integer():
        raise TopologyError(
            f"{variable}={text!r}: a plain number is a count of bytes and must be whole; "
            f"add a unit, e.g. {variable}={match.group(1)}GiB"
        )
    value = int(number * _UNITS[unit])
    if value <= 0:
        raise TopologyError(f"{variable}={text!r} must be a positive size, e.g. 64MiB")
    return value


def parse_core_list(text: str, total: int, variable: str = "NEURON_RT_VISIBLE_CORES") -> tuple[int, ...]:
    """Parses ``"0-3"``, ``"1"``, ``"0,2"``, ``"0-1,4"`` into sorted unique core ids.

    Raises:
        TopologyError: for bad syntax, ranges that run backwards, or ids not
            below ``total`` (the number of logical cores on the instance).
    """
    cores: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise TopologyError(
                f"{variable}={text!r} is not a core list: use a range '0-3', one core '1' "
                f"or a list '0,2'"
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise TopologyError(f"{variable}={text!r}: range {part!r} runs backwards; write {hi}-{lo}")
        repeated = sorted(cores.intersection(range(lo, hi + 1)))
        if repeated:
            raise TopologyError(f"{variable}={text!r} names core(s) {repeated} more than once")
        cores.update(range(lo, hi + 1))
    bad = sorted(c for c in cores if c >= total)
    if bad:
        shown = f"{bad[0]}-{bad[-1]}" if len(bad) > 4 else str(bad)
        raise TopologyError(
            f"{variable}={text!r} names logical NeuronCore(s) {shown}, but the instance has only "
            f"{total} (ids 0-{total - 1}); raise TORCH_NEURONX_CHIPS or lower "
            f"NEURON_LOGICAL_NC_CONFIG to get more cores"
        )
    return tuple(sorted(cores))


#: What each integer variable counts, for its error messages.
_INT_MEANING = {
    "TORCH_NEURONX_CHIPS": "the number of Trainium chips, e.g. TORCH_NEURONX_CHIPS=2",
    "NEURON_LOGICAL_NC_CONFIG": "physical NeuronCores per logical core, 1 or 2",
    "NEURON_RT_VIRTUAL_CORE_SIZE": "physical NeuronCores per logical core (the runtime's name for "
                                   "NEURON_LOGICAL_NC_CONFIG), 1 or 2",
    "NEURON_RT_NUM_CORES": "the number of logical NeuronCores the process takes, e.g. NEURON_RT_NUM_CORES=1 "
                           "(0 or unset: all)",
}


def _int_var(env, name: str, default: int, minimum: int = 1) -> int:
    """The integer value of ``name`` in ``env`` (``default`` when unset or blank).

    Raises:
        TopologyError: not an integer, or below ``minimum``; the message says what the variable counts.
    """
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    meaning = f": it is {_INT_MEANING[name]}" if name in _INT_MEANING else ""
    try:
        value = int(raw.strip())
    except ValueError:
        raise TopologyError(f"{name}={raw!r} is not an integer{meaning}") from None
    if value < minimum:
        raise TopologyError(f"{name}={raw!r} must be at least {minimum}{meaning}")
    return value


def _lnc(env: Mapping[str, str], default: int) -> tuple[int, str]:
    """The logical NeuronCore size and the variable it came from: ``NEURON_LOGICAL_NC_CONFIG``, else
    ``NEURON_RT_VIRTUAL_CORE_SIZE``, else ``default`` (named as ``NEURON_LOGICAL_NC_CONFIG``).

    Raises:
        TopologyError: a value that is not an integer >= 1, or the two variables set to different values.
    """
    config = _int_var(env, "NEURON_LOGICAL_NC_CONFIG", 0)
    virtual = _int_var(env, "NEURON_RT_VIRTUAL_CORE_SIZE", 0)
    if config and virtual and config != virtual:
        raise TopologyError(
            f"NEURON_LOGICAL_NC_CONFIG={config} and NEURON_RT_VIRTUAL_CORE_SIZE={virtual} disagree: both set "
            f"the physical NeuronCores per logical core; set one of them, or both to the same value")
    if config:
        return config, "NEURON_LOGICAL_NC_CONFIG"
    if virtual:
        return virtual, "NEURON_RT_VIRTUAL_CORE_SIZE"
    return default, "NEURON_LOGICAL_NC_CONFIG"


def _local_rank(env: Mapping[str, str]) -> int | None:
    """``LOCAL_RANK`` as an index (``None`` when unset or ``-1``).

    Raises:
        TopologyError: not an integer, or negative other than ``-1``.
    """
    local_rank = env.get("LOCAL_RANK")
    if local_rank is None or not local_rank.strip():
        return None
    try:
        rank = int(local_rank)
    except ValueError:
        raise TopologyError(f"LOCAL_RANK={local_rank!r} is not an integer") from None
    if rank == -1:
        # The conventional "not launched as one of several local processes" value
        # (transformers' TrainingArguments.local_rank default, exported by some scripts).
        return None
    if rank < -1:
        raise TopologyError(
            f"LOCAL_RANK={rank} is negative: it must be the process's index on its node "
            f"(0, 1, ...), or -1 / unset for a single process"
        )
    return rank


def _take_num_cores(env: Mapping[str, str], visible: tuple[int, ...], visible_from_env: bool,
                    rank: int | None, total: int) -> tuple[tuple[int, ...], bool]:
    """The cores ``NEURON_RT_NUM_CORES`` leaves the process, and whether ``LOCAL_RANK`` chose them.

    Raises:
        TopologyError: a bad value, or more cores than the instance (or the visible list) holds.
    """
    n = _int_var(env, "NEURON_RT_NUM_CORES", 0, minimum=0)
    if n == 0:
        return visible, False
    if visible_from_env:
        if n > len(visible):
            raise TopologyError(
                f"NEURON_RT_NUM_CORES={n} but NEURON_RT_VISIBLE_CORES={env['NEURON_RT_VISIBLE_CORES']!r} "
                f"names only {len(visible)} logical NeuronCore(s): lower NEURON_RT_NUM_CORES to at most "
                f"{len(visible)} or make more cores visible"
            )
        return visible[:n], False
    if rank is None:
        if n > total:
            raise TopologyError(
                f"NEURON_RT_NUM_CORES={n} but the instance has only {total} logical NeuronCore(s): lower it "
                f"to at most {total}, or raise TORCH_NEURONX_CHIPS / lower NEURON_LOGICAL_NC_CONFIG"
            )
        return visible[:n], False
    first, last = rank * n, (rank + 1) * n - 1
    if last >= total:
        raise TopologyError(
            f"NEURON_RT_NUM_CORES={n} with LOCAL_RANK={rank}: this process would take logical NeuronCores "
            f"{first}-{last}, but the instance has only {total} (ids 0-{total - 1}); the Neuron runtime gives "
            f"each process its own {n} core(s), so start at most {total // n} process(es) per node "
            f"(torchrun --nproc-per-node), lower NEURON_RT_NUM_CORES, or raise TORCH_NEURONX_CHIPS"
        )
    return tuple(range(first, last + 1)), True


def read_topology(env: Mapping[str, str] | None = None) -> Topology:
    """Builds the topology from ``env`` (default ``os.environ``).

    Raises:
        TopologyError: naming the variable whose value is invalid.
    """
    env = os.environ if env is None else env
    try:
        platform = platform_from_env(env)
    except ValueError as err:
        raise TopologyError(str(err)) from None
    chips = _int_var(env, "TORCH_NEURONX_CHIPS", 1)
    lnc, lnc_name = _lnc(env, platform.chip.default_lnc)
    if lnc not in platform.chip.lnc_choices:
        raise TopologyError(
            f"{lnc_name}={lnc} is not supported on {platform.name}: use "
            f"{' or '.join(str(c) for c in platform.chip.lnc_choices)}"
        )
    total = chips * (platform.chip.physical_cores // lnc)
    visible_text = env.get("NEURON_RT_VISIBLE_CORES")
    visible_from_env = visible_text is not None and bool(visible_text.strip())
    if visible_from_env:
        visible = parse_core_list(visible_text or "", total)
    else:
        visible = tuple(range(total))
    rank = _local_rank(env)
    visible, block_from_rank = _take_num_cores(env, visible, visible_from_env, rank, total)
    cores_per_process = _int_var(env, "NEURON_RT_NUM_CORES", 0, minimum=0)
    hbm_text = env.get("TORCH_NEURONX_HBM_PER_CORE")
    if hbm_text is not None and hbm_text.strip():
        hbm = parse_bytes(hbm_text)
        from_env = True
    else:
        hbm = platform.chip.hbm_bytes // (platform.chip.physical_cores // lnc)
        from_env = False
    default_device = 0
    if rank is None or cores_per_process:
        # Unset / -1, or NEURON_RT_NUM_CORES: the process drives the first of its cores (the
        # runtime renumbers a process's cores from 0, and LOCAL_RANK already chose the block).
        default_device = 0
    elif len(visible) == 1:
        # One core per process (torchrun with per-rank NEURON_RT_VISIBLE_CORES).
        default_device = 0
    elif rank < len(visible):
        default_device = rank
    else:
        raise TopologyError(
            f"LOCAL_RANK={rank} but only {len(visible)} logical NeuronCore(s) are visible "
            f"({platform.name}, LNC={lnc}): start at most {len(visible)} processes per node "
            f"(torchrun --nproc-per-node), or make more cores visible with "
            f"NEURON_RT_VISIBLE_CORES / TORCH_NEURONX_CHIPS, or give each process its own cores "
            f"with NEURON_RT_NUM_CORES=1"
        )
    return Topology(
        platform=platform,
        chips=chips,
        lnc=lnc,
        visible_cores=visible,
        hbm_bytes_per_core=hbm,
        hbm_from_env=from_env,
        default_device=default_device,
        cores_per_process=cores_per_process,
        core_block_from_rank=block_from_rank,
    )
