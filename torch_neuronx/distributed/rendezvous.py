"""TorchNeuron's rendezvous rules: one process per logical NeuronCore.

Launcher variables read (torchrun sets them): ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``.

* The process drives logical core ``LOCAL_RANK`` of the visible cores: its
  current device is ``neuron:<LOCAL_RANK>`` (the runtime already defaults to it
  at ``import torch``; accelerate reads ``torch.neuron.current_device()`` and
  transformers sets ``torch.accelerator.set_device_index(LOCAL_RANK)``, so the
  visible set is not narrowed inside the process).
* ``NEURON_RT_VISIBLE_CORES``, when absent, is set to the global id of the core
  this process drives, so tools and child processes (which then see that one
  core as ``neuron:0``) agree with the Neuron runtime's convention. With
  ``NEURON_RT_NUM_CORES=N`` the process took its own ``N`` cores (block
  ``LOCAL_RANK`` of the instance, ``neuron:0`` first) and the variable is set to
  that block (``"2-3"``).
* ``NEURON_RT_ROOT_COMM_ID``, when absent, is ``<MASTER_ADDR>:<MASTER_PORT>``
  (the rank-0 host the Neuron runtime bootstraps collectives from; here gloo
  rendezvous through the c10d store at the same address).
* More local processes than visible cores (or, with ``NEURON_RT_NUM_CORES=N``,
  more than the instance's cores divided by ``N``) is an error naming both counts, and
  two ranks of one node driving the same core is an error naming the ranks
  (:func:`claim_core`, checked through the store at ``init_process_group``).
  The core a rank drives is its current device, so the CUDA idiom
  ``torch.neuron.set_device(rank)`` under ``mp.spawn`` (no ``LOCAL_RANK``) works.
* Without ``MASTER_ADDR`` (``init_method="tcp://host:port"``, as Ray and
  ``mp.spawn`` scripts use), ``NEURON_RT_ROOT_COMM_ID`` is filled from the
  address of the default group's ``TCPStore`` (:func:`root_comm_id_from_store`).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch.distributed as dist

log = logging.getLogger(__name__)



class RendezvousError(RuntimeError):
    """The launcher started a process layout the NeuronCores cannot host."""


class RendezvousWarning(UserWarning):
    """The launch works on the software NeuronCore but lacks what Trainium's runtime needs."""


