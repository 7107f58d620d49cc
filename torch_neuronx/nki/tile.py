"""Tensors (HBM tensors and SBUF/PSUM tiles) and views on them.

* :class:`NkiTensor` is one allocation: a shape, a logical dtype, a :class:`~.memory.Buffer`, the
  position of the partition dimension (``nl.par_dim``; dims before it are *block* dims), and a
  float32 (or integer) NumPy storage array already rounded to the logical dtype.
* :class:`View` is a subscript of a tensor (``t[i_p, i_f]``, ``t[k]``, ``t[:, 0:64]``); it keeps the
  per-dimension index components so reads and writes can be masked and bounds-checked.

Both behave as *tiles*: Python operators, ``t[...] = value`` and ``t += x`` work on them. What that
syntax means belongs to the layers above, which install it with :func:`install_operators`: the
instruction layer installs ``assign`` / ``accumulate`` (``t[...] = x`` and ``t op= x``), the
``nki.language`` front end the arithmetic, comparison and logical operators (``nl.add`` ...). This
module therefore imports neither.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from .errors import err_failed_to_infer_tile_from_local_tensor, err_partition_stride_not_supported
from .indexing import full_index_arrays, normalize_key, slice_len
from .memory import ON_CHIP

__all__ = ["ParDim", "par_dim", "NkiTensor", "View", "is_tile", "as_view", "broadcast_shape",
           "install_operators", "OPERATOR_NAMES"]

_ids = itertools.count()

OPERATOR_NAMES = (
    "assign", "accumulate", "broadcast_to",
    "add", "subtract", "multiply", "divide", "power", "negative", "abs",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
)
"""The operations tile syntax dispatches to; each is installed by a layer above this one:
``assign(dst_view, value)``, ``accumulate(dst, value, op_name)`` (the instruction layer) and the
``nl`` functions of the same names (the front end)."""

_OPERATORS: dict[str, Callable] = {}


def install_operators(table: Mapping[str, Callable]) -> None:
    """Install what tile syntax means: ``table`` maps names of :data:`OPERATOR_NAMES` to callables.

    Raises:
        ValueError: for a name that is not one of :data:`OPERATOR_NAMES`.
    """
    unknown = sorted(set(table) - set(OPERATOR_NAMES))
    if unknown:
        raise ValueError(f"install_operators: {unknown} are not tile operators; known: {OPERATOR_NAMES}")
    _OPERATORS.update(table)


def _operator(name: str) -> Callable:
    try:
        return _OPERATORS[name]
    except KeyError:
        raise RuntimeError(f"tile operator '{name}' is not installed: import torch_neuronx.nki (or "
                           "torch_neuronx.nki.language), which installs the meaning of Python "
                           "operators on tiles") from None


class ParDim(int):
    """An ``int`` marking the partition dimension in an ``nl.ndarray`` shape (``nl.par_dim(128)``)."""

    def __repr__(self):
        return f"par_dim({int(self)})"


def par_dim(size: int) -> ParDim:
    """Mark ``size`` as the partition dimension of a new tile shape (dims before it are block dims)."""
    return ParDim(size)


class _TileOps:
    """Operators and subscripting shared by tensors and views."""

    __array_priority__ = 200
    __hash__ = object.__hash__

    if TYPE_CHECKING:  # what NkiTensor and View provide
        tensor: Any
        shape: tuple[int, ...]
        comps: Any

        def _view(self, key: Any) -> Any: ...

    # --- properties ---------------------------------------------------------------------------
    @property
    def dtype(self):
        return self.tensor.dtype

    @property
    def buffer(self):
        return self.tensor.buffer

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        raise TypeError("a tile has no truth value: control flow cannot depend on tensor values "
                        "(AWS: err_dynamic_control_flow_not_supported)")

    # --- subscripting -------------------------------------------------------------------------
    def __getitem__(self, key):
        return self._view(key)

    def __setitem__(self, key, value):
        _operator("assign")(self._view(key), value)

    # --- arithmetic -> the installed nl functions ---------------------------------------------
    def __add__(self, o): return _operator("add")(self, o)
    def __radd__(self, o): return _operator("add")(o, self)
    def __sub__(self, o): return _operator("subtract")(self, o)
    def __rsub__(self, o): return _operator("subtract")(o, self)
    def __mul__(self, o): return _operator("multiply")(self, o)
    def __rmul__(self, o): return _operator("multiply")(o, self)
    def __truediv__(self, o): return _operator("divide")(self, o)
    def __rtruediv__(self, o): return _operator("divide")(o, self)
    def __pow__(self, o): return _operator("power")(self, o)
    def __rpow__(self, o): return _operator("power")(o, self)
    def __neg__(self): return _operator("negative")(self)
    def __abs__(self): return _operator("abs")(self)
    def __lt__(self, o): return _operator("less")(self, o)
    def __le__(self, o): return _operator("less_equal")(self, o)
    def __gt__(self, o): return _operator("greater")(self, o)
    def __ge__(self, o): return _operator("greater_equal")(self, o)
    def __and__(self, o): return _operator("logical_and")(self, o)
    def __or__(self, o): return _operator("logical_or")(self, o)
    def __xor__(self, o): return _operator("logical_xor")(self, o)
    def __invert__(self): return _operator("logical_not")(self)

    def __eq__(self, o):
        if isinstance(o, (_TileOps, int, float, np.number)):
            return _operator("equal")(self, o)
        return NotImplemented

    def __ne__(self, o):
        if isinstance(o, (_TileOps, int, float, np.number)):
            return _operator("not_equal")(self, o)
        return NotImplemented

    def _inplace(self, o, op):
        _operator("accumulate")(self, o, op)
        self.accumulated = True
        return self

    def __iadd__(self, o): return self._inplace(o, "add")
    def __isub__(self, o): return self._inplace(o, "subtract")
    def __imul__(self, o): return self._inplace(o, "multiply")
    def __itruediv__(self, o): return self._inplace(o, "divide")

    def broadcast_to(self, shape):
        """Tile broadcast to ``shape`` (size-1 partition or free dims replicated); see nl.broadcast_to."""
        return _operator("broadcast_to")(self, shape)

    # --- tile checks ----------------------------------------------------------------------------
    def partition_info(self):
        """For an SBUF/PSUM access: check that axis 0 of this view is the (contiguous) partition dim.

        Raises ``err_failed_to_infer_tile_from_local_tensor`` (block dims not indexed away / partition
        dim indexed by an int) or ``err_partition_stride_not_supported``.
        """
        t = self.tensor
        if t.buffer.kind not in ON_CHIP:
            return
        cached = getattr(self, "_pchecked", False)
        if cached:
            return
        comps, pd = self.comps, t.pdim
        desc = f"{t.describe()} accessed as {list(self.shape)}"
        for c in comps[:pd]:
            if isinstance(c, slice) or (isinstance(c, np.ndarray) and np.unique(c).size > 1):
                raise err_failed_to_infer_tile_from_local_tensor(
                    f"{desc}: block dimensions before the partition dimension must be indexed by an integer")
        c = comps[pd]
        if isinstance(c, (int, np.integer)):
            raise err_failed_to_infer_tile_from_local_tensor(
                f"{desc}: the partition dimension is indexed by a scalar; use a range (e.g. 0:1)")
        if isinstance(c, slice):
            if c.step != 1:
                raise err_partition_stride_not_supported(f"{desc}: partition step {c.step}")
        else:
            full = np.broadcast_to(c, self.shape) if self.shape else c
            ref = full.reshape(full.shape[0], -1)
            if ref.shape[1] > 1 and not np.all(ref == ref[:, :1]):
                raise err_partition_stride_not_supported(
                    f"{desc}: partition index varies along a free axis (partition must be axis 0)")
            col = ref[:, 0]
            if col.size > 1 and not np.all(np.diff(col) == 1):
                raise err_partition_stride_not_supported(
                    f"{desc}: partition indices are not contiguous (step {int(col[1] - col[0])})")
        self._pchecked = True


class NkiTensor(_TileOps):
    """One allocation in HBM, SBUF or PSUM.

    Args:
        shape: tuple of ints; for SBUF/PSUM ``shape[pdim]`` is the partition count (<= 128).
        dtype: logical NKI dtype (``nl.bfloat16`` ...).
        buffer: :class:`~.memory.Buffer`.
        data: storage array (float32 for float dtypes), shape ``shape``.
        pdim: index of the partition dimension (block dims precede it); 0 for HBM.
        name: for messages.
    """

    def __init__(self, shape, dtype, buffer, data, pdim=0, name="", root=None):
        self.shape = tuple(int(s) for s in shape)
        self.dtype_ = dtype
        self.buffer_ = buffer
        self.data = data
        self.pdim = pdim
        self.name = name or f"t{next(_ids)}"
        self._root = root          # None: this tensor is its own root (no self-reference cycle,
        if root is None:           # so tiles are freed as soon as the kernel drops them)
            self.immutable = False
            self.written = False
            self.aux_ = {}
            self.marks_ = {}
            self.created_in = {}
        self.fresh = False         # an instruction result not yet assigned (see instructions.assign)
        self.fresh_mask = None     # the mask it was computed under
        self.accumulated = False   # set by ``t op= x`` so the following ``t[...] = t`` is a no-op

    # NkiTensor is its own full view
    tensor = property(lambda self: self)
    root = property(lambda self: self._root if self._root is not None else self)
    dtype = property(lambda self: self.dtype_)
    buffer = property(lambda self: self.buffer_)

    @property
    def comps(self):
        return [slice(0, n, 1) for n in self.shape]

    advanced = False

    def describe(self) -> str:
        """'name' [shape] dtype in buffer -- used in error messages."""
        return f"'{self.name}' {list(self.shape)} {dtypes.dtype_name(self.dtype)} in {self.buffer.name}"

    def __repr__(self):
        return f"NkiTensor({self.describe()})"

    def _view(self, key):
        comps, vshape, adv = normalize_key(key, self.shape)
        return View(self, comps, vshape, adv)

    def reshape(self, shape):
        """Reshaped HBM tensor sharing storage (e.g. a 1-D weight as ``[1, n]``)."""
        shape = tuple(int(s) for s in shape)
        if self.buffer.kind in ON_CHIP:
            raise NotImplementedError("reshape is only supported on HBM tensors")
        if int(np.prod(shape)) != int(np.prod(self.shape)):
            raise ValueError(f"cannot reshape {list(self.shape)} to {list(shape)}")
        return NkiTensor(shape, self.dtype, self.buffer, self.data.reshape(shape), 0, self.name,
                         root=self.root)

    # --- per-element side arrays of the root, reshaped to this tensor ------------------------------
    def aux(self, kind: str) -> np.ndarray:
        """Side array of the root tensor (``'ready'`` / ``'read_done'`` times in ns), this shape."""
        r = self.root
        a = r.aux_.get(kind)
        if a is None:
            a = r.aux_[kind] = np.zeros(r.shape, dtype=np.float64)
        return a if r is self else a.reshape(self.shape)

    def marks(self, frame_id: int) -> np.ndarray:
        """Iteration marks of affine loop ``frame_id`` (-1 = not written in this loop), this shape."""
        r = self.root
        m = r.marks_.get(frame_id)
        if m is None:
            m = r.marks_[frame_id] = np.full(r.shape, -1, dtype=np.int32)
        return m if r is self else m.reshape(self.shape)

    @property
    def partitions(self) -> int:
        return self.shape[self.pdim] if self.shape else 1


class View(_TileOps):
    """A subscripted tensor: base ``tensor``, per-dim ``comps`` (int | slice | int array), ``shape``."""

    __slots__ = ("tensor", "comps", "shape", "advanced", "_pchecked", "accumulated")

    def __init__(self, tensor, comps, shape, advanced):
        self.tensor = tensor
        self.comps = comps
        self.shape = tuple(shape)
        self.advanced = advanced
        self._pchecked = False
        self.accumulated = False

    def __repr__(self):
        return f"View({self.tensor.describe()} -> {list(self.shape)})"

    def describe(self) -> str:
        return f"{self.tensor.describe()} accessed as {list(self.shape)}"

    def _view(self, key):
        comps, vshape, adv = normalize_key(key, self.shape)
        if not adv and not self.advanced:
            # compose basic with basic: slice arithmetic
            new = []
            it = iter(comps)
            for c in self.comps:
                if not isinstance(c, slice):
                    new.append(c)
                    continue
                k = next(it)
                if isinstance(k, slice):
                    n = slice_len(k)
                    start = c.start + k.start * c.step
                    step = c.step * k.step
                    new.append(slice(start, start + n * step, step))
                else:
                    new.append(c.start + k * c.step)
            return View(self.tensor, new, vshape, False)
        full = full_index_arrays(self.comps, self.shape, self.advanced)
        keyt = tuple(comps)
        new = [np.asarray(f[keyt]) for f in full]
        return View(self.tensor, new, vshape, True)


def is_tile(x) -> bool:
    """True for :class:`NkiTensor` and :class:`View`."""
    return isinstance(x, _TileOps)


def as_view(x) -> View:
    """``x`` as a :class:`View` (a tensor becomes its full view; a view is returned as is)."""
    return x if isinstance(x, View) else View(x, x.comps, x.shape, False)


def broadcast_shape(*xs) -> tuple:
    """Shape of an element-wise result of the tiles among ``xs`` (non-tiles ignored): shapes are
    aligned from the partition axis (missing trailing free dims count as 1) and broadcast.

    Raises:
        ValueError: when the shapes do not broadcast.
    """
    shapes = [x.shape for x in xs if is_tile(x)]
    n = max(len(s) for s in shapes)
    padded = [tuple(s) + (1,) * (n - len(s)) for s in shapes]
    try:
        return tuple(np.broadcast_shapes(*padded))
    except ValueError:
        raise ValueError(f"tile shapes {[list(s) for s in shapes]} do not broadcast") from None
