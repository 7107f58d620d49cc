"""The three memories of a NeuronCore (HBM, SBUF, PSUM) and their capacity accounting.

Buffers exposed to kernels (``nl.sbuf`` etc.) are :class:`Buffer` objects. ``nl.hbm`` and
``nl.private_hbm`` are the same buffer (per-kernel device memory); ``nl.shared_hbm`` is HBM whose
tensors can be returned from the kernel and are shared by every SPMD program instance.

Capacities come from the platform row (``torch_neuronx.runtime.platforms``): SBUF 192 KiB per
partition on NeuronCore-v2 (trn1, inf2), 224 KiB on v3 (trn2), 256 KiB on v4 (trn3); PSUM 16 KiB per
partition; HBM: the chip's HBM divided among its physical cores. A live allocation is freed when its Python object is
garbage-collected or when the loop iteration that declared it ends (NKI scoping: a tensor declared in
a loop body lives for one iteration), whichever comes first.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import err_buffer_capacity_exceeded

__all__ = ["Buffer", "sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "as_buffer", "Allocator",
           "Allocation", "ON_CHIP"]


@dataclass(frozen=True)
class Buffer:
    """A memory a tensor can live in. ``kind`` is 'sbuf', 'psum' or 'hbm'."""

    name: str
    kind: str
    shared: bool = False

    def __repr__(self):
        return f"nl.{self.name}"


sbuf = Buffer("sbuf", "sbuf")
psum = Buffer("psum", "psum")
hbm = Buffer("hbm", "hbm")
private_hbm = hbm
shared_hbm = Buffer("shared_hbm", "hbm", shared=True)
ON_CHIP = ("sbuf", "psum")


def as_buffer(b) -> Buffer:
    """Buffer for a ``buffer=`` argument (None -> SBUF; names accepted)."""
    if b is None:
        return sbuf
    if isinstance(b, Buffer):
        return b
    if isinstance(b, str):
        return {"sbuf": sbuf, "psum": psum, "hbm": hbm, "private_hbm": hbm,
                "shared_hbm": shared_hbm}[b]
    raise TypeError(f"unknown buffer {b!r}; use nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm")


class Allocator:
    """Live-bytes accounting per memory, checked against the platform's capacities.

    SBUF and PSUM are counted in bytes per partition (every tile occupies the same byte range on each
    partition it uses); HBM in total bytes.

    Args:
        platform: a :class:`torch_neuronx.runtime.platforms.Platform` row.
    """

    def __init__(self, platform):
        self.capacity = {"sbuf": platform.core.sbuf_bytes_per_partition,
                         "psum": platform.core.psum_bytes_per_partition,
                         "hbm": platform.hbm_bytes_per_physical_core}
        self.live = {"sbuf": 0, "psum": 0, "hbm": 0}
        self.peak = dict(self.live)
        self.platform = platform

    def alloc(self, kind: str, nbytes: int, what: str) -> Allocation:
        """Reserve ``nbytes`` (per partition for SBUF/PSUM) or raise ``err_buffer_capacity_exceeded``."""
        new = self.live[kind] + nbytes
        if new > self.capacity[kind]:
            unit = "bytes per partition" if kind != "hbm" else "bytes"
            raise err_buffer_capacity_exceeded(
                f"{what} needs {nbytes} {unit} in {kind}; {self.live[kind]} live, capacity "
                f"{self.capacity[kind]} on {self.platform.name}")
        self.live[kind] = new
        self.peak[kind] = max(self.peak[kind], new)
        return Allocation(self, kind, nbytes)


class Allocation:
    """One reservation; released once, either when its tensor's scope ends (the loop iteration it
    was declared in: NKI tensors do not outlive their scope) or when the tensor is garbage-collected."""

    __slots__ = ("allocator", "kind", "nbytes", "freed")

    def __init__(self, allocator, kind, nbytes):
        self.allocator, self.kind, self.nbytes, self.freed = allocator, kind, nbytes, False

    def release(self) -> None:
        if not self.freed:
            self.freed = True
            self.allocator.live[self.kind] -= self.nbytes
