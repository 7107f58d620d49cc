"""Operand checks and helpers shared by every instruction of the instruction layer.

Every instruction writes into a destination view ``dst`` and returns an :class:`NkiInstruction`
handle (AWS's current ``nisa`` return value, used for ``.depends_on``). Operand rules are those of the
``nki.isa`` pages of both front ends: compute engines read and write SBUF/PSUM (architecture guide:
"compute engines ... SBUF or PSUM"; ``err_unsupported_memory``), the operands of one instruction span
the same partitions (``err_num_partition_mismatch``), partition dims are contiguous
(``err_partition_stride_not_supported``), and GpSimd cannot access PSUM (current ``tensor_tensor``
page: "Since GpSimd Engine cannot access PSUM").
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..context import current
from ..errors import (err_activation_scale_scalar_or_vector, err_invalid_instruction_argument,
                      err_num_partition_mismatch, err_unsupported_memory, err_unsupported_on_target)
from ..indexing import as_mask_array
from ..memory import ON_CHIP, sbuf
from ..tile import NkiTensor, is_tile
from .constants import engine_name

__all__ = ["check_memory", "operand", "samep", "free_size", "f32", "gpsimd_no_psum", "scalar_operand",
           "count", "fresh_result", "NkiInstruction", "VirtualRegister", "issue", "pick_engine",
           "require_generation", "same_elements", "mask_shape_ok"]


def check_memory(x: NkiTensor, kinds: tuple, api: str, arg: str) -> None:
    """Raise ``err_unsupported_memory`` unless tile ``x`` (operand ``arg`` of ``api``) is in one of
    the buffer kinds ``kinds`` ("hbm", "sbuf", "psum")."""
    if x.buffer.kind not in kinds:
        raise err_unsupported_memory(f"operand '{arg}' of '{api}' must be in {'|'.join(kinds)}, got {x.describe()}")


def operand(x: Any, api: str, arg: str, kinds: tuple = ON_CHIP) -> int:
    """Check a compute operand (a tile, in ``kinds``, partition dim first and contiguous); return its
    partition count."""
    if not is_tile(x):
        raise err_invalid_instruction_argument(f"operand '{arg}' of '{api}' must be a tile, got {type(x).__name__}")
    check_memory(x, kinds, api, arg)
    x.check_partition_layout()
    return x.shape[0] if x.shape else 1


def samep(api: str, **ps: int | None) -> None:
    """Raise ``err_num_partition_mismatch`` unless the given partition counts are equal."""
    vals = {k: v for k, v in ps.items() if v is not None}
    if len(set(vals.values())) > 1:
        desc = ", ".join(f"{k}[{v} partitions]" for k, v in vals.items())
        raise err_num_partition_mismatch(f"'{api}': {desc}")


def same_elements(api: str, a: NkiTensor, b: NkiTensor, what: str = "") -> None:
    """Raise ``err_invalid_instruction_argument`` unless ``a`` and ``b`` have the same number of
    elements per partition (the "same number of elements per partition" rule of the isa pages)."""
    if free_size(a.shape) != free_size(b.shape):
        raise err_invalid_instruction_argument(
            f"'{api}': {a.describe()} and {b.describe()} differ in elements per partition {what}".strip())


def is_number(value: Any) -> bool:
    """True for a Python / NumPy / ``ml_dtypes`` number (anything ``float()`` takes but a string)."""
    if isinstance(value, (str, bytes)) or value is None:
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def free_size(shape: tuple) -> int:
    """Elements per partition of a tile shape (N of the cost formulas)."""
    return int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1


def f32(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def pick_engine(e: Any, default: str, api: str, allowed: tuple) -> str:
    """The engine an instruction runs on: ``e`` (an ``engine=`` argument) or ``default``.

    Raises:
        err_invalid_instruction_argument: an engine ``api`` cannot run on.
    """
    name = engine_name(e, default)
    if name not in allowed:
        raise err_invalid_instruction_argument(f"'{api}' cannot run on the {name} engine (allowed: "
                                               f"{', '.join(allowed)})")
    return name


def gpsimd_no_psum(eng: str, api: str, **ops: Any) -> None:
    """GpSimd cannot access PSUM (``err_unsupported_memory``)."""
    if eng == "gpsimd":
        for k, v in ops.items():
            if is_tile(v) and v.buffer.kind == "psum":
                raise err_unsupported_memory(f"'{api}' on the GpSimd engine cannot access PSUM: operand "
                                             f"'{k}' {v.describe()}")


def require_generation(api: str, minimum: int) -> None:
    """Raise ``err_unsupported_on_target`` when the simulated NeuronCore is older than ``minimum``
    (AWS: "Available only on NeuronCore-v<minimum> and newer")."""
    sim = current()
    gen = sim.platform.core.generation
    if gen < minimum:
        raise err_unsupported_on_target(f"'{api}' needs NeuronCore-v{minimum} or newer; {sim.platform.name} has "
                                        f"NeuronCore-v{gen} (choose the platform with nki.jit(platform_target=...) "
                                        "or TORCH_NEURONX_PLATFORM)")


def scalar_operand(ins: Any, x: Any, p: int, api: str, arg: str, check: Any = None,
                   mask: Any = None) -> Any:
    """A scalar or a (P, 1) per-partition vector operand -> float32 value broadcastable to (P, ...).

    Raises:
        ``check`` (default ``err_num_partition_mismatch``): a tile that is not (P, 1).
    """
    if x is None:
        return None
    if is_tile(x):
        if check is None:
            check = err_num_partition_mismatch
        xp = operand(x, api, arg)
        if xp != p or free_size(x.shape) != 1:
            if xp == 1 and free_size(x.shape) == 1:
                return f32(ins.read(x)).reshape(1, 1)          # a [1, 1] value: broadcast to all partitions
            raise check(f"'{api}': '{arg}' must be a scalar or a ({p}, 1) vector, got {x.describe()}")
        return f32(ins.read(x)).reshape(p, 1)
    if isinstance(x, VirtualRegister):
        return np.float32(x.get())
    try:
        return np.float32(x)
    except (TypeError, ValueError):
        raise err_activation_scale_scalar_or_vector(f"'{api}': '{arg}' must be a number or a tile, got "
                                                    f"{x!r}") from None


def count(mask: Any, shape: tuple) -> int:
    """Elements kept by ``mask`` in an access of ``shape``."""
    m = as_mask_array(mask, shape)
    return int(np.prod(shape, dtype=np.int64)) if m is None else int(m.sum())


def mask_shape_ok(mask: Any, shape: tuple) -> bool:
    """True when ``mask`` (a Mask / bool array) broadcasts to ``shape``."""
    return mask is None or as_mask_array(mask, shape) is not None


def fresh_result(shape: tuple, dtype: Any, buffer: Any = sbuf, mask: Any = None) -> NkiTensor:
    """A new tile for a legacy instruction's result, marked *fresh*: assigning it to another tile
    (``t[...] = result``) then writes the values in place instead of issuing a copy instruction, as
    AWS's compiler does for the legacy API's returned tiles.

    Args:
        shape: tile shape ``(P, F...)``; dtype: NKI dtype; buffer: ``sbuf`` (default) or ``psum``.
        mask: the mask the result is computed under (an assignment writes only those elements).
    """
    t = current().new_tensor(tuple(shape), dtype, buffer)
    t.fresh = True
    t.fresh_mask = mask
    return t


class NkiInstruction:
    """Handle of an issued instruction (AWS's ``nisa.NkiInstruction``): ``depends_on(*producers)``
    orders it after the producers in the cost model (results are unaffected: the simulator executes in
    program order)."""

    __slots__ = ("name", "engine", "start_ns", "done_ns", "sim")

    def __init__(self, name: str, engine: str | None, start_ns: float, done_ns: float, sim: Any):
        self.name, self.engine, self.start_ns, self.done_ns, self.sim = name, engine, start_ns, done_ns, sim

    def depends_on(self, *producers: NkiInstruction) -> NkiInstruction:
        """Add scheduling dependencies: this instruction runs after every producer completes; later
        instructions of its engine queue are delayed accordingly. Returns self."""
        latest = max([p.done_ns for p in producers if isinstance(p, NkiInstruction)], default=0.0)
        if latest > self.start_ns and self.engine and self.sim is not None:
            shift = latest - self.start_ns
            tl = self.sim.timeline
            tl.hold(self.engine, self.done_ns + shift)
            self.start_ns += shift
            self.done_ns += shift
            tl.makespan_ns = max(tl.makespan_ns, self.done_ns)
        return self

    def __repr__(self) -> str:
        return f"<NkiInstruction {self.name} on {self.engine}>"


def issue(sim: Any) -> NkiInstruction:
    """The handle of the instruction ``sim`` just committed."""
    tr = sim.timeline.trace
    if tr:
        name, eng, start, _end, done = tr[-1]
        return NkiInstruction(name, eng, start, done, sim)
    return NkiInstruction("", None, 0.0, 0.0, sim)


class VirtualRegister:
    """A virtual engine register (AWS's ``nisa.VirtualRegister``): an integer the kernel loads from a
    tile (``register_load``), moves, stores, and uses as a dynamic loop bound or offset.

    Python control flow on a register works here (the simulator knows the value at every point); AWS's
    tracing front end would raise for ``if reg:`` and needs ``nl.fori_loop`` / ``nl.while_loop``.
    """

    __slots__ = ("value", "frozen")

    def __init__(self, state: Any = None, frozen: bool = False):
        self.value = 0 if state is None else int(state)
        self.frozen = frozen

    def get(self) -> int:
        return int(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __index__(self) -> int:
        return int(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __repr__(self) -> str:
        return f"VirtualRegister({self.value})"


_ = dtypes
