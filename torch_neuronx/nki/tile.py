"""Tensors (HBM tensors and SBUF/PSUM tiles) and views on them.

* :class:`NkiTensor` is one allocation: a shape, a logical dtype, a :class:`~.memory.Buffer`, the
  position of the partition dimension (``nl.par_dim``; dims before it are *block* dims), and a
  float32 (or integer) NumPy storage array already rounded to the logical dtype.
* :class:`View` is a subscript of a tensor (``t[i_p, i_f]``, ``t[k]``, ``t[:, 0:64]``); it keeps the
  per-dimension index components so reads and writes can be masked and bounds-checked.

Both behave as *tiles*: Python operators map to ``nl`` functions, ``t[...] = value`` writes, and
``t += x`` accumulates (free PSUM accumulation when ``x`` is a fresh matmul result).
"""
from __future__ import annotations

import itertools

import numpy as np

from . import dtypes as _dt
from .errors import err_failed_to_infer_tile_from_local_tensor, err_partition_stride_not_supported
from .indexing import normalize_key, _slice_len, _full_arrays
from .memory import ON_CHIP

__all__ = ["ParDim", "par_dim", "NkiTensor", "View", "is_tile"]

_ids = itertools.count()


class ParDim(int):
    """An ``int`` marking the partition dimension in an ``nl.ndarray`` shape (``nl.par_dim(128)``)."""

    def __repr__(self):
        return f"par_dim({int(self)})"


def par_dim(size: int) -> ParDim:
    """Mark ``size`` as the partition dimension of a new tile shape (dims before it are block dims)."""
    return ParDim(size)


def _lang():
    from . import language
    return language


class _TileOps:
    """Operators and subscripting shared by tensors and views."""

    __array_priority__ = 200
    __hash__ = object.__hash__

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
        from .simulator import current
        current().assign(self._view(key), value)

    # --- arithmetic -> nl functions ------------------------------------------------------------
    def __add__(self, o): return _lang().add(self, o)
    def __radd__(self, o): return _lang().add(o, self)
    def __sub__(self, o): return _lang().subtract(self, o)
    def __rsub__(self, o): return _lang().subtract(o, self)
    def __mul__(self, o): return _lang().multiply(self, o)
    def __rmul__(self, o): return _lang().multiply(o, self)
    def __truediv__(self, o): return _lang().divide(self, o)
    def __rtruediv__(self, o): return _lang().divide(o, self)
    def __pow__(self, o): return _lang().power(self, o)
    def __rpow__(self, o): return _lang().power(o, self)
    def __neg__(self): return _lang().negative(self)
    def __abs__(self): return _lang().abs(self)
    def __lt__(self, o): return _lang().less(self, o)
    def __le__(self, o): return _lang().less_equal(self, o)
    def __gt__(self, o): return _lang().greater(self, o)
    def __ge__(self, o): return _lang().greater_equal(self, o)
    def __and__(self, o): return _lang().logical_and(self, o)
    def __or__(self, o): return _lang().logical_or(self, o)
    def __xor__(self, o): return _lang().logical_xor(self, o)
    def __invert__(self): return _lang().logical_not(self)

    def __eq__(self, o):
        if isinstance(o, (_TileOps, int, float, np.number)):
            return _lang().equal(self, o)
        return NotImplemented

    def __ne__(self, o):
        if isinstance(o, (_TileOps, int, float, np.number)):
            return _lang().not_equal(self, o)
        return NotImplemented

    def _inplace(self, o, op):
        from .simulator import current
        current().accumulate(self, o, op)
        self._accumulated = True
        return self

    def __iadd__(self, o): return self._inplace(o, "add")
    def __isub__(self, o): return self._inplace(o, "subtract")
    def __imul__(self, o): return self._inplace(o, "multiply")
    def __itruediv__(self, o): return self._inplace(o, "divide")

    def broadcast_to(self, shape):
        """Tile broadcast to ``shape`` (size-1 partition or free dims replicated); see nl.broadcast_to."""
        return _lang().broadcast_to(self, shape)

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
        self._fresh = False
        self._fresh_mask = None

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
        return f"'{self.name}' {list(self.shape)} {_dt.dtype_name(self.dtype)} in {self.buffer.name}"

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

    __slots__ = ("tensor", "comps", "shape", "advanced", "_pchecked", "_accumulated")

    def __init__(self, tensor, comps, shape, advanced):
        self.tensor = tensor
        self.comps = comps
        self.shape = tuple(shape)
        self.advanced = advanced
        self._pchecked = False
        self._accumulated = False

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
                    n = _slice_len(k)
                    start = c.start + k.start * c.step
                    step = c.step * k.step
                    new.append(slice(start, start + n * step, step))
                else:
                    new.append(c.start + k * c.step)
            return View(self.tensor, new, vshape, False)
        full = _full_arrays(self.comps, self.shape, self.advanced)
        keyt = tuple(comps)
        new = [np.asarray(f[keyt]) for f in full]
        return View(self.tensor, new, vshape, True)


def is_tile(x) -> bool:
    """True for :class:`NkiTensor` and :class:`View`."""
    return isinstance(x, _TileOps)
