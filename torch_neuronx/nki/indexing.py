"""Index expressions, masks and access patterns of the legacy NKI API.

* :class:`IndexExpr` is what ``nl.arange`` / ``nl.mgrid`` produce: an integer grid that supports
  affine arithmetic (``i * 512 + i_f``) and comparisons (which produce a :class:`Mask`).
* :func:`normalize_key` turns a subscript (ints, slices, ``nl.ds``, index expressions, ``...``)
  into one *component* per tensor dimension and the shape of the resulting view, enforcing NKI's
  indexing rules (no 1-D arange, no mixing of slices with arange indexing: AWS error codes
  ``err_1d_arange_not_supported``, ``err_unsupported_mixing_basic_advanced_tensor_indexing``).
* :func:`resolve` turns the components plus an optional mask into a NumPy index for the
  tensor's storage, checking bounds on the elements the mask keeps.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import (err_1d_arange_not_supported, err_cannot_assign_to_index,
                     err_tensor_access_out_of_bound,
                     err_unsupported_mixing_basic_advanced_tensor_indexing)

__all__ = ["IndexExpr", "Mask", "arange", "mgrid", "ds", "normalize_key", "resolve",
           "tile_broadcast", "as_mask_array", "slice_len", "full_index_arrays"]


def _val(x):
    if isinstance(x, IndexExpr):
        return x.values
    if isinstance(x, Mask):
        return x.values
    return x


class IndexExpr:
    """An integer index grid (``nl.arange(128)[:, None]``, ``i * 512 + nl.arange(512)[None, :]``).

    ``values`` is an int64 NumPy array; arithmetic with ints or other IndexExprs is elementwise with
    broadcasting; comparisons return a :class:`Mask`.
    """

    __slots__ = ("values",)
    __array_priority__ = 100

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.int64)

    shape = property(lambda self: self.values.shape)
    ndim = property(lambda self: self.values.ndim)

    def __getitem__(self, key):
        return IndexExpr(self.values[key])

    def __setitem__(self, key, value):
        raise err_cannot_assign_to_index(f"index expression of shape {list(self.shape)}")

    def __repr__(self):
        return f"IndexExpr(shape={list(self.shape)})"

    def __len__(self):
        return len(self.values)

    # arithmetic -------------------------------------------------------------------------------
    def _bin(self, other, fn):
        return IndexExpr(fn(self.values, _val(other)))

    __add__ = lambda s, o: s._bin(o, np.add)
    __radd__ = lambda s, o: s._bin(o, lambda a, b: b + a)
    __sub__ = lambda s, o: s._bin(o, np.subtract)
    __rsub__ = lambda s, o: s._bin(o, lambda a, b: b - a)
    __mul__ = lambda s, o: s._bin(o, np.multiply)
    __rmul__ = lambda s, o: s._bin(o, lambda a, b: b * a)
    __floordiv__ = lambda s, o: s._bin(o, np.floor_divide)
    __rfloordiv__ = lambda s, o: s._bin(o, lambda a, b: b // a)
    __mod__ = lambda s, o: s._bin(o, np.mod)
    __neg__ = lambda s: IndexExpr(-s.values)

    # comparisons -> Mask ----------------------------------------------------------------------
    def _cmp(self, other, fn):
        return Mask(fn(self.values, _val(other)))

    __lt__ = lambda s, o: s._cmp(o, np.less)
    __le__ = lambda s, o: s._cmp(o, np.less_equal)
    __gt__ = lambda s, o: s._cmp(o, np.greater)
    __ge__ = lambda s, o: s._cmp(o, np.greater_equal)

    # defs, not lambdas: a lambda here would be typed by object.__eq__, its ``s`` an object
    def __eq__(self, o):
        return self._cmp(o, np.equal)

    def __ne__(self, o):
        return self._cmp(o, np.not_equal)

    __hash__ = object.__hash__


class Mask:
    """A boolean predicate over an instruction's iteration space (``mask=`` argument).

    Built by comparing index expressions; combine with ``&``, ``|``, ``^``, ``~``.
    """

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = np.asarray(values, dtype=bool)

    shape = property(lambda self: self.values.shape)

    def __and__(self, o):
        return Mask(self.values & np.asarray(_val(o), dtype=bool))

    __rand__ = __and__

    def __or__(self, o):
        return Mask(self.values | np.asarray(_val(o), dtype=bool))

    __ror__ = __or__

    def __xor__(self, o):
        return Mask(self.values ^ np.asarray(_val(o), dtype=bool))

    def __invert__(self):
        return Mask(~self.values)

    def __bool__(self):
        raise TypeError("a NKI mask has no single truth value; pass it as mask= "
                        "(AWS: err_control_flow_condition_depending_on_arange)")

    def __repr__(self):
        return f"Mask(shape={list(self.shape)}, true={int(self.values.sum())})"


def arange(*args) -> IndexExpr:
    """``nl.arange(stop)`` / ``nl.arange(start, stop[, step])``: a 1-D index grid; add axes with
    ``[:, None]`` (partition) or ``[None, :]`` (free) before indexing a tensor."""
    return IndexExpr(np.arange(*args, dtype=np.int64))


class _MGridResult(tuple):
    """Result of ``nl.mgrid[...]``: unpackable, and with ``.p`` (partition) ``.x`` ``.y`` ``.z``."""

    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self[1]

    @property
    def y(self):
        return self[2]

    @property
    def z(self):
        return self[3]


class _MGrid:
    """``nl.mgrid[0:128, 0:512]`` -> open grids of shape (128, 1) and (1, 512) (like ``np.ogrid``)."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        n = len(key)
        out = []
        for ax, sl in enumerate(key):
            if not isinstance(sl, slice):
                raise TypeError("nl.mgrid takes slices, e.g. nl.mgrid[0:128, 0:512]")
            vals = np.arange(sl.start or 0, sl.stop, sl.step or 1, dtype=np.int64)
            shape = [1] * n
            shape[ax] = len(vals)
            out.append(IndexExpr(vals.reshape(shape)))
        return _MGridResult(out)


