"""The memories of a NeuronCore (HBM, SBUF, PSUM), buffers and capacity accounting.

Buffers exposed to kernels (``nl.sbuf`` etc.) are :class:`Buffer` objects (AWS's current
``nl.MemoryRegion``). ``nl.hbm`` and ``nl.private_hbm`` are the same buffer (per-kernel device
memory); ``nl.shared_hbm`` is HBM whose tensors can be returned from the kernel and are shared by every
program instance. Legacy direct allocation (``ncc.sbuf.mod_alloc(...)``, ``ncc.psum.alloc(...)``)
passes a :class:`Placement` as ``buffer=``: its memory kind and requested address are recorded; the
simulator gives every tensor its own storage (a kernel relying on two tensors aliasing one address is
not modelled).

Capacities come from the platform row (``torch_neuronx.runtime.platforms``): SBUF 192 KiB per
partition on NeuronCore-v2 (trn1, inf2), 224 KiB on v3 (trn2), 256 KiB on v4 (trn3); PSUM 16 KiB per
partition (8 banks of 2 KiB); HBM: the chip's HBM divided among its physical cores.

Overflow. PSUM cannot spill: PSUM tiles live at one instruction beyond 16 KiB per partition raise
``err_buffer_capacity_exceeded``. A PSUM tile is live from its first instruction access to its last, as
AWS's compiler allocates it ("the total size of the live data being used by a NKI kernel",
``nki/get-started/about/memory-hierarchy-overview.rst``), not while a Python variable still names it: the
check runs on the recorded live ranges when the kernel returns (:meth:`Allocator.check_psum`).
SBUF overflow is *spilled*, as AWS's compiler does (the Mamba
tutorial shows "qSyncSpillReload0 and qVectorSpillReload0 ... intermediate data spill from SBUF into
device memory", ``fused_mamba.rst``): the allocation succeeds and the bytes over capacity are charged
to the cost model as DMA traffic (written out and read back, see :meth:`Allocator.alloc`). One tile
larger than a whole partition is still an error.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import err_buffer_capacity_exceeded, err_unsupported_memory

__all__ = ["Buffer", "Placement", "PhysicalMap", "sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "as_buffer",
           "Allocator", "Allocation", "ON_CHIP", "is_hbm", "is_on_chip", "is_psum", "is_sbuf"]


@dataclass(frozen=True)
class Buffer:
    """A memory a tensor can live in (AWS's ``nl.MemoryRegion``). ``kind`` is 'sbuf', 'psum' or 'hbm';
    ``value`` is AWS's enum value ('sbuf', 'psum', 'private_hbm', 'shared_hbm')."""

    name: str
    kind: str
    shared: bool = False

    @property
    def value(self) -> str:
        return {"hbm": "private_hbm"}.get(self.name, self.name)

    def __repr__(self) -> str:
        return f"nl.{self.name}"


sbuf = Buffer("sbuf", "sbuf")
psum = Buffer("psum", "psum")
hbm = Buffer("hbm", "hbm")
private_hbm = hbm
shared_hbm = Buffer("shared_hbm", "hbm", shared=True)
ON_CHIP = ("sbuf", "psum")


@dataclass
class Placement:
    """A legacy direct-allocation request (``ncc.sbuf.mod_alloc(base_addr=...)`` ...) used as
    ``buffer=``: the memory ``kind`` and the requested address fields, kept for messages."""

    kind: str
    fields: dict = field(default_factory=dict)

    @property
    def buffer(self) -> Buffer:
        return sbuf if self.kind == "sbuf" else psum


def as_buffer(b: Any) -> Buffer:
    """Buffer for a ``buffer=`` argument (None -> SBUF; AWS's names and a :class:`Placement` accepted).

    Raises:
        err_unsupported_memory: for anything else (the message lists the buffers).
    """
    if b is None:
        return sbuf
    if isinstance(b, Buffer):
        return b
    if isinstance(b, Placement):
        return b.buffer
    name = getattr(b, "value", b)          # an enum member of another MemoryRegion
    if isinstance(name, str):
        found = {"sbuf": sbuf, "psum": psum, "hbm": hbm, "private_hbm": hbm, "shared_hbm": shared_hbm}.get(name)
        if found is not None:
            return found
    kind = getattr(b, "kind", None)        # a legacy allocator object
    if kind in ("sbuf", "psum"):
        return sbuf if kind == "sbuf" else psum
    raise err_unsupported_memory(f"unknown buffer {b!r}; use nl.sbuf, nl.psum, nl.hbm, nl.private_hbm or "
                                 "nl.shared_hbm")


def is_hbm(buffer: Any) -> bool:
    """``nl.is_hbm``: True for nl.hbm / private_hbm / shared_hbm."""
    return as_buffer(buffer).kind == "hbm"


def is_on_chip(buffer: Any) -> bool:
    """``nl.is_on_chip``: True for SBUF and PSUM."""
    return as_buffer(buffer).kind in ON_CHIP


def is_psum(buffer: Any) -> bool:
    """``nl.is_psum``."""
    return as_buffer(buffer).kind == "psum"


def is_sbuf(buffer: Any) -> bool:
    """``nl.is_sbuf``."""
    return as_buffer(buffer).kind == "sbuf"


class Allocator:
    """Live-bytes accounting per memory, checked against the platform's capacities.

    SBUF and PSUM are counted in bytes per partition (every tile occupies the same byte range on each
    partition it uses); HBM in total bytes.

    Args:
        platform: a :class:`torch_neuronx.runtime.platforms.Platform` row.
    """

    def __init__(self, platform: Any):
        self.capacity = {"sbuf": platform.core.sbuf_bytes_per_partition,
                         "psum": platform.core.psum_bytes_per_partition,
                         "hbm": platform.hbm_bytes_per_physical_core}
        self.live = {"sbuf": 0, "psum": 0, "hbm": 0}
        self.peak = dict(self.live)
        self.platform = platform
        self.spilled_bytes = 0          # per partition, cumulative (cost model)
        self.psum_records: list[Allocation] = []   # PSUM allocations with their live ranges
        self.seq = 0                    # instruction accesses of PSUM so far (live-range clock)

    def alloc(self, kind: str, nbytes: int, what: str, partitions: int = 1) -> Allocation:
        """Reserve ``nbytes`` (per partition for SBUF/PSUM, total for HBM).

        Returns the :class:`Allocation`; its ``spill_bytes`` is the number of bytes (all partitions)
        that did not fit in SBUF and are spilled to HBM (0 normally).

        Raises:
            err_buffer_capacity_exceeded: PSUM or HBM overflow, or one tile larger than an SBUF
                partition.
        """
        cap = self.capacity[kind]
        unit = "bytes per partition" if kind != "hbm" else "bytes"
        if nbytes > cap:
            raise err_buffer_capacity_exceeded(
                f"{what} needs {nbytes} {unit} in {kind}, more than the {cap} of a whole "
                f"{'partition' if kind != 'hbm' else 'HBM'} on {self.platform.name}")
        new = self.live[kind] + nbytes
        spill = 0
        if new > cap and kind == "hbm":
            raise err_buffer_capacity_exceeded(
                f"{what} needs {nbytes} {unit} in {kind}; {self.live[kind]} live, capacity "
                f"{cap} on {self.platform.name}")
        if new > cap and kind == "sbuf":
            over = new - max(cap, self.live[kind])
            spill = over * max(1, partitions)
            self.spilled_bytes += over
        self.live[kind] = new
        self.peak[kind] = max(self.peak[kind], new)
        rec = Allocation(self, kind, nbytes, spill, what)
        if kind == "psum" and nbytes:
            self.psum_records.append(rec)
        return rec

    def touch(self, rec: Allocation) -> None:
        """Record an instruction access of PSUM allocation ``rec`` (its live range grows to this
        access)."""
        self.seq += 1
        if rec.first is None:
            rec.first = self.seq
        rec.last = self.seq

    def check_psum(self) -> None:
        """Check PSUM occupancy by live range, as AWS's compiler allocates: a tile occupies PSUM
        from its first access to its last (a tile allocated and never accessed occupies nothing),
        not for as long as a Python variable names it.

        Raises:
            err_buffer_capacity_exceeded: more than the PSUM partition (16 KiB on every platform
                row) is live at one instruction.
        """
        cap = self.capacity["psum"]
        events: list[tuple[int, int, Allocation]] = []
        for r in self.psum_records:
            if r.first is not None and r.last is not None:
                events.append((r.first, 0, r))
                events.append((r.last, 1, r))
        events.sort(key=lambda e: (e[0], e[1]))
        live: dict[int, Allocation] = {}
        total = 0
        for _seq, kind, r in events:
            if kind == 0:
                live[id(r)] = r
                total += r.nbytes
                if total > cap:
                    names = ", ".join(x.what for x in live.values())
                    raise err_buffer_capacity_exceeded(
                        f"{total} bytes per partition of PSUM live at once, capacity {cap} on "
                        f"{self.platform.name} (PSUM cannot spill); live tiles: {names}")
            else:
                live.pop(id(r), None)
                total -= r.nbytes
        self.psum_records = [r for r in self.psum_records if not r.freed]


class Allocation:
    """One reservation; released once, either when its tensor's scope ends (the loop iteration it
    was declared in: NKI tensors do not outlive their scope) or when the tensor is garbage-collected."""

    __slots__ = ("allocator", "kind", "nbytes", "freed", "spill_bytes", "what", "first", "last")

    def __init__(self, allocator: Allocator, kind: str, nbytes: int, spill_bytes: int = 0, what: str = ""):
        self.allocator, self.kind, self.nbytes, self.freed = allocator, kind, nbytes, False
        self.spill_bytes = spill_bytes
        self.what = what
        self.first: int | None = None     # live range: first and last instruction access (PSUM)
        self.last: int | None = None

    def release(self) -> None:
        """Return the bytes to the allocator (idempotent)."""
        if not self.freed:
            self.freed = True
            self.allocator.live[self.kind] -= self.nbytes


class PhysicalMap:
    """Which tensor last wrote each byte of an on-chip memory, for the tensors a kernel places itself
    (``nl.ndarray(..., address=(partition, byte))``). The simulator keeps a separate copy of every
    tensor, so two placed tensors sharing bytes do not share values here; on a NeuronCore they do. AWS's
    direct-allocation guide ("Lifetime Conflicts"): tiles that must be alive simultaneously need unique
    addresses, and the compiler's checks "may not catch all the lifetime violations", which then give
    wrong numbers. This map finds the case where the values would differ: a placed tensor reads bytes
    it wrote itself that another placed tensor has overwritten since.

    Positions are given as arrays of partitions and byte offsets (one entry per byte); tensor ids are
    positive integers.
    """

    def __init__(self, partitions: int):
        self.partitions = partitions
        self.owner: dict[str, Any] = {}     # memory kind -> int32 [partitions, bytes seen so far]

    def _grid(self, kind: str, width: int) -> Any:
        import numpy as np
        g = self.owner.get(kind)
        if g is None or g.shape[1] < width:
            new = np.zeros((self.partitions, max(width, 2 * (0 if g is None else g.shape[1]))), dtype=np.int32)
            if g is not None:
                new[:, :g.shape[1]] = g
            g = self.owner[kind] = new
        return g

    def write(self, kind: str, rows: Any, cols: Any, uid: int) -> None:
        """Record that tensor ``uid`` wrote the bytes at (``rows``, ``cols``)."""
        if len(cols):
            self._grid(kind, int(cols.max()) + 1)[rows, cols] = uid

    def foreign(self, kind: str, rows: Any, cols: Any, uid: int) -> Any:
        """Per byte: the id of another tensor that wrote it last (0 where none did, or ``uid`` did)."""
        import numpy as np
        g = self.owner.get(kind)
        if g is None or not len(cols):
            return np.zeros(len(cols), dtype=np.int32)
        inside = cols < g.shape[1]
        out = np.zeros(len(cols), dtype=np.int32)
        out[inside] = g[rows[inside], cols[inside]]
        out[out == uid] = 0
        return out
