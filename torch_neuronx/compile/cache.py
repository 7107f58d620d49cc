"""The compile cache of backend ``"neuron"``: in memory and on disk.

On Trainium a compiled graph is a NEFF written by neuronx-cc and cached under
``TORCH_NEURONX_NEFF_CACHE_DIR``; here a compiled graph is Inductor's ``CompiledFxGraph`` (the
Python wrapper with its C++ kernels), pickled. The environment variables keep TorchNeuron's
names (they are its public contract); the entries say what they hold: suffix ``.inductor``,
magic ``TNXIND1``. The cache semantics are TorchNeuron's:

* **Key**: a SHA-256 of the normalized graph text, the input metadata (shape, stride, dtype,
  device), the compile flags and the versions (torch, torch_neuronx and a hash of the code that
  generated the entry, Python, the CPU's vector ISA; :mod:`.cache_key`): no address, process
  id, path or time goes in, so every process and every rank computes the same key for the same
  graph (:func:`cache_key` hashes the parts).
* **Disk layout**: ``$TORCH_NEURONX_NEFF_CACHE_DIR/<k[0:2]>/<k[2:4]>/<k>.inductor`` (two-level
  sharding). Default directory: ``$XDG_CACHE_HOME/torch_neuronx/neff-cache``, else
  ``~/.cache/torch_neuronx/neff-cache`` (per user). Inductor's own kernel binaries live under
  ``<dir>/inductor`` so that the directory is self-contained (:func:`inductor_dir`).
* **Writes**: temp file in the same folder, ``fsync``, ``os.replace`` (atomic), under a
  per-entry file lock (``<entry>.lock``, ``filelock``); two processes compiling the same graph
  at once compile it once: the second waits for the lock and then reads the entry. The wait is
  ``TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT`` seconds (default one hour, :func:`lock_timeout`);
  past it the process warns (:class:`CacheLockTimeoutWarning`) and compiles the graph itself
  without the lock (the write stays atomic, so the entry is whole whichever process writes last).
* **Integrity**: an entry is ``MAGIC | payload length (8 bytes LE) | SHA-256(payload) |
  payload``; a truncated or corrupt entry is detected on read, reported (a warning and
  ``get_dynamo_metrics()["cache_corrupt"]``), and recompiled and rewritten by the caller.
* ``TORCH_NEURONX_NEFF_DISABLE_CACHE=1`` disables both levels (every graph is compiled).
* Entries of an older format (``*.neff``, written before the suffix said what the file holds)
  are never read: :func:`list_entries` and :func:`verify_entries` skip them,
  :func:`legacy_entries` lists them and :func:`clear` deletes them.

Entry payload: a JSON header (key, kind, created time, format, description) and the artifact
bytes; :func:`list_entries` / :func:`verify_entries` / :func:`clear` serve the
``torch-neuronx cache`` command.
"""
from __future__ import annotations

import contextlib
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypedDict, TypeVar

import filelock
from filelock import FileLock

from . import metrics
from ..runtime.environment import env_flag
from .fallback import NeuronCompileError

#: First bytes of every entry: "torch-neuronx Inductor graph, layout 1".
MAGIC = b"TNXIND1"
_HEADER = len(MAGIC) + 8 + 32
#: Suffix of an entry file: a pickled Inductor ``CompiledFxGraph`` (not a NEFF).
ENTRY_SUFFIX = ".inductor"
#: Suffixes of entries written by older versions of this cache (never read; cleared).
LEGACY_SUFFIXES = (".neff",)
#: Goes into every key and header: entries of another format are never served.
FORMAT_VERSION = 2
#: Seconds a process waits for another one that compiles the same graph, unless
#: ``TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT`` says otherwise (one hour).
LOCK_TIMEOUT_S = 3600.0
#: The variable that sets the wait (TorchNeuron's name).
LOCK_TIMEOUT_VARIABLE = "TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT"

#: What an ATen graph is for: AOTAutograd's forward or backward graph of a training step, or
#: an inference graph (grad mode off, or no input requires grad).
GraphKind = Literal["forward", "backward", "inference"]
#: Where :meth:`CompileCache.get_or_compile` found a graph: the memory level, the disk, or
#: nowhere (it was compiled).
LookupSource = Literal["memory", "disk", "compiled"]


class EntryDescription(TypedDict):
    """What :meth:`CompileCache.get_or_compile` stores in a new entry's header besides the key,
    the creation time and the format: the graph's kind and the compiled function
    (``"'forward' (model.py:12)"``)."""

    kind: GraphKind
    name: str


