"""The compile cache of backend ``"neuron"``: in memory and on disk (TorchNeuron's NEFF cache).

On Trainium a compiled graph is a NEFF written by neuronx-cc; here it is Inductor's compiled
graph (the Python wrapper with its C++ kernels). The cache semantics are TorchNeuron's:

* **Key**: a SHA-256 of the normalized graph text, the input metadata (shape, stride, dtype,
  device), the compile flags and the versions (torch, torch_neuronx, Python, the CPU's vector
  ISA) — no address, process id, path or time goes in, so every process and every rank
  computes the same key for the same graph (:func:`cache_key`).
* **Disk layout**: ``$TORCH_NEURONX_NEFF_CACHE_DIR/<k[0:2]>/<k[2:4]>/<k>.neff`` (two-level
  sharding). Default directory: ``$XDG_CACHE_HOME/torch_neuronx/neff-cache``, else
  ``~/.cache/torch_neuronx/neff-cache`` (per user). Inductor's own kernel binaries live under
  ``<dir>/inductor`` so that the directory is self-contained (:func:`inductor_dir`).
* **Writes**: temp file in the same folder, ``fsync``, ``os.replace`` (atomic), under a
  per-entry file lock (``<entry>.lock``, ``filelock``); two processes compiling the same graph
  at once compile it once: the second waits for the lock and then reads the entry.
* **Integrity**: an entry is ``MAGIC | payload length (8 bytes LE) | SHA-256(payload) |
  payload``; a truncated or corrupt entry is detected on read, reported (a warning and
  ``get_dynamo_metrics()["cache_corrupt"]``), and recompiled and rewritten by the caller.
* ``TORCH_NEURONX_NEFF_DISABLE_CACHE=1`` disables both levels (every graph is compiled).

Entry payload: a JSON header (key, kind, created time, versions, description) and the
artifact bytes; :func:`list_entries` / :func:`verify_entries` / :func:`clear` serve the
``torch-neuronx cache`` command.
"""
from __future__ import annotations

import getpass
import hashlib
import json
import os
import shutil
import struct
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import metrics

MAGIC = b"TNXNEFF1"
_HEADER = len(MAGIC) + 8 + 32
ENTRY_SUFFIX = ".neff"
FORMAT_VERSION = 1
LOCK_TIMEOUT_S = 3600.0


class CacheCorruptWarning(UserWarning):
    """A disk cache entry was truncated or corrupt; the graph is being recompiled."""


def cache_disabled() -> bool:
    """True when ``TORCH_NEURONX_NEFF_DISABLE_CACHE`` is ``1``/``true``/``yes``."""
    return os.environ.get("TORCH_NEURONX_NEFF_DISABLE_CACHE", "").strip().lower() in ("1", "true", "yes")


def cache_dir() -> Path:
    """The disk cache folder (created on first write): ``TORCH_NEURONX_NEFF_CACHE_DIR`` or the
    per-user default (see the module docstring)."""
    env = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
    if env:
        return Path(env).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    if not os.access(base if base.exists() else base.parent, os.W_OK):
        try:
            user = getpass.getuser()
        except Exception:
            user = str(os.getuid())
        return Path(tempfile.gettempdir()) / f"torch_neuronx_neff_cache_{user}"
    return base / "torch_neuronx" / "neff-cache"


def inductor_dir() -> Path:
    """Where Inductor keeps kernel sources and binaries while backend ``"neuron"`` compiles
    or loads a graph: ``<cache_dir>/inductor``."""
    return cache_dir() / "inductor"


def cache_key(parts: dict) -> str:
    """SHA-256 (64 hex chars) of ``parts`` as canonical JSON (sorted keys, no spaces).

    Args:
        parts: JSON-serializable dict (graph text, input metadata, flags, versions).
    """
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def entry_path(key: str, root: Path | None = None) -> Path:
    """``<root>/<key[0:2]>/<key[2:4]>/<key>.neff``."""
    root = root or cache_dir()
    return root / key[0:2] / key[2:4] / f"{key}{ENTRY_SUFFIX}"


