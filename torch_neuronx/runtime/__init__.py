"""The software NeuronCore runtime: the platform table, the topology, device properties' numbers."""
from .platforms import PLATFORMS, Platform, get_platform, platform_from_env
from .topology import Topology, TopologyError, parse_bytes, parse_core_list, read_topology

__all__ = [
    "PLATFORMS", "Platform", "Topology", "TopologyError", "get_platform", "parse_bytes",
    "parse_core_list", "platform_from_env", "read_topology",
]