def _int_env(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        return int(raw)
    except ValueError:
        raise RendezvousError(f"{name}={raw!r} is not an integer (set by the launcher, e.g. torchrun)") from None


def _core_list(cores: tuple[int, ...]) -> str:
    """``(2, 3, 4, 7)`` as ``"2-4,7"``, the form ``NEURON_RT_VISIBLE_CORES`` takes."""
    parts: list[str] = []
    start = prev = cores[0]
    for c in (*cores[1:], None):
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if c is not None:
            start = prev = c
    return ",".join(parts)


def local_device(env: Mapping[str, str] | None = None) -> int:
    """Index of the ``neuron`` device this process drives: ``LOCAL_RANK`` (0 if unset).

    Raises:
        RendezvousError: when ``LOCAL_WORLD_SIZE`` (or ``LOCAL_RANK + 1``) exceeds
            the number of visible logical NeuronCores.
    """
    env = os.environ if env is None else env
    check_local_processes(env)
    local_rank = _int_env(env, "LOCAL_RANK") or 0
    from .. import _state

    topo = _state.require_topology()
    # One visible core per process (the launcher narrowed it), or NEURON_RT_NUM_CORES (the
    # process took its own cores): the first of them is neuron:0.
    return 0 if topo.device_count == 1 or topo.cores_per_process else local_rank


def check_local_processes(env: Mapping[str, str] | None = None) -> None:
    """Raises if this node runs more processes than it has visible logical NeuronCores.

    Every local rank raises (not only those past the last core), so no rank
    waits for peers that cannot start. A launcher that gives each process its
    own core (``NEURON_RT_VISIBLE_CORES=<one id>``) passes.

    Raises:
        RendezvousError: naming ``LOCAL_WORLD_SIZE``/``LOCAL_RANK``, the visible
            count and the fix.
        TopologyError: when the topology itself is invalid (e.g. ``LOCAL_RANK``
            past the visible cores), with the runtime's message.
    """
    from .. import _state

    env = os.environ if env is None else env
    topo = _state.require_topology()
    count = topo.device_count
    if count == 1 and env.get("NEURON_RT_VISIBLE_CORES", "").strip().isdigit():
        return
    local_world = _int_env(env, "LOCAL_WORLD_SIZE")
    local_rank = _int_env(env, "LOCAL_RANK")
    needed = max(local_world or 0, (local_rank + 1) if local_rank is not None else 0)
    if topo.cores_per_process:
        n = topo.cores_per_process
        if not topo.core_block_from_rank:
            # NEURON_RT_VISIBLE_CORES gave the cores; whether two processes took the same ones is
            # checked per core by claim_core.
            return
        if needed * n > topo.total_logical_cores:
            raise RendezvousError(
                f"this node runs {needed} processes (LOCAL_WORLD_SIZE={local_world}, LOCAL_RANK={local_rank}) "
                f"and each takes NEURON_RT_NUM_CORES={n} logical NeuronCore(s), {needed * n} in all, but the "
                f"instance has {topo.total_logical_cores} ({topo.describe()}): start at most "
                f"{topo.total_logical_cores // n} processes per node (torchrun --nproc-per-node), or lower "
                f"NEURON_RT_NUM_CORES, or add cores (TORCH_NEURONX_CHIPS, NEURON_LOGICAL_NC_CONFIG=1)"
            )
        return
    if needed > count:
        raise RendezvousError(
            f"this node runs {needed} processes (LOCAL_WORLD_SIZE={local_world}, LOCAL_RANK={local_rank}) "
            f"but only {count} logical NeuronCore(s) are visible ({topo.describe()}); TorchNeuron drives "
            f"one logical core per process: start at most {count} processes per node "
            f"(torchrun --nproc-per-node {count}), or make more cores visible "
            f"(NEURON_RT_VISIBLE_CORES, TORCH_NEURONX_CHIPS, NEURON_LOGICAL_NC_CONFIG=1)"
        )


def apply_launcher_environment(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Fills ``NEURON_RT_VISIBLE_CORES`` and ``NEURON_RT_ROOT_COMM_ID`` from the launcher's
    variables when they are absent.

    The current device is not changed here: the runtime already makes
    ``neuron:<LOCAL_RANK>`` current at ``import torch``, and a device the
    script chose itself is respected.

    Args:
        env: the environment to read and update (default ``os.environ``).

    Returns:
        The variables it set (name → value), empty if none.

    Raises:
        RendezvousError: too many local processes for the visible cores.
    """
    env = os.environ if env is None else env
    device = local_device(env)
    set_vars: dict[str, str] = {}
    if not env.get("NEURON_RT_VISIBLE_CORES", "").strip() and env.get("LOCAL_RANK", "").strip():
        from .. import _state

        topo = _state.topology
        if topo is not None and topo.cores_per_process:
            # The cores NEURON_RT_NUM_CORES gave this process: a child (which inherits
            # NEURON_RT_NUM_CORES and LOCAL_RANK) then sees the same cores, neuron:0 first.
            set_vars["NEURON_RT_VISIBLE_CORES"] = _core_list(topo.visible_cores)
        else:
            core = topo.visible_cores[device] if topo is not None else device
            set_vars["NEURON_RT_VISIBLE_CORES"] = str(core)
    if not env.get("NEURON_RT_ROOT_COMM_ID", "").strip() and env.get("MASTER_ADDR", "").strip():
        port = env.get("MASTER_PORT", "").strip()
        set_vars["NEURON_RT_ROOT_COMM_ID"] = f"{env['MASTER_ADDR']}:{port}" if port else env["MASTER_ADDR"]
    env.update(set_vars)
    if set_vars:
        log.info("LOCAL_RANK=%s drives neuron:%d; set %s", env.get("LOCAL_RANK", "-"), device,
                 " ".join(f"{k}={v}" for k, v in set_vars.items()))
    return set_vars


def root_comm_id_from_store(store: dist.Store) -> str | None:
    """``<host>:<port>`` of the ``TCPStore`` under ``store`` (through any ``PrefixStore``), or
    ``None`` for a store without a network address (``FileStore``, ``HashStore``).

    ``init_process_group(init_method="tcp://host:port")`` (Ray, ``mp.spawn`` scripts) rendezvous
    through such a store without setting ``MASTER_ADDR``; its address is where rank 0 listens,
    the address Trainium's runtime bootstraps collectives from (``NEURON_RT_ROOT_COMM_ID``).
    """
    import torch.distributed as dist

    seen = 0
    while isinstance(store, dist.PrefixStore) and seen < 64:
        store = store.underlying_store
        seen += 1
    if isinstance(store, dist.TCPStore):
        return f"{store.host}:{store.port}"
    return None


def fill_root_comm_id(store: dist.Store, world_size: int, env: MutableMapping[str, str] | None = None) -> str | None:
    """Sets ``NEURON_RT_ROOT_COMM_ID`` from the default group's store when it is still unset.

    Called by the c10d creator for the default group after
    :func:`apply_launcher_environment` (which fills it from ``MASTER_ADDR``).

    Args:
        store: the default group's store.
        world_size: number of ranks (a one-rank group needs no root).
        env: the environment to update (default ``os.environ``).

    Returns:
        The value set, or ``None`` when nothing was set.

    Warns:
        RendezvousWarning: several ranks rendezvous through a store without an address
            (``init_method="file://..."``): the software NeuronCore runs, Trainium's collectives
            would not start; the message names the variable to set.
    """
    env = os.environ if env is None else env
    if env.get("NEURON_RT_ROOT_COMM_ID", "").strip():
        return None
    root = root_comm_id_from_store(store)
    if root is not None:
        env["NEURON_RT_ROOT_COMM_ID"] = root
        return root
    if world_size > 1:
        import warnings

        warnings.warn(
            f"NEURON_RT_ROOT_COMM_ID is not set and the rendezvous store ({type(store).__name__}) has no "
            f"network address: Trainium's runtime bootstraps collectives from "
            f"NEURON_RT_ROOT_COMM_ID=<rank-0 host>:<port> and would not start them. Set it on every rank "
            f"(or MASTER_ADDR and MASTER_PORT, or use init_method='tcp://<rank-0 host>:<port>'); the software "
            f"NeuronCore runs the collectives without it.",
            RendezvousWarning, stacklevel=3)
    return None


def claim_core(store: dist.Store, rank: int, world_size: int, env: Mapping[str, str] | None = None,
               device: int | None = None) -> None:
    """Checks that no two ranks on one node drive the same logical NeuronCore.

    Each rank writes ``<host>/<node rank>/<global core id>`` into the default
    group's store and reads everyone's (one ``set`` and ``world_size`` ``get``
    at ``init_process_group``). The node rank (torchrun's ``GROUP_RANK``) keeps
    two "nodes" launched on one machine apart.

    Args:
        store: the default group's store.
        rank: this process's global rank.
        world_size: number of ranks.
        env: environment to read (default ``os.environ``).
        device: index of the ``neuron`` device this rank drives (default: the
            current device, which is ``LOCAL_RANK`` under torchrun unless the
            script called ``torch.neuron.set_device``).

    Raises:
        RendezvousError: on every rank of a clash, naming the ranks, the host
            and the core (e.g. ``NEURON_RT_VISIBLE_CORES=0`` given to two
            processes).
    """
    import socket

    from .. import _state

    env = os.environ if env is None else env
    topo = _state.require_topology()
    check_local_processes(env)
    if device is None:
        from .. import device as neuron

        device = neuron.current_device()
    core = topo.visible_cores[device]
    node = env.get("GROUP_RANK", "0")
    mine = f"{socket.gethostname()}/{node}/{core}"
    store.set(f"neuron_core/{rank}", mine)
    owners: dict[str, list[int]] = {}
    for r in range(world_size):
        owners.setdefault(store.get(f"neuron_core/{r}").decode(), []).append(r)
    clashes = {k: v for k, v in owners.items() if len(v) > 1}
    log.debug("rank %d drives logical NeuronCore %d (neuron:%d) of host %s, node %s", rank, core, device,
              mine.split("/")[0], node)
    if clashes:
        what = "; ".join(
            f"ranks {v} all drive logical NeuronCore {k.rsplit('/', 1)[1]} of host {k.split('/')[0]} "
            f"(node {k.split('/')[1]})"
            for k, v in clashes.items()
        )
        raise RendezvousError(
            f"{what}: TorchNeuron drives one logical core per process. Give each process its own core "
            f"(let the launcher set LOCAL_RANK and leave NEURON_RT_VISIBLE_CORES unset, call "
            f"torch.neuron.set_device(local rank) before init_process_group, or set NEURON_RT_VISIBLE_CORES "
            f"to a different core per process)"
        )