class CorruptEntry(Exception):
    """Raised by :func:`read_entry` for a truncated or corrupt entry (message: what is wrong)."""


def encode_entry(header: dict, artifact: bytes) -> bytes:
    """Serializes one entry: MAGIC, payload length, SHA-256, payload (JSON header + artifact)."""
    head = json.dumps(header, sort_keys=True).encode()
    payload = struct.pack("<I", len(head)) + head + artifact
    return MAGIC + struct.pack("<Q", len(payload)) + hashlib.sha256(payload).digest() + payload


def decode_entry(blob: bytes) -> tuple[dict, bytes]:
    """Inverse of :func:`encode_entry`. Raises :class:`CorruptEntry` naming the defect."""
    if len(blob) < _HEADER:
        raise CorruptEntry(f"truncated: {len(blob)} bytes, shorter than the {_HEADER}-byte header")
    if blob[: len(MAGIC)] != MAGIC:
        raise CorruptEntry("bad magic (not a torch-neuronx cache entry)")
    (length,) = struct.unpack("<Q", blob[len(MAGIC): len(MAGIC) + 8])
    digest = blob[len(MAGIC) + 8: _HEADER]
    payload = blob[_HEADER:]
    if len(payload) != length:
        raise CorruptEntry(f"truncated: payload has {len(payload)} of {length} bytes")
    if hashlib.sha256(payload).digest() != digest:
        raise CorruptEntry("checksum mismatch (SHA-256 of the payload differs)")
    (hlen,) = struct.unpack("<I", payload[:4])
    try:
        header = json.loads(payload[4: 4 + hlen])
    except ValueError as err:
        raise CorruptEntry(f"unreadable header: {err}") from err
    return header, payload[4 + hlen:]


def read_entry(path: Path) -> tuple[dict, bytes]:
    """Reads and checks one entry file. Raises FileNotFoundError or :class:`CorruptEntry`."""
    return decode_entry(path.read_bytes())