class CacheCorruptWarning(UserWarning):
    """A disk cache entry was truncated or corrupt; the graph is being recompiled."""


def cache_disabled() -> bool:
    """True when ``TORCH_NEURONX_NEFF_DISABLE_CACHE`` is ``1``/``true``/``yes``/``on`` (any case); a
    value that is not a boolean warns once and the cache stays on."""
    return bool(env_flag("TORCH_NEURONX_NEFF_DISABLE_CACHE", False))


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
        except (ImportError, KeyError, OSError):  # no pwd module / no passwd entry for the uid
            user = str(os.getuid())
        return Path(tempfile.gettempdir()) / f"torch_neuronx_neff_cache_{user}"
    return base / "torch_neuronx" / "neff-cache"


def check_cache_dir() -> Path:
    """:func:`cache_dir`, created if missing and checked to be a writable folder.

    Raises:
        NeuronCompileError: the folder cannot be created or written (a path under a file or in a
            read-only place), naming ``TORCH_NEURONX_NEFF_CACHE_DIR`` (or the default folder) and
            the two fixes: a writable folder, or ``TORCH_NEURONX_NEFF_DISABLE_CACHE=1``.
    """
    root = cache_dir()
    problem = None
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        problem = f"{type(err).__name__}: {err}"
    else:
        if not os.access(root, os.W_OK | os.X_OK):
            problem = "the folder is not writable"
    if problem is None:
        return root
    env = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
    where = f"TORCH_NEURONX_NEFF_CACHE_DIR={env!r}" if env else f"the default compile cache folder {str(root)!r}"
    raise NeuronCompileError(
        f"{where} cannot be used as the compile cache folder ({problem}): point "
        f"TORCH_NEURONX_NEFF_CACHE_DIR at a writable folder, or set TORCH_NEURONX_NEFF_DISABLE_CACHE=1 to "
        f"compile without the on-disk cache")


def inductor_dir() -> Path:
    """Where Inductor keeps kernel sources and binaries while backend ``"neuron"`` compiles
    or loads a graph: ``<cache_dir>/inductor``."""
    return cache_dir() / "inductor"


def cache_key(parts: dict[str, Any]) -> str:
    """SHA-256 (64 hex chars) of ``parts`` as canonical JSON (sorted keys, no spaces).

    Args:
        parts: JSON-serializable dict (graph text, input metadata, flags, versions).
    """
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def entry_path(key: str, root: Path | None = None) -> Path:
    """``<root>/<key[0:2]>/<key[2:4]>/<key>.inductor`` (``root``: :func:`cache_dir` by default)."""
    root = root or cache_dir()
    return root / key[0:2] / key[2:4] / f"{key}{ENTRY_SUFFIX}"


class CorruptEntry(Exception):
    """Raised by :func:`read_entry` for a truncated or corrupt entry (message: what is wrong)."""


def encode_entry(header: dict[str, Any], artifact: bytes) -> bytes:
    """Serializes one entry: MAGIC, payload length, SHA-256, payload (JSON header + artifact)."""
    head = json.dumps(header, sort_keys=True).encode()
    payload = struct.pack("<I", len(head)) + head + artifact
    return MAGIC + struct.pack("<Q", len(payload)) + hashlib.sha256(payload).digest() + payload


def decode_entry(blob: bytes) -> tuple[dict[str, Any], bytes]:
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


def read_entry(path: Path) -> tuple[dict[str, Any], bytes]:
    """Reads and checks one entry file. Raises FileNotFoundError or :class:`CorruptEntry`."""
    return decode_entry(path.read_bytes())


def write_entry(path: Path, header: dict[str, Any], artifact: bytes) -> None:
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


def lock_timeout() -> float:
    """Seconds :meth:`CompileCache.get_or_compile` waits for the lock of an entry another process
    is compiling: ``TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT`` (a number of seconds ≥ 0, ``0``: do not
    wait), else :data:`LOCK_TIMEOUT_S`.

    Raises:
        NeuronCompileError: the variable is not a finite number ≥ 0 (the message names it and
            the values it takes).
    """
    text = os.environ.get("TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT", "").strip()
    if not text:
        return LOCK_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not (0.0 <= seconds < float("inf")):
        raise NeuronCompileError(
            f"{LOCK_TIMEOUT_VARIABLE}={text!r} is not a number of seconds: set it to a number >= 0 "
            f"(how long to wait for another process compiling the same graph; 0 does not wait), "
            f"or unset it for the default of {LOCK_TIMEOUT_S:.0f} s")
    return seconds


