"""Process-wide state of torch_neuronx: the topology read at autoload."""
from __future__ import annotations

import logging

from .runtime.topology import Topology, TopologyError, read_topology

log = logging.getLogger(__name__)

topology: Topology | None = None
topology_error: TopologyError | None = None


def load_topology() -> None:
    """Reads the environment once and hands the topology to the C++ core.

    An invalid environment does not fail ``import torch``: the error is kept
    and raised by the first device use (and by :func:`require_topology`).
    """
    global topology, topology_error
    from . import _C

    try:
        topology = read_topology()
        topology_error = None
        _C._set_topology(
            topology.device_count,
            topology.hbm_bytes_per_core,
            topology.describe(),
            "",
            topology.default_device,
        )
        log.debug("topology: %s; logical cores %s; default device neuron:%d", topology.describe(),
                  ",".join(map(str, topology.visible_cores)), topology.default_device)
    except TopologyError as err:
        topology = None
        topology_error = err
        log.info("neuron device unavailable (raised at the first device use): %s", err)
        _C._set_topology(0, 0, "invalid topology", f"neuron device unavailable: {err}", 0)


def require_topology() -> Topology:
    """The topology, or the :class:`TopologyError` that made it invalid."""
    if topology is None:
        raise TopologyError(f"neuron device unavailable: {topology_error}")
    return topology