def write_entry(path: Path, header: dict, artifact: bytes) -> None:
    """Writes one entry atomically: temp file in the same folder, fsync, ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(encode_entry(header, artifact))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _lock(path: Path):
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)


@dataclass
class Lookup:
    """Result of :meth:`CompileCache.get_or_compile`: the artifact and where it came from
    (``"memory"``, ``"disk"`` or ``"compiled"``)."""

    artifact: bytes | None
    source: str
    value: object = None


class CompileCache:
    """Two-level (memory, disk) cache of compiled graphs, keyed by :func:`cache_key`."""

    def __init__(self) -> None:
        self._memory: dict[str, bytes] = {}
        self._mutex = threading.Lock()

    def clear_memory(self) -> None:
        """Forgets the in-memory level (the disk stays)."""
        with self._mutex:
            self._memory.clear()

    def get_or_compile(
        self,
        key: str,
        compile_fn: Callable[[], tuple[object, bytes | None]],
        load_fn: Callable[[bytes], object],
        header: dict,
    ) -> Lookup:
        """The compiled graph for ``key``: from memory, else disk, else ``compile_fn()``.

        Args:
            key: from :func:`cache_key`.
            compile_fn: compiles; returns (value, artifact bytes or None if not cacheable).
            load_fn: turns artifact bytes into a value; may raise (the entry is then treated
                as corrupt and recompiled).
            header: JSON-serializable description stored with a new entry (kind, graph name).

        Returns:
            :class:`Lookup` with the value and its source; counts hits and compiles in
            :mod:`metrics`, and reports corrupt entries (warning + metrics).
        """
        if cache_disabled():
            value, _ = compile_fn()
            metrics.record_compiled()
            return Lookup(None, "compiled", value)
        with self._mutex:
            blob = self._memory.get(key)
        if blob is not None:
            try:
                value = load_fn(blob)
                metrics.record_cache_hit("memory")
                return Lookup(blob, "memory", value)
            except Exception:
                with self._mutex:
                    self._memory.pop(key, None)
        path = entry_path(key)
        with _lock(path):
            artifact = self._read_disk(path, key)
            if artifact is not None:
                try:
                    value = load_fn(artifact)
                except Exception as err:  # a valid checksum but an unloadable artifact
                    self._report(path, key, f"unloadable artifact: {type(err).__name__}: {err}")
                else:
                    with self._mutex:
                        self._memory[key] = artifact
                    metrics.record_cache_hit("disk")
                    return Lookup(artifact, "disk", value)
            value, artifact = compile_fn()
            metrics.record_compiled()
            if artifact is not None:
                full = dict(header, key=key, created=time.time(), format=FORMAT_VERSION)
                try:
                    write_entry(path, full, artifact)
                except OSError as err:
                    warnings.warn(f"torch-neuronx compile cache: could not write {path}: {err}",
                                  stacklevel=2)
                with self._mutex:
                    self._memory[key] = artifact
            return Lookup(artifact, "compiled", value)

    def _read_disk(self, path: Path, key: str) -> bytes | None:
        try:
            header, artifact = read_entry(path)
        except FileNotFoundError:
            return None
        except CorruptEntry as err:
            self._report(path, key, str(err))
            return None
        if header.get("key") != key:
            self._report(path, key, f"entry holds key {header.get('key')!r}")
            return None
        return artifact

    @staticmethod
    def _report(path: Path, key: str, reason: str) -> None:
        metrics.record_corrupt(str(path), reason)
        warnings.warn(
            f"torch-neuronx compile cache: entry {path} is corrupt ({reason}); "
            f"recompiling graph {key[:16]} and rewriting the entry",
            CacheCorruptWarning, stacklevel=3,
        )


GLOBAL_CACHE = CompileCache()


# --- maintenance (the `torch-neuronx cache` command) ----------------------------------------

def _entries(root: Path):
    if not root.is_dir():
        return
    for p in sorted(root.glob(f"??/??/*{ENTRY_SUFFIX}")):
        yield p


def list_entries(root: Path | None = None) -> list[dict]:
    """One dict per entry: ``key``, ``path``, ``bytes``, ``age_s`` (seconds since written),
    ``kind`` and ``name`` from its header (``"?"`` when unreadable)."""
    root = root or cache_dir()
    now = time.time()
    out = []
    for p in _entries(root):
        st = p.stat()
        info = {"key": p.name[: -len(ENTRY_SUFFIX)], "path": str(p), "bytes": st.st_size,
                "age_s": max(0.0, now - st.st_mtime), "kind": "?", "name": "?"}
        try:
            header, _ = read_entry(p)
            info["kind"] = header.get("kind", "?")
            info["name"] = header.get("name", "?")
        except (CorruptEntry, OSError):
            pass
        out.append(info)
    return out


def verify_entries(root: Path | None = None, remove: bool = False) -> list[tuple[str, str]]:
    """Checks every entry; returns ``(path, reason)`` for each bad one (optionally deleted)."""
    root = root or cache_dir()
    bad = []
    for p in _entries(root):
        try:
            header, _ = read_entry(p)
            if header.get("key") != p.name[: -len(ENTRY_SUFFIX)]:
                raise CorruptEntry(f"entry holds key {header.get('key')!r}")
        except (CorruptEntry, OSError) as err:
            bad.append((str(p), str(err)))
            if remove:
                p.unlink(missing_ok=True)
    return bad


def dir_bytes(path: Path) -> int:
    """Total size in bytes of the files under ``path`` (0 if absent)."""
    if not path.exists():
        return 0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def clear(root: Path | None = None) -> int:
    """Deletes every entry, lock and Inductor artifact under the cache folder and the memory
    level of this process; returns the number of entries removed."""
    root = root or cache_dir()
    n = 0
    for p in list(_entries(root)):
        p.unlink(missing_ok=True)
        n += 1
    if root.is_dir():
        for lock in root.glob("??/??/*.lock"):
            lock.unlink(missing_ok=True)
        for d in sorted(root.glob("??/??"), reverse=True) + sorted(root.glob("??")):
            try:
                d.rmdir()
            except OSError:
                pass
        shutil.rmtree(root / "inductor", ignore_errors=True)
    GLOBAL_CACHE.clear_memory()
    return n