class CacheLockTimeoutWarning(UserWarning):
    """Another process held an entry's lock longer than ``TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT``:
    this process compiles the graph itself."""


@contextlib.contextmanager
def _entry_lock(path: Path) -> Iterator[bool]:
    """Holds the file lock of the entry at ``path`` for the body; yields whether it is held
    (False after :func:`lock_timeout` seconds of waiting, with a :class:`CacheLockTimeoutWarning`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    timeout = lock_timeout()
    lock = FileLock(str(path) + ".lock", timeout=timeout)
    try:
        lock.acquire()
    except filelock.Timeout:
        warnings.warn(
            f"torch-neuronx compile cache: {path}.lock is still held by another process after "
            f"{timeout:g} s ({LOCK_TIMEOUT_VARIABLE}); compiling the graph here without waiting "
            "(raise the variable to wait longer)", CacheLockTimeoutWarning, stacklevel=4)
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


#: The type of a cached value (what ``compile_fn`` and ``load_fn`` return).
T = TypeVar("T")


@dataclass(frozen=True)
class Lookup(Generic[T]):
    """Result of :meth:`CompileCache.get_or_compile`: the artifact bytes (None when the graph
    was compiled but is not cacheable, or the cache is disabled), where the graph came from,
    and the loaded or compiled value."""

    artifact: bytes | None
    source: LookupSource
    value: T


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
        compile_fn: Callable[[], tuple[T, bytes | None]],
        load_fn: Callable[[bytes], T],
        header: EntryDescription | dict[str, Any],
    ) -> Lookup[T]:
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
            except Exception:  # noqa: BLE001  (load_fn may raise anything: the entry is corrupt, recompile)
                with self._mutex:
                    self._memory.pop(key, None)
        check_cache_dir()
        path = entry_path(key)
        with _entry_lock(path):
            artifact = self._read_disk(path, key)
            if artifact is not None:
                try:
                    value = load_fn(artifact)
                except Exception as err:  # noqa: BLE001  (a valid checksum but an unloadable artifact)
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

@dataclass(frozen=True)
class CacheEntry:
    """One disk entry, as :func:`list_entries` sees it.

    Attributes:
        key: the 64-hex-digit cache key (the file name without its suffix).
        path: the entry file.
        size_bytes: file size in bytes.
        age_s: seconds since the file was written.
        kind: the graph's kind from the entry header, None when the entry is unreadable.
        name: the compiled function (``"'forward' (model.py:12)"``), None when unreadable.
    """

    key: str
    path: Path
    size_bytes: int
    age_s: float
    kind: GraphKind | None
    name: str | None


def _entries(root: Path, suffix: str = ENTRY_SUFFIX) -> Iterator[Path]:
    if not root.is_dir():
        return
    yield from sorted(root.glob(f"??/??/*{suffix}"))


def list_entries(root: Path | None = None) -> list[CacheEntry]:
    """The entries under ``root`` (default :func:`cache_dir`), sorted by path; entries of an
    older format are not listed (:func:`legacy_entries`)."""
    root = root or cache_dir()
    now = time.time()
    out = []
    for p in _entries(root):
        try:
            st = p.stat()
        except FileNotFoundError:  # removed by another process since the glob
            continue
        kind = name = None
        try:
            header, _ = read_entry(p)
            kind = header.get("kind")
            name = header.get("name")
        except (CorruptEntry, OSError):
            pass
        out.append(CacheEntry(key=p.name[: -len(ENTRY_SUFFIX)], path=p, size_bytes=st.st_size,
                              age_s=max(0.0, now - st.st_mtime), kind=kind, name=name))
    return out


def legacy_entries(root: Path | None = None) -> list[Path]:
    """Entry files of an older cache format under ``root`` (default :func:`cache_dir`): never
    read, deleted by :func:`clear`."""
    root = root or cache_dir()
    return [p for suffix in LEGACY_SUFFIXES for p in _entries(root, suffix)]


def verify_entries(root: Path | None = None, remove: bool = False) -> list[tuple[str, str]]:
    """Checks every entry (magic, length, checksum, header key = file name).

    Returns:
        ``(path, reason)`` for each bad entry; with ``remove`` the bad files are deleted.
        Entries of an older format are not checked (:func:`legacy_entries`).
    """
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
    """Deletes every entry (older formats included), lock and Inductor artifact under ``root``
    (default :func:`cache_dir`) and the memory level of this process.

    Returns:
        The number of entry files removed (current and older formats).
    """
    root = root or cache_dir()
    n = 0
    for p in list(_entries(root)) + legacy_entries(root):
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
