"""``torch.compiler.save_cache_artifacts`` / ``load_cache_artifacts`` for backend ``"neuron"``.

PyTorch's portable ("Mega-Cache") artifacts collect what each cache of a compile produced so a
program can ship them (a database, a container image) and seed a fresh machine's caches before it
compiles. Backend ``"neuron"`` turns Inductor's FX-graph and AOTAutograd caches off (its own
:mod:`.cache` is the one source of compiled graphs), so without this module
``save_cache_artifacts()`` would return None after a neuron compile.

Each ATen graph the backend compiles or loads is recorded as a :class:`NeuronGraphArtifact`
(type ``"neuron_graph"``): its cache key and the complete disk entry (header and artifact, in the
layout of ``<TORCH_NEURONX_NEFF_CACHE_DIR>/<k[0:2]>/<k[2:4]>/<k>.inductor``).
``load_cache_artifacts`` writes each entry into this process's disk cache (checked, written
atomically; an entry already there is kept; nothing when ``TORCH_NEURONX_NEFF_DISABLE_CACHE=1``),
so the next compile of the same graph is a disk hit, exactly as if an earlier run on this machine
had compiled it. Inductor's kernel binaries are not shipped: a loaded entry builds its C++
kernels once (no graph compile).

The artifact type is registered with PyTorch when Dynamo loads (``torch_neuronx._autoload`` runs
:func:`register` through its Dynamo import hook), so a fresh process can load artifacts before it
compiled anything.
"""
from __future__ import annotations

import threading
from typing import Any

from . import cache

#: ``CacheArtifact.type()`` of our entries (``CacheInfo.neuron_graph_artifacts`` lists their keys).
ARTIFACT_TYPE = "neuron_graph"

_lock = threading.Lock()
_artifact_cls: type | None = None


def _make_artifact_cls() -> type:
    from torch.compiler._cache import CacheArtifact

    class NeuronGraphArtifact(CacheArtifact):
        """One disk cache entry of backend ``"neuron"`` (key: the graph's cache key)."""

        def populate_cache(self) -> None:
            write_entry_if_absent(self.key, self.content)

        @staticmethod
        def type() -> str:
            return ARTIFACT_TYPE

    return NeuronGraphArtifact


def register() -> type:
    """Registers :class:`NeuronGraphArtifact` with PyTorch's ``CacheArtifactFactory`` (once per
    process) and returns it. Imports ``torch.compiler._cache`` only."""
    global _artifact_cls
    with _lock:
        if _artifact_cls is None:
            from torch.compiler._cache import CacheArtifactFactory

            cls = _make_artifact_cls()
            CacheArtifactFactory.register(cls)
            _artifact_cls = cls
        return _artifact_cls


def record(key: str, header: dict[str, Any], artifact: bytes) -> None:
    """Records one graph for the next ``torch.compiler.save_cache_artifacts()``.

    Args:
        key: the graph's cache key (:func:`~torch_neuronx.compile.cache_key.graph_cache_key`).
        header: the entry description (kind, name); the key and format are added.
        artifact: the serialized graph (:func:`~torch_neuronx.compile.serialization.serialize`).
    """
    from torch.compiler._cache import CacheArtifactManager

    register()
    entry = cache.encode_entry(dict(header, key=key, format=cache.FORMAT_VERSION), artifact)
    CacheArtifactManager.record_artifact(ARTIFACT_TYPE, key, entry)


class ArtifactError(ValueError):
    """A loaded ``"neuron_graph"`` artifact is not a valid entry for its key."""


def write_entry_if_absent(key: str, entry: bytes) -> bool:
    """Writes ``entry`` (bytes of a complete disk entry) as the disk cache entry of ``key``
    unless a valid one is there (or the cache is disabled). Returns True if it wrote.

    Raises:
        ArtifactError: the bytes are not an intact entry (checksum) or hold another key or format.
    """
    try:
        header, artifact = cache.decode_entry(entry)
    except cache.CorruptEntry as err:
        raise ArtifactError(f"neuron_graph artifact {key[:16]}: {err}") from err
    if header.get("key") != key or header.get("format") != cache.FORMAT_VERSION:
        raise ArtifactError(f"neuron_graph artifact {key[:16]} holds key {str(header.get('key'))[:16]} "
                            f"format {header.get('format')} (expected format {cache.FORMAT_VERSION})")
    if cache.cache_disabled():
        return False
    path = cache.entry_path(key)
    try:
        existing, _ = cache.read_entry(path)
        if existing.get("key") == key:
            return False
    except (FileNotFoundError, cache.CorruptEntry):
        pass
    cache.write_entry(path, header, artifact)
    return True


__all__ = ["ARTIFACT_TYPE", "ArtifactError", "record", "register", "write_entry_if_absent"]
