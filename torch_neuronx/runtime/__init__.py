"""The software NeuronCore runtime: topology, device properties, hardware numbers."""
from .platforms import PLATFORMS, Platform
from .topology import Topology, TopologyError, parse_bytes, parse_core_list, read_topology

__all__ = [
    "PLATFORMS", "Platform", "Topology", "TopologyError",
    "parse_bytes", "parse_core_list", "read_topology",
]