mgrid = _MGrid()


def ds(start, size) -> slice:
    """``nl.ds(start, size)``: the slice ``start:start+size``."""
    return slice(int(start), int(start) + int(size), 1)


# ---------------------------------------------------------------------------------------------
def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def normalize_key(key, shape):
    """Components (one per dim: int, ``slice`` with explicit start/stop/step, or int array) and the
    resulting view shape for subscript ``key`` on a tensor of ``shape``.

    Raises ``err_1d_arange_not_supported`` and
    ``err_unsupported_mixing_basic_advanced_tensor_indexing``.
    """
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        fill = len(shape) - (len(key) - 1)
        key = key[:i] + (slice(None),) * max(fill, 0) + key[i + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices ({len(key)}) for tensor of shape {list(shape)}")
    explicit = len(key)
    key = key + (slice(None),) * (len(shape) - len(key))
    comps: list[Any] = []  # per dimension: an int, a slice or an int64 index array
    has_slice = has_array = False
    for d, (k, n) in enumerate(zip(key, shape, strict=False)):
        if isinstance(k, IndexExpr):
            if k.ndim == 1 and len(shape) > 1:
                raise err_1d_arange_not_supported(
                    f"dimension {d} indexed with 1-D arange of shape {list(k.shape)}")
            comps.append(k.values)
            has_array = True
        elif isinstance(k, np.ndarray) and k.dtype.kind in "iu":
            comps.append(k.astype(np.int64))
            has_array = True
        elif _is_int(k):
            comps.append(int(k))
        elif isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            start = (0 if step > 0 else n - 1) if k.start is None else int(k.start)
            stop = (n if step > 0 else -1) if k.stop is None else int(k.stop)
            comps.append(slice(start, stop, step))
            if d < explicit:
                has_slice = True
        else:
            raise TypeError(f"unsupported index {k!r} (dynamic / tensor-valued indexing is not "
                            "supported by this simulator)")
    if has_array and (has_slice or explicit < len(shape)):
        raise err_unsupported_mixing_basic_advanced_tensor_indexing(
            f"subscript {key[:explicit]!r} on shape {list(shape)}")
    if has_array:
        arrays = [c for c in comps if isinstance(c, np.ndarray)]
        vshape = np.broadcast_shapes(*[a.shape for a in arrays])
    else:
        vshape = tuple(slice_len(c) for c in comps if isinstance(c, slice))
    return comps, tuple(int(s) for s in vshape), has_array


def slice_len(s: slice) -> int:
    """Number of elements of a normalised slice (explicit start, stop and step, as
    :func:`normalize_key` produces)."""
    if s.step > 0:
        return max(0, (s.stop - s.start + s.step - 1) // s.step)
    return max(0, (s.start - s.stop - s.step - 1) // (-s.step))


def tile_broadcast(arr, shape):
    """Broadcast ``arr`` to ``shape`` the NKI way: dimensions align from the partition axis (left),
    missing trailing free dims count as size 1."""
    a = np.asarray(arr)
    if a.shape == tuple(shape):
        return a
    if a.ndim < len(shape):
        a = a.reshape(a.shape + (1,) * (len(shape) - a.ndim))
    elif a.ndim > len(shape):
        extra = a.shape[len(shape):]
        if all(s == 1 for s in extra):
            a = a.reshape(a.shape[:len(shape)])
    return np.broadcast_to(a, shape)


def as_mask_array(mask, shape):
    """Boolean array of ``shape`` for a ``mask=`` argument (Mask, bool array or None -> None)."""
    if mask is None:
        return None
    vals = mask.values if isinstance(mask, Mask) else np.asarray(mask, dtype=bool)
    try:
        return np.ascontiguousarray(tile_broadcast(vals, shape))
    except ValueError:
        raise ValueError(f"mask of shape {list(vals.shape)} does not broadcast to the instruction "
                         f"shape {list(shape)}") from None


def full_index_arrays(comps, vshape, advanced) -> list:
    """Per-dimension int64 arrays, each of shape ``vshape``, giving the storage index of every
    element of the view described by ``comps`` (components of :func:`normalize_key`)."""
    out = []
    if advanced:
        for c in comps:
            out.append(np.broadcast_to(np.asarray(c, dtype=np.int64), vshape))
        return out
    axis = 0
    nd = len(vshape)
    for c in comps:
        if isinstance(c, slice):
            n = vshape[axis]
            vals = c.start + c.step * np.arange(n, dtype=np.int64)
            shp = [1] * nd
            shp[axis] = n
            out.append(np.broadcast_to(vals.reshape(shp), vshape))
            axis += 1
        else:
            out.append(np.broadcast_to(np.int64(c), vshape))
    return out


def _oob(comps, base_shape, vshape, advanced):
    """Description of the first out-of-bound component, or None."""
    for d, (c, n) in enumerate(zip(comps, base_shape, strict=False)):
        if isinstance(c, slice):
            ln = slice_len(c)
            if ln == 0:
                continue
            last = c.start + (ln - 1) * c.step
            lo, hi = min(c.start, last), max(c.start, last)
        elif isinstance(c, np.ndarray):
            if c.size == 0:
                continue
            lo, hi = int(c.min()), int(c.max())
        else:
            lo = hi = c
        if lo < 0 or hi >= n:
            return d, lo, hi, n
    return None


def resolve(comps, base_shape, vshape, advanced, mask_arr=None, name="tensor"):
    """NumPy index into the storage for the view elements kept by ``mask_arr``.

    Returns ``(np_index, sel)``: ``storage[np_index]`` are the accessed elements, ``sel`` selects
    the matching elements of a view-shaped array (``Ellipsis`` when the access is unmasked).
    Raises ``err_tensor_access_out_of_bound`` for unmasked out-of-range elements.
    """
    if mask_arr is None:
        bad = _oob(comps, base_shape, vshape, advanced)
        if bad is not None:
            d, lo, hi, n = bad
            raise err_tensor_access_out_of_bound(
                f"tensor '{name}' {list(base_shape)}: dimension {d} index range [{lo}, {hi}] "
                f"exceeds size {n} (unmasked)")
        if advanced:
            return tuple(comps), Ellipsis
        return tuple(comps), Ellipsis
    fast = _partition_range_mask(mask_arr, vshape)
    if fast is not None:
        # the usual NKI mask (e.g. ``i * 128 + i_p < N``) keeps a contiguous range of partitions:
        # restrict the access to it and stay on NumPy basic indexing
        a, b = fast
        sub = _restrict_axis0(comps, vshape, advanced, a, b)
        np_index, _ = resolve(sub, base_shape, (b - a,) + tuple(vshape[1:]), advanced, None, name)
        return np_index, (slice(a, b),)
    full = full_index_arrays(comps, vshape, advanced)
    m = mask_arr
    pos = tuple(f[m] for f in full)
    for d, (p, n) in enumerate(zip(pos, base_shape, strict=False)):
        if p.size and (p.min() < 0 or p.max() >= n):
            raise err_tensor_access_out_of_bound(
                f"tensor '{name}' {list(base_shape)}: dimension {d} index range "
                f"[{int(p.min())}, {int(p.max())}] exceeds size {n} (after mask)")
    return pos, m


def _partition_range_mask(m, vshape):
    """(a, b) if mask ``m`` is constant along the free axes and true exactly on rows a..b-1."""
    if m is None or not vshape or m.ndim == 0:
        return None
    m2 = m.reshape(m.shape[0], -1)
    if m2.shape[1] > 1 and not np.array_equal(m2, np.broadcast_to(m2[:, :1], m2.shape)):
        return None
    rows = np.flatnonzero(m2[:, 0])
    if rows.size == 0 or rows[-1] - rows[0] + 1 != rows.size:
        return None
    return int(rows[0]), int(rows[-1]) + 1


def _restrict_axis0(comps, vshape, advanced, a, b):
    nd = len(vshape)
    out = []
    if advanced:
        for c in comps:
            if isinstance(c, np.ndarray):
                c = c.reshape((1,) * (nd - c.ndim) + c.shape)
                if c.shape[0] > 1:
                    c = c[a:b]
            out.append(c)
        return out
    done = False
    for c in comps:
        if isinstance(c, slice) and not done:
            start = c.start + a * c.step
            c = slice(start, start + (b - a) * c.step, c.step)
            done = True
        out.append(c)
    return out
