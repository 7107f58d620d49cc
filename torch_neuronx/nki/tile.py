"""Tensors (HBM tensors, SBUF/PSUM tiles) as views of storage, the way AWS's ``NkiTensor`` is.

* :class:`Storage` is one allocation: logical allocation shape, dtype, buffer and a flat NumPy array in
  the storage dtype (:mod:`.dtypes`). On-chip storage is partition-major: element ``(p, f...)`` sits at
  ``p * pstride + row-major(f...)``, ``pstride`` being the free elements of a partition (AWS's language
  guide: "The free-dim stride is 1 ... The partition-dim stride is 64" for a (128, 64) tile). A legacy
  block tensor (``nl.ndarray((4, nl.par_dim(128), 512))``) keeps its block dims in the free bytes of
  each partition.
* :class:`NkiTensor` is a *view*: ``shape``, ``strides`` and ``offset`` in elements of its ``dtype``
  (AWS: "every NkiTensor has a shape, strides, offset, and buffer"; views share storage). Views that a
  strided pattern cannot describe -- legacy ``nl.arange`` indexing that is not affine, tensor-valued
  (indirect) indices, ``.ap(vector_offset=...)`` -- are *gather* views: a resolver computes the flat
  element index of every view element when an instruction accesses it (values of index tiles are read
  then), plus which elements are out of bounds.

Indexing rules (AWS's language guide, "Tensor Indexing", and ``NkiTensor.__getitem__``): on SBUF/PSUM
an integer index on the partition dim keeps it at size 1, an integer on a free dim drops it unless the
result would be < 2-D (then the last free dim stays at 1); HBM tensors drop indexed dims. A legacy
block dim indexed by an integer is dropped. Out-of-bound indices are not an error when the view is
made: the elements are marked, and an instruction raises ``err_tensor_access_out_of_bound`` only for
marked elements its mask keeps (AWS's errors page: out of bounds "unless a proper mask excludes it").

Both tensors and views are *tiles*: Python operators, ``t[...] = value`` and ``t += x`` work on them.
What that syntax means belongs to the layers above, which install it with :func:`install_operators`.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import dtypes
from .errors import (err_1d_arange_not_supported, err_ambiguous_tensor_truth_value,
                     err_dynamic_control_flow_not_supported,
                     err_failed_to_infer_tile_from_local_tensor, err_indirect_indices_free_dim,
                     err_invalid_instruction_argument, err_partition_stride_not_supported,
                     err_unsupported_mixing_basic_advanced_tensor_indexing)
from .indexing import DynamicSlice, IndexExpr, as_int, is_int, pattern_pairs
from .memory import ON_CHIP, Buffer

__all__ = ["ParDim", "par_dim", "Storage", "NkiTensor", "Access", "is_tile", "broadcast_shape",
           "install_operators", "OPERATOR_NAMES", "row_major_strides"]

_ids = itertools.count()

OPERATOR_NAMES = (
    "assign", "accumulate", "broadcast_to", "read_scalar",
    "add", "subtract", "multiply", "divide", "power", "negative", "abs", "mod", "floordiv",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "left_shift", "right_shift",
)
"""The operations tile syntax dispatches to; each is installed by a layer above this one:
``assign(dst, value)``, ``accumulate(dst, value, op_name)``, ``read_scalar(tile)`` (the instruction
layer) and the ``nl`` functions of the same names (the front end)."""

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
        raise RuntimeError(f"tile operator '{name}' is not installed: import torch_neuronx.nki, which "
                           "installs the meaning of Python operators on tiles") from None


class ParDim(int):
    """An ``int`` marking the partition dimension in a legacy ``nl.ndarray`` shape (``nl.par_dim(128)``)."""

    def __repr__(self) -> str:
        return f"par_dim({int(self)})"


def par_dim(size: int) -> ParDim:
    """Mark ``size`` as the partition dimension of a new tile shape (dims before it are block dims)."""
    return ParDim(size)


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a dense row-major array of ``shape``."""
    out = []
    acc = 1
    for n in reversed(tuple(shape)):
        out.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(out))


class Storage:
    """One allocation in HBM, SBUF or PSUM.

    Attributes:
        shape: allocation shape (block dims, partition dim, free dims).
        dtype: logical NKI dtype; ``data`` holds it in the storage dtype (``keep``: fp32 mode).
        buffer: the :class:`~.memory.Buffer`.
        pdim: index of the partition dim in ``shape`` (legacy block tensors: > 0).
        pstride: elements per partition (on-chip), the partition stride.
        data: flat storage array.
        name, immutable, written: for messages and the parameter / output rules.
    """

    __slots__ = ("shape", "dtype", "buffer", "pdim", "pstride", "data", "keep", "name", "immutable",
                 "param_written", "written", "aux", "marks", "created_in", "placement", "sim", "alloc",
                 "read_as_psum", "__weakref__")

    def __init__(self, shape: Sequence[int], dtype: Any, buffer: Buffer, data: np.ndarray, keep: bool,
                 pdim: int = 0, name: str = "", sim: Any = None):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.buffer = buffer
        self.pdim = pdim
        self.keep = keep
        self.data = data
        self.name = name or f"t{next(_ids)}"
        self.immutable = False
        self.param_written = False     # a current-front-end input written in place (must be returned)
        self.written = False
        self.aux: dict[str, np.ndarray] = {}
        self.marks: dict[int, np.ndarray] = {}
        self.created_in: dict[int, int] = {}
        self.placement: Any = None
        self.sim = sim
        self.alloc: Any = None         # its memory.Allocation (PSUM live ranges)
        # cost model only: a partition broadcast's result, which AWS's compiler produces in PSUM with a
        # Tensor Engine matmul, so its consumers read a PSUM operand (the values live here in SBUF)
        self.read_as_psum = False
        if buffer.kind in ON_CHIP and self.shape:
            self.pstride = int(np.prod(self.shape[:pdim] + self.shape[pdim + 1:], dtype=np.int64)) \
                if len(self.shape) > 1 else 1
        else:
            self.pstride = 0

    @property
    def size(self) -> int:
        return int(self.data.size)

    def root_strides(self) -> tuple[int, ...]:
        """Element strides of the allocation shape in this storage's layout (partition-major)."""
        if self.buffer.kind not in ON_CHIP or self.pdim == 0:
            return row_major_strides(self.shape)
        order = [self.pdim] + [d for d in range(len(self.shape)) if d != self.pdim]
        st = row_major_strides([self.shape[d] for d in order])
        out = [0] * len(self.shape)
        for pos, d in enumerate(order):
            out[d] = st[pos]
        return tuple(out)

    def flat(self, dtype: Any) -> np.ndarray:
        """The flat storage seen as elements of ``dtype`` (a reinterpret cast when it differs).

        Raises:
            NotImplementedError: reinterpreting a low-precision float storage kept in fp32 mode.
        """
        if dtype is self.dtype or dtype == self.dtype:
            return self.data
        nd = dtypes.np_dtype(dtype)
        if nd == self.data.dtype:
            return self.data
        if self.keep and dtypes.is_float(self.dtype) and self.dtype != dtypes.float32:
            raise NotImplementedError(
                f"NkiTensor.view({dtypes.dtype_name(dtype)}) of {self.describe()}: reinterpreting the bytes of a "
                "low-precision float needs precise storage; this run keeps floats in fp32 "
                "(TORCH_NEURONX_NKI_KEEP_FP32=1 or the legacy simulator). Run with "
                "TORCH_NEURONX_NKI_KEEP_FP32=0.")
        return self.data.view(nd)

    def aux_array(self, kind: str, fill: float = 0.0, dtype: Any = np.float64) -> np.ndarray:
        """Flat side array (``'ready'`` / ``'read_done'`` times in ns), one value per storage element."""
        a = self.aux.get(kind)
        if a is None:
            # np.zeros leaves untouched pages unmapped: a large tile whose side array is written a
            # block at a time costs only the blocks written (np.full would write every element)
            a = self.aux[kind] = (np.zeros(self.data.size, dtype=dtype) if fill == 0
                                  else np.full(self.data.size, fill, dtype=dtype))
        return a

    def marks_array(self, frame_id: int) -> np.ndarray:
        """Flat iteration marks of affine loop ``frame_id``: the iteration + 1 that wrote each element,
        0 = not written in that loop (zeros, so that untouched pages of a large tile stay unmapped)."""
        m = self.marks.get(frame_id)
        if m is None:
            m = self.marks[frame_id] = np.zeros(self.data.size, dtype=np.int32)
        return m

    def describe(self) -> str:
        return f"'{self.name}' {list(self.shape)} {dtypes.dtype_name(self.dtype)} in {self.buffer.name}"


class Access:
    """Where an instruction's operand lives: resolved once per instruction from a view.

    ``strided``: the view's elements are ``flat[offset + sum(i_d * strides[d])]``; otherwise ``idx``
    (flat indices, view-shaped, clipped into range) and ``oob`` (view-shaped bool: out of bounds, or
    None) describe a gather. ``unit`` is the itemsize of the elements ``flat`` is read in.
    """

    __slots__ = ("shape", "strides", "offset", "idx", "oob", "oob_desc", "dtype", "storage", "deps")

    def __init__(self, storage: Storage, dtype: Any, shape: tuple, strides: tuple | None, offset: int,
                 idx: np.ndarray | None = None, oob: np.ndarray | None = None, oob_desc: str = "",
                 deps: tuple = ()):
        self.storage, self.dtype, self.shape = storage, dtype, tuple(shape)
        self.strides, self.offset, self.idx, self.oob, self.oob_desc = strides, offset, idx, oob, oob_desc
        self.deps = deps

    @property
    def strided(self) -> bool:
        return self.idx is None

    def flat_indices(self) -> np.ndarray:
        """Flat element index of every view element (view-shaped int64)."""
        if self.idx is not None:
            return self.idx
        out = np.full(self.shape, self.offset, dtype=np.int64)
        for d, (n, s) in enumerate(zip(self.shape, self.strides or (), strict=False)):
            if n > 1 and s:
                shp = [1] * len(self.shape)
                shp[d] = n
                out = out + (np.arange(n, dtype=np.int64) * s).reshape(shp)
        return out

    def get(self, arr: np.ndarray) -> np.ndarray:
        """The view's elements of flat array ``arr`` (a strided NumPy view, or a gathered copy)."""
        if self.idx is not None:
            return arr[self.idx]
        isz = arr.itemsize
        if not self.shape:
            return arr[self.offset:self.offset + 1].reshape(())
        base = arr[self.offset:]
        custom = base.dtype.kind == "V" or base.dtype.type.__module__.startswith("ml_dtypes")
        if custom:                   # as_strided cannot describe ml_dtypes types: stride their bits
            base = base.view(_UINT[isz])
        v = np.lib.stride_tricks.as_strided(base, shape=self.shape, strides=tuple(s * isz for s in self.strides or ()),
                                            writeable=True)
        return v.view(arr.dtype) if custom else v

    def put(self, arr: np.ndarray, values: np.ndarray, sel: np.ndarray | None = None) -> None:
        """Write ``values`` (view-shaped) into ``arr`` where ``sel`` (bool, view-shaped) is true."""
        if self.idx is not None:
            if sel is None:
                arr[self.idx] = values
            else:
                arr[self.idx[sel]] = values[sel]
            return
        v = self.get(arr)
        if sel is None:
            v[...] = values
        else:
            v[sel] = values[sel]

    def storage_access(self) -> Access:
        """The same elements addressed in units of the *storage* element (for the side arrays of
        timing and loop-conflict tracking, which hold one value per storage element)."""
        st = self.storage
        # units of the storage's *logical* element: a bf16 tensor kept in fp32 (keep-fp32 storage)
        # still has one storage element per bf16 element
        vs, ss = dtypes.np_dtype(self.dtype).itemsize, dtypes.np_dtype(st.dtype).itemsize
        if vs == ss:
            return self
        idx = (self.flat_indices() * vs) // ss
        return Access(st, st.dtype, self.shape, None, 0, np.clip(idx, 0, st.data.size - 1))


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _is_index_tile(k: Any) -> bool:
    return isinstance(k, (NkiTensor, DynamicIndex))


class DynamicIndex:
    """A one-element tile plus an index expression (``offsets[0, i] + iy``): an index whose base is a
    runtime value (read from the tile when an instruction uses the view, as indirect indices are) and
    whose shape is the expression's. Legacy ``tensor_copy_dynamic_src`` / ``dst`` examples index with it.

    Raises:
        err_invalid_instruction_argument: the tile holds more than one element.
    """

    __slots__ = ("tile", "expr")

    def __init__(self, tile: NkiTensor, expr: IndexExpr):
        if tile.size != 1:
            raise err_invalid_instruction_argument(
                f"a dynamic index offset must be a one-element tile, got {tile.describe()} plus an index "
                f"expression of shape {list(expr.shape)}")
        self.tile, self.expr = tile, expr

    @property
    def shape(self) -> tuple[int, ...]:
        return self.expr.shape

    def __add__(self, o: Any) -> DynamicIndex:
        if isinstance(o, (IndexExpr, int, np.integer)):
            return DynamicIndex(self.tile, self.expr + o)
        return NotImplemented

    __radd__ = __add__

    def __repr__(self) -> str:
        return f"DynamicIndex({self.tile.describe()} + IndexExpr{list(self.expr.shape)})"


class _TileOps:
    """Operators shared by every tensor view."""

    __slots__ = ()
    __array_priority__ = 200
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        # current front end: a tensor is a specialization-time Python object whose values are unknown
        # ("Tensor Values", nki/get-started/nki-language-guide.rst), true like any object: nki-library
        # tests optional HBM inputs and SBUF tiles with ``if params.expert_index:``. The legacy front
        # end keeps its errors page's rule for on-chip tiles (values computed by the kernel); an HBM
        # tensor (a kernel parameter) is true there too: AWS's own legacy-API test of
        # nisa.tensor_scalar_cumulative (aws-neuron/aws-neuron-sdk@81ce03a:
        # nki/test/test_nki_isa_tensor_scalar_cumulative.py, `nl.load(imm1[...]) if imm1 else None`)
        # tests an optional parameter that way, newer than the errors page's `if b:` example
        st = getattr(self, "storage", None)
        if st is not None and (getattr(st.sim, "frontend", "legacy") == "current"
                               or st.buffer.kind == "hbm"):
            return True
        raise err_ambiguous_tensor_truth_value(
            "a tile has no truth value: control flow cannot depend on tensor values; use &, |, ~ "
            "element-wise and 'is not None' for None checks")

    def __index__(self) -> int:
        raise err_dynamic_control_flow_not_supported("a tile used as a Python integer (int(), range(), "
                                                     "list index): its value is only known at run time")

    def __int__(self) -> int:
        return self.__index__()

    def __float__(self) -> float:
        raise err_dynamic_control_flow_not_supported("a tile used as a Python float: its value is only "
                                                     "known at run time")

    def __iter__(self) -> Any:
        raise err_dynamic_control_flow_not_supported("iterating over a tile; index it, or loop with "
                                                     "nl.affine_range over its shape")

    def __add__(self, o: Any) -> Any:
        if isinstance(o, IndexExpr):
            return DynamicIndex(self, o)  # type: ignore[arg-type]
        return _operator("add")(self, o)

    def __radd__(self, o: Any) -> Any:
        if isinstance(o, IndexExpr):
            return DynamicIndex(self, o)  # type: ignore[arg-type]
        return _operator("add")(o, self)
    def __sub__(self, o: Any) -> Any: return _operator("subtract")(self, o)
    def __rsub__(self, o: Any) -> Any: return _operator("subtract")(o, self)
    def __mul__(self, o: Any) -> Any: return _operator("multiply")(self, o)
    def __rmul__(self, o: Any) -> Any: return _operator("multiply")(o, self)
    def __truediv__(self, o: Any) -> Any: return _operator("divide")(self, o)
    def __rtruediv__(self, o: Any) -> Any: return _operator("divide")(o, self)
    def __mod__(self, o: Any) -> Any: return _operator("mod")(self, o)
    def __floordiv__(self, o: Any) -> Any: return _operator("floordiv")(self, o)
    def __pow__(self, o: Any) -> Any: return _operator("power")(self, o)
    def __rpow__(self, o: Any) -> Any: return _operator("power")(o, self)
    def __neg__(self) -> Any: return _operator("negative")(self)
    def __abs__(self) -> Any: return _operator("abs")(self)
    def __lt__(self, o: Any) -> Any: return _operator("less")(self, o)
    def __le__(self, o: Any) -> Any: return _operator("less_equal")(self, o)
    def __gt__(self, o: Any) -> Any: return _operator("greater")(self, o)
    def __ge__(self, o: Any) -> Any: return _operator("greater_equal")(self, o)
    def __and__(self, o: Any) -> Any: return _operator("logical_and")(self, o)
    def __or__(self, o: Any) -> Any: return _operator("logical_or")(self, o)
    def __xor__(self, o: Any) -> Any: return _operator("logical_xor")(self, o)
    def __invert__(self) -> Any: return _operator("logical_not")(self)
    def __lshift__(self, o: Any) -> Any: return _operator("left_shift")(self, o)
    def __rshift__(self, o: Any) -> Any: return _operator("right_shift")(self, o)

    def __eq__(self, o: Any) -> Any:
        if isinstance(o, (_TileOps, int, float, np.number)):
            return _operator("equal")(self, o)
        return NotImplemented

    def __ne__(self, o: Any) -> Any:
        if isinstance(o, (_TileOps, int, float, np.number)):
            return _operator("not_equal")(self, o)
        return NotImplemented

    def _inplace(self, o: Any, op: str) -> Any:
        _operator("accumulate")(self, o, op)
        self.accumulated = True  # type: ignore[misc]
        return self

    def __iadd__(self, o: Any) -> Any: return self._inplace(o, "add")
    def __isub__(self, o: Any) -> Any: return self._inplace(o, "subtract")
    def __imul__(self, o: Any) -> Any: return self._inplace(o, "multiply")
    def __itruediv__(self, o: Any) -> Any: return self._inplace(o, "divide")


Resolver = Callable[[], tuple]


class NkiTensor(_TileOps):
    """A view of a :class:`Storage`: ``shape``, ``strides`` and ``offset`` in elements of ``dtype``.

    A tensor made by ``nl.ndarray`` is the full view of its storage. Every subscript and view method
    returns a new NkiTensor sharing the storage (AWS's ``NkiTensor``: "Views share storage").

    Attributes:
        shape, dtype, buffer, ndim, size: as AWS's NkiTensor.
        strides, offset: element strides / offset (None for a gather view).
        name: the storage's name.
        pdim: legacy block dims still in front of the partition dim (0 for a tile).
    """

    __slots__ = ("storage", "shape", "strides", "offset", "dtype", "pdim", "resolver", "indirect_dims",
                 "fresh", "fresh_mask", "accumulated", "loop_op", "_checked", "__weakref__")

    def __init__(self, storage: Storage, shape: Sequence[int], strides: Sequence[int] | None, offset: int,
                 dtype: Any = None, pdim: int = 0, resolver: Resolver | None = None,
                 indirect_dims: tuple = ()):
        self.storage = storage
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides) if strides is not None else None
        self.offset = int(offset)
        self.dtype = storage.dtype if dtype is None else dtype
        self.pdim = pdim
        self.resolver = resolver
        self.indirect_dims = indirect_dims
        self.fresh = False         # an instruction result not yet assigned (see instructions.assign)
        self.fresh_mask = None     # the mask it was computed under
        self.accumulated = False   # set by ``t op= x`` so that the following ``t[...] = t`` is a no-op
        self.loop_op = None        # set on the result of nl.loop_reduce (consumed by an assignment)
        self._checked = False

    # --- basic properties ------------------------------------------------------------------------
    @classmethod
    def full_view(cls, storage: Storage) -> NkiTensor:
        """The view of a whole storage (what ``nl.ndarray`` returns)."""
        return cls(storage, storage.shape, storage.root_strides(), 0, storage.dtype, storage.pdim)

    @property
    def buffer(self) -> Buffer:
        return self.storage.buffer

    @property
    def name(self) -> str:
        return self.storage.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.dtype)

    @property
    def tensor(self) -> NkiTensor:          # legacy spelling used by older callers
        return self

    @property
    def root(self) -> Storage:
        return self.storage

    def __len__(self) -> int:
        if not self.shape:
            raise err_invalid_instruction_argument("len() of a 0-d tensor view")
        return self.shape[0]

    def describe(self) -> str:
        """'name' [storage shape] dtype in buffer, accessed as [view shape] -- for messages."""
        base = self.storage.describe()
        if self.shape == self.storage.shape and self.offset == 0 and self.resolver is None:
            return base
        return f"{base} accessed as {list(self.shape)}"

    def __repr__(self) -> str:
        return f"NkiTensor({self.describe()})"

    @property
    def is_gather(self) -> bool:
        return self.resolver is not None

    def is_indirect(self) -> bool:
        """True when the view uses runtime-resolved (tensor-valued) addressing."""
        return bool(self.indirect_dims)

    def is_contiguous(self) -> bool:
        """True when the view covers its storage densely in row-major order (the partition dim of an
        on-chip view skipped)."""
        if self.strides is None:
            return False
        start = 1 if self.buffer.kind in ON_CHIP else 0
        acc = 1
        for n, s in zip(reversed(self.shape[start:]), reversed(self.strides[start:]), strict=False):
            if n != 1 and s != acc:
                return False
            acc *= n
        return True

    def get_pattern(self) -> list[list[int]]:
        """The view's access pattern ``[[stride, count], ...]`` (the format ``.ap()`` takes).

        Raises:
            err_invalid_instruction_argument: for a gather view (no single pattern describes it).
        """
        if self.strides is None:
            raise err_invalid_instruction_argument(f"get_pattern() of {self.describe()}: a gather / indirect "
                                                   "view has no single access pattern")
        return [[s, n] for s, n in zip(self.strides, self.shape, strict=False)]

    # --- access resolution (instruction time) --------------------------------------------------------
    def access(self) -> Access:
        """Resolve the view into an :class:`Access` (reads index tiles of indirect views now)."""
        if self.resolver is None:
            return Access(self.storage, self.dtype, self.shape, self.strides, self.offset)
        idx, oob, desc, deps = self.resolver()
        return Access(self.storage, self.dtype, self.shape, None, 0, idx, oob, desc, deps)

    def check_partition_layout(self) -> None:
        """For an SBUF/PSUM operand: dim 0 must be the contiguous partition dim.

        Raises:
            err_failed_to_infer_tile_from_local_tensor: legacy block dims not indexed away.
            err_partition_stride_not_supported: partition step != 1, or the partition index varies along
                a free axis.
        """
        st = self.storage
        if st.buffer.kind not in ON_CHIP or self._checked:
            return
        if self.pdim:
            raise err_failed_to_infer_tile_from_local_tensor(
                f"{self.describe()}: block dimensions before the partition dimension must be indexed by an "
                "integer")
        ps = self._partition_stride()
        if self.strides is not None and ps:
            if self.shape and self.shape[0] > 1:
                s0 = self.strides[0]
                if s0 != ps:
                    if s0 % ps == 0 and s0 > 0:
                        raise err_partition_stride_not_supported(
                            f"{self.describe()}: partition step {s0 // ps}")
                    raise err_partition_stride_not_supported(
                        f"{self.describe()}: dimension 0 of the access is not the partition dimension")
            for d in range(1, len(self.shape)):
                if self.shape[d] > 1 and abs(self.strides[d]) >= ps and ps > 1:
                    raise err_partition_stride_not_supported(
                        f"{self.describe()}: the partition index varies along free dimension {d}")
        elif ps:
            acc = self.access()
            part = acc.flat_indices() // ps
            if acc.oob is not None and np.any(acc.oob):
                return          # out-of-bound elements: err_tensor_access_out_of_bound unless masked off
            if part.ndim >= 1 and part.size:
                ref = part.reshape(part.shape[0], -1)
                if ref.shape[1] > 1 and not np.all(ref == ref[:, :1]):
                    raise err_partition_stride_not_supported(
                        f"{self.describe()}: the partition index varies along a free axis (partition must be "
                        "axis 0)")
                col = ref[:, 0]
                if col.size > 1 and not np.all(np.diff(col) == 1):
                    raise err_partition_stride_not_supported(
                        f"{self.describe()}: partition indices are not contiguous")
        self._checked = True

    def _partition_stride(self) -> int:
        """Elements of this view's dtype per partition: a reinterpreting view (``.view(dtype)``,
        ``.ap(dtype=...)``) counts strides and flat indices in its own elements."""
        st = self.storage
        ps = st.pstride
        if ps and self.dtype != st.dtype:
            sz, vz = dtypes.np_dtype(st.dtype).itemsize, dtypes.np_dtype(self.dtype).itemsize
            if (ps * sz) % vz == 0:
                ps = ps * sz // vz
        return ps

    def start_partition(self) -> int:
        """First partition an on-chip view touches."""
        ps = self._partition_stride() or 1
        if self.strides is not None:
            return self.offset // ps
        return int(self.access().flat_indices().reshape(-1)[0]) // ps if self.size else 0

    # --- indexing ------------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> NkiTensor:
        return _index(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _operator("assign")(self[key], value)

    # --- view methods (AWS's current NkiTensor) -----------------------------------------------------
    def _need_strided(self, api: str) -> tuple[int, ...]:
        if self.strides is None:
            raise err_invalid_instruction_argument(f"{api} of {self.describe()}: not supported on a gather / "
                                                   "indirect view")
        return self.strides

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> NkiTensor:
        """``t[..., start:end:step, ...]`` on dimension ``dim``."""
        key = [slice(None)] * self.ndim
        key[dim] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim: int, index: Any) -> NkiTensor:
        """Select one element along ``dim`` (static int, or a ``[1, 1]`` tile / register: dynamic),
        removing the dimension."""
        if is_int(index):
            key: list[Any] = [slice(None)] * self.ndim
            key[dim] = int(index)
            out = self[tuple(key)]
            if out.ndim == self.ndim:        # an on-chip rule kept it at size 1: select removes it
                if out.buffer.kind in ON_CHIP and dim == 0:
                    return out
                return out.squeeze_dim(dim) if out.shape[dim] == 1 and out.ndim > 2 else out
            return out
        return _dynamic_select(self, dim, index)

    def vector_select(self, dim: int, vector_offset: NkiTensor) -> NkiTensor:
        """Per-partition indirect addressing (``dim`` must be 0, HBM only): partition ``p`` reads the
        row ``vector_offset[p, 0]``."""
        if dim != 0:
            raise err_invalid_instruction_argument(f"vector_select(dim={dim}): dim must be 0")
        if self.buffer.kind in ON_CHIP:
            raise err_invalid_instruction_argument("vector_select is only supported on HBM tensors")
        inner = self.shape[1:]
        base = self

        pat = [[int(np.prod(inner, dtype=np.int64)) if inner else 1, vector_offset.shape[0]]]
        pat += [[s, n] for s, n in zip(self._need_strided("vector_select")[1:], inner, strict=False)]
        return _indirect_ap(base, pat, self.offset, None, vector_offset, 0, self.dtype, f"{self.describe()}")

    def permute(self, dims: Sequence[int]) -> NkiTensor:
        """Reorder dimensions (on-chip: ``dims[0]`` must be 0)."""
        dims = tuple(int(d) for d in dims)
        if sorted(dims) != list(range(self.ndim)):
            raise err_invalid_instruction_argument(f"permute({dims}) of a {self.ndim}-d view")
        if self.buffer.kind in ON_CHIP and dims and dims[0] != 0:
            raise err_invalid_instruction_argument(f"permute({dims}) of on-chip {self.describe()}: the "
                                                   "partition dim must stay first")
        if self.strides is None:
            return _gather_transform(self, lambda a: np.transpose(a, dims), tuple(self.shape[d] for d in dims))
        return NkiTensor(self.storage, [self.shape[d] for d in dims], [self.strides[d] for d in dims],
                         self.offset, self.dtype)

    def broadcast(self, dim: int, size: int) -> NkiTensor:
        """Repeat a size-1 dimension ``size`` times (stride 0)."""
        if self.shape[dim] != 1:
            raise err_invalid_instruction_argument(f"broadcast(dim={dim}) of {self.describe()}: dim has size "
                                                   f"{self.shape[dim]}, not 1")
        if self.buffer.kind in ON_CHIP and dim == 0:
            raise err_invalid_instruction_argument("broadcast of the partition dim of an on-chip tensor "
                                                   "(use nl.broadcast_to / a partition-broadcast copy)")
        shape = list(self.shape)
        shape[dim] = int(size)
        if self.strides is None:
            return _gather_transform(self, lambda a: np.broadcast_to(
                np.expand_dims(np.take(a, 0, axis=dim), dim), shape), tuple(shape))
        strides = list(self.strides)
        strides[dim] = 0
        return NkiTensor(self.storage, shape, strides, self.offset, self.dtype)

    def expand_dim(self, dim: int) -> NkiTensor:
        """Insert a size-1 dimension at ``dim``."""
        if self.buffer.kind in ON_CHIP and dim == 0:
            raise err_invalid_instruction_argument("expand_dim(0) of an on-chip tensor")
        shape = list(self.shape)
        shape.insert(dim, 1)
        if self.strides is None:
            return _gather_transform(self, lambda a: np.expand_dims(a, dim), tuple(shape))
        strides = list(self.strides)
        strides.insert(dim, 0)
        return NkiTensor(self.storage, shape, strides, self.offset, self.dtype, self.pdim)

    expand_dims = expand_dim

    def squeeze_dim(self, dim: int) -> NkiTensor:
        """Remove a size-1 dimension."""
        if self.shape[dim] != 1:
            raise err_invalid_instruction_argument(f"squeeze_dim({dim}) of {self.describe()}: size "
                                                   f"{self.shape[dim]}")
        if self.buffer.kind in ON_CHIP and dim == 0:
            raise err_invalid_instruction_argument("squeeze_dim(0) of an on-chip tensor")
        shape = list(self.shape)
        del shape[dim]
        if self.strides is None:
            return _gather_transform(self, lambda a: np.squeeze(a, dim), tuple(shape))
        strides = list(self.strides)
        del strides[dim]
        return NkiTensor(self.storage, shape, strides, self.offset, self.dtype)

    def reshape_dim(self, dim: int, shape: Sequence[int]) -> NkiTensor:
        """Split dimension ``dim`` into ``shape`` (one entry may be -1)."""
        shape = _infer_shape(shape, self.shape[dim])
        new = list(self.shape[:dim]) + list(shape) + list(self.shape[dim + 1:])
        return self.reshape(new)

    def flatten_dims(self, start_dim: int, end_dim: int) -> NkiTensor:
        """Merge dimensions ``start_dim..end_dim`` (inclusive) into one."""
        n = int(np.prod(self.shape[start_dim:end_dim + 1], dtype=np.int64))
        return self.reshape(list(self.shape[:start_dim]) + [n] + list(self.shape[end_dim + 1:]))

    def reshape(self, *args: Any, shape: Any = None) -> NkiTensor:
        """A view of the same elements with a new shape (no copy): ``t.reshape(shape)`` (AWS's
        signature, also ``shape=``) or ``t.reshape(d0, d1, ...)``.

        On-chip tensors keep their partition dim (``shape[0] == t.shape[0]``).

        Raises:
            err_invalid_instruction_argument: element count differs, or the layout cannot be described
                by strides (after a non-contiguous slice or a permute).
        """
        if shape is not None:
            if args:
                raise TypeError("reshape() got the shape both positionally and as shape=")
            args = (shape,)
        if len(args) == 1 and isinstance(args[0], (tuple, list)):
            args = tuple(args[0])
        new = _infer_shape(args, self.size)
        if int(np.prod(new, dtype=np.int64)) != self.size:
            raise err_invalid_instruction_argument(f"reshape {list(self.shape)} -> {list(new)}: element counts "
                                                   "differ")
        on_chip = self.buffer.kind in ON_CHIP
        if on_chip and (not new or new[0] != self.shape[0]) and not self.pdim:
            raise err_invalid_instruction_argument(
                f"reshape of on-chip {self.describe()} to {list(new)}: the partition dim ({self.shape[0]}) "
                "must stay dim 0")
        if self.strides is None:
            return _gather_transform(self, lambda a: a.reshape(new), tuple(new))
        strides = _reshape_strides(self.shape, self.strides, new)
        if strides is None:
            raise err_invalid_instruction_argument(
                f"reshape of {self.describe()} to {list(new)}: the view is not contiguous along the "
                "reshaped dims")
        return NkiTensor(self.storage, new, strides, self.offset, self.dtype)

    def rearrange(self, src_pattern: Sequence, dst_pattern: Sequence,
                  fixed_sizes: Mapping[str, int] | None = None) -> NkiTensor:
        """einops-style rearrangement: split grouped source dims, reorder, merge grouped target dims."""
        sizes = dict(fixed_sizes or {})
        if len(src_pattern) != self.ndim:
            raise err_invalid_instruction_argument(f"rearrange: pattern {src_pattern} for a {self.ndim}-d view")
        split: list[int] = []
        names: list[str] = []
        for d, item in enumerate(src_pattern):
            group = list(item) if isinstance(item, (tuple, list)) else [item]
            known = [sizes.get(g) for g in group]
            missing = [i for i, k in enumerate(known) if k is None]
            if len(missing) > 1:
                raise err_invalid_instruction_argument(f"rearrange: sizes of {group} cannot be inferred")
            if missing:
                rest = int(np.prod([k for k in known if k is not None], dtype=np.int64))
                sizes[group[missing[0]]] = self.shape[d] // rest
            for g in group:
                split.append(sizes[g])
                names.append(g)
        t = self.reshape(split) if tuple(split) != self.shape else self
        flat_dst: list[str] = []
        groups: list[int] = []
        for item in dst_pattern:
            group = list(item) if isinstance(item, (tuple, list)) else [item]
            flat_dst += group
            groups.append(len(group))
        t = t.permute([names.index(n) for n in flat_dst])
        out_shape = []
        pos = 0
        for g in groups:
            out_shape.append(int(np.prod(t.shape[pos:pos + g], dtype=np.int64)))
            pos += g
        return t.reshape(out_shape) if tuple(out_shape) != t.shape else t

    def ap(self, pattern: Sequence[Sequence[int]], offset: int | None = None, scalar_offset: Any = None,
           vector_offset: Any = None, indirect_dim: int = 0, dtype: Any = None) -> NkiTensor:
        """A view with an explicit access pattern ``[[stride, count], ...]`` over the *storage*
        (not composable: the pattern ignores this view's own shape and strides; ``offset`` None keeps
        this view's offset). ``dtype`` reinterprets the storage; ``scalar_offset`` / ``vector_offset``
        add a runtime offset on ``indirect_dim`` (AWS's "NKI Access Patterns" deep dive).

        Raises:
            err_invalid_instruction_argument: an entry of ``pattern`` is not a ``[step, num]`` pair, or a
                num is negative.
            err_partition_stride_not_supported: on SBUF/PSUM, the first stride is not the storage's free
                element count.
            err_tensor_access_out_of_bound: the pattern leaves the storage.
        """
        pat = pattern_pairs(pattern, f"{self.describe()}.ap")
        dt = self.dtype if dtype is None else dtypes.as_dtype(dtype)
        st = self.storage
        old_isz, new_isz = dtypes.np_dtype(self.dtype).itemsize, dtypes.np_dtype(dt).itemsize
        base_off = self.offset * old_isz // new_isz if self.strides is not None else 0
        if offset is not None:
            base_off += int(offset)
        if st.buffer.kind in ON_CHIP and pat and pat[0][1] > 1 and scalar_offset is None and vector_offset is None:
            ratio = dtypes.np_dtype(st.dtype).itemsize / dtypes.np_dtype(dt).itemsize \
                if not dtypes.is_packed(st.dtype) else 1
            expect = int(st.pstride * ratio)
            if pat[0][0] != expect:
                raise err_partition_stride_not_supported(
                    f".ap({pat}) of {st.describe()}: the partition stride (first pair) must be the storage's free "
                    f"element count {expect}")
        if scalar_offset is not None or vector_offset is not None:
            if scalar_offset is not None and vector_offset is not None:
                raise err_invalid_instruction_argument(".ap(): scalar_offset and vector_offset are exclusive")
            return _indirect_ap(self, pat, base_off, scalar_offset, vector_offset, indirect_dim, dt,
                                self.describe())
        v = NkiTensor(st, [n for _, n in pat], [s for s, _ in pat], base_off, dt)
        _defer_flat_bounds(v, f".ap({pat}, offset={base_off}) of {st.describe()}")
        return v

    def view(self, dtype: Any) -> NkiTensor:
        """Reinterpret the bytes as ``dtype``; the last dim scales by the itemsize ratio."""
        dt = dtypes.as_dtype(dtype)
        st = self._need_strided("view(dtype)")
        old, new = dtypes.np_dtype(self.dtype).itemsize, dtypes.np_dtype(dt).itemsize
        if old == new:
            return NkiTensor(self.storage, self.shape, st, self.offset, dt, self.pdim)
        if not self.shape or (self.shape[-1] > 1 and st[-1] != 1):
            raise err_invalid_instruction_argument(f"view({dtypes.dtype_name(dt)}) of {self.describe()}: "
                                                   "the last dimension must be contiguous")
        byte_off = self.offset * old
        if (self.shape[-1] * old) % new or byte_off % new or any((s * old) % new for s in st[:-1]):
            raise err_invalid_instruction_argument(
                f"view({dtypes.dtype_name(dt)}) of {self.describe()}: the last dim size is not divisible by "
                "the itemsize ratio")
        shape = list(self.shape)
        shape[-1] = self.shape[-1] * old // new
        strides = [s * old // new for s in st[:-1]] + [1]
        self.storage.flat(dt)      # raises for fp32-kept low-precision storage
        return NkiTensor(self.storage, shape, strides, byte_off // new, dt, self.pdim)

    reinterpret_cast = view

    def indirect(self, index: NkiTensor, num_elem: int | None = None) -> NkiTensor:
        """Tensor indirection (NeuronCore-v4): a ``(P, num_elem)`` view whose column ``i`` is the
        element at free offset ``index[i % 16, i // 16]`` of each partition (AWS's snake layout)."""
        p = self.shape[0]
        n = index.size if num_elem is None else int(num_elem)
        base = self

        def resolve() -> tuple:
            from .context import current
            vals = current().read_index_values(index)
            g = 16
            flat = vals.reshape(vals.shape[0], -1)
            offs = np.array([flat[i % g, i // g] for i in range(n)], dtype=np.int64)
            acc = base.access()
            fi = acc.flat_indices().reshape(p, -1)
            ok = (offs >= 0) & (offs < fi.shape[1])
            idx = fi[:, np.clip(offs, 0, fi.shape[1] - 1)]
            oob = np.broadcast_to(~ok[None, :], idx.shape) if not ok.all() else None
            return idx, oob, f"indirect offsets of {base.describe()}", (index,)
        return NkiTensor(self.storage, (p, n), None, 0, self.dtype, resolver=resolve, indirect_dims=(1,))

    # --- legacy tensor API --------------------------------------------------------------------------
    def assert_shape(self, shape: Sequence[int]) -> NkiTensor:
        """Legacy ``tensor.assert_shape``: return self when its shape is ``shape``.

        Raises:
            err_invalid_instruction_argument: otherwise.
        """
        if tuple(shape) != self.shape:
            raise err_invalid_instruction_argument(f"assert_shape({list(shape)}) of {self.describe()}")
        return self

    def astype(self, dtype: Any) -> NkiTensor:
        """Legacy ``tensor.astype``: a copy converted to ``dtype`` (a new SBUF tile; HBM: a copy in HBM)."""
        return _operator("broadcast_to")(self, self.shape, dtype)

    def broadcast_to(self, shape: Sequence[int]) -> NkiTensor:
        """Legacy ``tensor.broadcast_to``: a new tile of ``shape`` (partition broadcast by copy)."""
        return _operator("broadcast_to")(self, tuple(shape), None)

    @property
    def T(self) -> NkiTensor:                 # noqa: N802 (NumPy's name)
        return self.permute(tuple(reversed(range(self.ndim))))


def is_tile(x: Any) -> bool:
    """True for :class:`NkiTensor` views."""
    return isinstance(x, NkiTensor)


def broadcast_shape(*xs: Any) -> tuple[int, ...]:
    """Shape of an element-wise result of the tiles among ``xs`` (non-tiles ignored): shapes are
    aligned from the partition axis (missing trailing free dims count as 1) and broadcast.

    Raises:
        err_invalid_instruction_argument: when the shapes do not broadcast.
    """
    shapes = [x.shape for x in xs if is_tile(x)]
    n = max(len(s) for s in shapes)
    padded = [tuple(s) + (1,) * (n - len(s)) for s in shapes]
    try:
        return tuple(int(v) for v in np.broadcast_shapes(*padded))
    except ValueError:
        raise err_invalid_instruction_argument(
            f"tile shapes {[list(s) for s in shapes]} do not broadcast") from None


# ----------------------------------------------------------------------------------------------------
# indexing
# ----------------------------------------------------------------------------------------------------
def _infer_shape(shape: Sequence[Any], total: int) -> tuple[int, ...]:
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise err_invalid_instruction_argument(f"reshape {shape}: at most one -1")
    if -1 in shape:
        rest = int(np.prod([s for s in shape if s != -1], dtype=np.int64)) or 1
        shape[shape.index(-1)] = total // rest
    return tuple(shape)


def _reshape_strides(shape: tuple, strides: tuple, new: tuple) -> tuple | None:
    """Strides of ``new`` over the same elements as (shape, strides), or None when impossible
    (NumPy's attempt_nocopy_reshape algorithm)."""
    old = [(n, s) for n, s in zip(shape, strides, strict=False) if n != 1]
    newdims = list(new)
    if not old:
        return tuple(0 for _ in newdims) if not newdims else tuple(row_major_strides(newdims))
    ostr = [s for _, s in old]
    odim = [n for n, _ in old]
    nstr = [0] * len(newdims)
    oi = oj = ni = nj = 0
    ond, nnd = len(odim), len(newdims)
    while ni < nnd and oi < ond:
        np_ = newdims[ni]
        op = odim[oi]
        while np_ != op:
            if np_ < op:
                nj += 1
                if nj >= nnd:
                    return None
                np_ *= newdims[nj]
            else:
                oj += 1
                if oj >= ond:
                    return None
                op *= odim[oj]
        for ok in range(oi, oj):
            if ostr[ok] != odim[ok + 1] * ostr[ok + 1]:
                return None
        nstr[nj] = ostr[oj]
        for nk in range(nj - 1, ni - 1, -1):
            nstr[nk] = nstr[nk + 1] * newdims[nk + 1]
        ni = nj = nj + 1
        oi = oj = oj + 1
    last = nstr[ni - 1] if ni >= 1 else 1
    for nk in range(ni, nnd):
        nstr[nk] = last
    return tuple(nstr)


def _normalize(key: Any, ndim: int) -> tuple[list, int]:
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        fill = ndim - (len(key) - 1)
        key = key[:i] + (slice(None),) * max(fill, 0) + key[i + 1:]
    explicit = len(key)
    if len(key) > ndim:
        raise err_invalid_instruction_argument(f"too many indices ({len(key)}) for a {ndim}-d tensor")
    return list(key) + [slice(None)] * (ndim - len(key)), explicit


def _slice_range(k: slice, n: int) -> tuple[int, int, int]:
    step = 1 if k.step is None else as_int(k.step, f"slice {k!r} step")
    if step == 0:
        raise err_invalid_instruction_argument("slice step 0")
    if step > 0:
        start = 0 if k.start is None else as_int(k.start, f"slice {k!r} start")
        stop = n if k.stop is None else as_int(k.stop, f"slice {k!r} stop")
        if start < 0:
            start += n
        if stop < 0:
            stop += n
        length = max(0, (stop - start + step - 1) // step)
    else:
        start = n - 1 if k.start is None else as_int(k.start, f"slice {k!r} start")
        stop = -1 if k.stop is None else as_int(k.stop, f"slice {k!r} stop")
        if k.start is not None and start < 0:
            start += n
        if k.stop is not None and stop < 0:
            stop += n
        length = max(0, (start - stop - step - 1) // (-step))
    return start, step, length


def _index(t: NkiTensor, key: Any) -> NkiTensor:
    comps, explicit = _normalize(key, t.ndim)
    arrays = [c for c in comps if isinstance(c, (IndexExpr, np.ndarray)) or _is_index_tile(c)]
    has_slice = any(isinstance(c, slice) for i, c in enumerate(comps) if i < explicit)
    dynamic = any(isinstance(c, DynamicSlice) for c in comps)
    for d, c in enumerate(comps):
        if isinstance(c, IndexExpr) and c.ndim == 1 and t.ndim > 1:
            raise err_1d_arange_not_supported(f"dimension {d} indexed with a 1-D arange of shape {list(c.shape)}")
    if arrays:
        if has_slice and not any(_is_index_tile(c) for c in arrays):
            raise err_unsupported_mixing_basic_advanced_tensor_indexing(
                f"subscript {tuple(comps[:explicit])!r} on {t.describe()}")
        return _advanced(t, comps)
    if dynamic:
        return _dynamic(t, comps)
    return _basic(t, comps)


def _basic(t: NkiTensor, comps: list) -> NkiTensor:
    """ints and slices -> a strided view (or a gather view with OOB marks)."""
    on_chip = t.buffer.kind in ON_CHIP
    shape: list[int] = []
    strides: list[int] = []
    offset = t.offset
    oob_dims: list[tuple[int, int, int, int]] = []
    ranges: list[tuple[int, int, int]] = []      # per output dim: (src dim, start, step)
    pdim = t.pdim
    new_pdim = 0
    int_dims: list[int] = []
    tstrides = t.strides
    for d, (c, n) in enumerate(zip(comps, t.shape, strict=False)):
        s = tstrides[d] if tstrides is not None else 0
        if is_int(c):
            i = int(c)
            if i < 0:
                i += n
            if not 0 <= i < n:
                oob_dims.append((d, i, i, n))
            if on_chip and d == pdim:
                shape.append(1)
                strides.append(s)
                ranges.append((d, i, 1))
                offset += i * s
                continue
            offset += i * s
            int_dims.append(d)
            continue
        if not isinstance(c, slice):
            raise err_invalid_instruction_argument(
                f"index {c!r} (dimension {d}) of {t.describe()}: an index is an integer, a slice, nl.ds, an "
                "nl.arange / nl.mgrid expression or an index tile")
        start, step, length = _slice_range(c, n)
        if length:
            last = start + (length - 1) * step
            lo, hi = min(start, last), max(start, last)
            if lo < 0 or hi >= n:
                oob_dims.append((d, lo, hi, n))
        if d < pdim:
            new_pdim += 1
        shape.append(length)
        strides.append(s * step)
        ranges.append((d, start, step))
        offset += start * s
    if on_chip and len(shape) < 2 and int_dims and t.shape:
        # keep the last integer-indexed free dim at size 1 (on-chip views stay >= 2-D)
        keep = max(x for x in int_dims if x > pdim) if any(x > pdim for x in int_dims) else None
        if keep is not None:
            s = tstrides[keep] if tstrides is not None else 0
            shape.append(1)
            strides.append(s)
            ranges.append((d, 0, 1))
    if t.strides is None:
        return _gather_basic(t, comps, shape, new_pdim)
    if oob_dims:
        return _gather_basic(t, comps, shape, new_pdim)
    return NkiTensor(t.storage, shape, strides, offset, t.dtype, new_pdim)


def _comp_arrays(t: NkiTensor, comps: list, out_shape: list[int]) -> tuple[list[np.ndarray], list[tuple]]:
    """Per source dim: index array broadcastable to ``out_shape`` (for basic comps on a gather base)."""
    arrays = []
    oob = []
    pos = 0
    on_chip = t.buffer.kind in ON_CHIP
    nd = len(out_shape)
    for d, (c, n) in enumerate(zip(comps, t.shape, strict=False)):
        if is_int(c):
            i = int(c) + (n if int(c) < 0 else 0)
            a = np.full((1,) * nd, i, dtype=np.int64)
            if on_chip and d == t.pdim:
                pos += 1
            arrays.append(a)
            continue
        start, step, length = _slice_range(c, n)
        vals = start + step * np.arange(length, dtype=np.int64)
        shp = [1] * nd
        if pos < nd:
            shp[pos] = length
        arrays.append(vals.reshape(shp))
        pos += 1
    for d, (a, n) in enumerate(zip(arrays, t.shape, strict=False)):
        if a.size and (a.min() < 0 or a.max() >= n):
            oob.append((d, int(a.min()), int(a.max()), n))
    return arrays, oob


def _gather_basic(t: NkiTensor, comps: list, shape: list[int], pdim: int) -> NkiTensor:
    arrays, _ = _comp_arrays(t, comps, shape)
    return _gather_from_arrays(t, arrays, tuple(shape), pdim)


def _gather_from_arrays(t: NkiTensor, arrays: list[np.ndarray], shape: tuple, pdim: int = 0,
                        dyn: tuple = ()) -> NkiTensor:
    """A gather view: element ``e`` of the result is ``t[arrays[0][e], arrays[1][e], ...]``."""
    base = t
    tshape = t.shape
    desc = t.describe()

    def resolve() -> tuple:
        acc = base.access()
        fi = acc.flat_indices()
        comps = []
        bad = np.zeros(shape, dtype=bool)
        first = None
        for d, a in enumerate(arrays):
            a = np.broadcast_to(a, shape) if a.shape != shape else a
            n = tshape[d]
            out = (a < 0) | (a >= n)
            if out.any():
                bad |= out
                if first is None:
                    first = (d, int(a.min()), int(a.max()), n)
            comps.append(np.clip(a, 0, max(n - 1, 0)))
        idx = fi[tuple(comps)] if fi.ndim else np.broadcast_to(fi, shape).copy()
        obad = np.broadcast_to(acc.oob[tuple(comps)], shape) if acc.oob is not None else None
        oob = bad | obad if obad is not None else (bad if first is not None else None)
        msg = (f"tensor {desc}: dimension {first[0]} index range [{first[1]}, {first[2]}] exceeds size "
               f"{first[3]}") if first is not None else acc.oob_desc
        return idx, oob, msg, tuple(acc.deps) + dyn
    return NkiTensor(t.storage, shape, None, 0, t.dtype, pdim, resolver=resolve,
                     indirect_dims=t.indirect_dims + ((0,) if dyn else ()))


def _affine(arr: np.ndarray, shape: tuple) -> tuple[int, list[int]] | None:
    """(value at origin, per-dim step) when ``arr`` (broadcastable to ``shape``) is affine in the
    coordinates of ``shape``; None otherwise."""
    a = np.broadcast_to(arr, shape)
    if not shape:
        return int(a), []
    c0 = int(a[(0,) * len(shape)])
    steps = []
    pred = np.int64(c0)
    for d, n in enumerate(shape):
        if n > 1:
            e = [0] * len(shape)
            e[d] = 1
            step = int(a[tuple(e)]) - c0
        else:
            step = 0
        steps.append(step)
    pred = np.full((1,) * len(shape), c0, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, steps, strict=False)):
        if s:
            shp = [1] * len(shape)
            shp[d] = n
            pred = pred + (np.arange(n, dtype=np.int64) * s).reshape(shp)
    if not np.array_equal(np.broadcast_to(pred, shape), a):
        return None
    return c0, steps


def _advanced(t: NkiTensor, comps: list) -> NkiTensor:
    """arange / int-array / tile indices (legacy advanced indexing)."""
    dyn_tiles = [c for c in comps if _is_index_tile(c)]
    if dyn_tiles:
        return _dynamic_advanced(t, comps)
    arrs: list[Any] = []
    for c in comps:
        if isinstance(c, IndexExpr):
            arrs.append(c.values)
        elif isinstance(c, np.ndarray):
            arrs.append(c.astype(np.int64))
        elif is_int(c):
            arrs.append(np.asarray(int(c), dtype=np.int64))
        else:   # a full slice on an implicit trailing dim: legacy keeps it, broadcasting
            start, step, length = _slice_range(c, t.shape[len(arrs)])
            arrs.append(None)
    nd = max((a.ndim for a in arrs if a is not None), default=0)
    padded = [a.reshape(a.shape + (1,) * (nd - a.ndim)) if a is not None and a.ndim < nd and a.ndim > 0
              else a for a in arrs]
    try:
        shape = tuple(int(v) for v in np.broadcast_shapes(*[a.shape for a in padded if a is not None]))
    except ValueError:
        raise err_invalid_instruction_argument(
            f"index expressions of shapes {[list(a.shape) for a in padded if a is not None]} do not "
            "broadcast") from None
    if any(a is None for a in padded):     # implicit trailing dims: append them as trailing view dims
        extra = [i for i, a in enumerate(padded) if a is None]
        shape = shape + tuple(t.shape[i] for i in extra)
        nn = len(shape)
        for k, i in enumerate(extra):
            shp = [1] * nn
            shp[nn - len(extra) + k] = t.shape[i]
            padded[i] = np.arange(t.shape[i], dtype=np.int64).reshape(shp)
        padded = [a.reshape(a.shape + (1,) * (nn - a.ndim)) if a.ndim < nn else a for a in padded]
    oob = any(a.size and (a.min() < 0 or a.max() >= n) for a, n in zip(padded, t.shape, strict=False))
    if t.strides is not None and not oob:
        offset = t.offset
        strides = [0] * len(shape)
        ok = True
        for a, s in zip(padded, t.strides, strict=False):
            af = _affine(a, shape)
            if af is None:
                ok = False
                break
            c0, steps = af
            offset += c0 * s
            for d, st in enumerate(steps):
                strides[d] += st * s
        if ok:
            return NkiTensor(t.storage, shape, strides, offset, t.dtype)
    return _gather_from_arrays(t, padded, shape)


def _index_values(tile: NkiTensor) -> np.ndarray:
    from .context import current
    return current().read_index_values(tile)


def _dynamic_advanced(t: NkiTensor, comps: list) -> NkiTensor:
    """Legacy indirect indexing: some components are tiles whose values are the indices (read when an
    instruction uses the view). Only the partition / block dims may be indexed by a tile
    (``err_indirect_indices_free_dim``)."""
    tiles = [(d, c) for d, c in enumerate(comps) if _is_index_tile(c)]
    for d, c in tiles:
        if isinstance(c, NkiTensor) and any(n != 1 for n in c.shape[1:]):
            raise err_indirect_indices_free_dim(
                f"dimension {d} of {t.describe()} indexed by tile {c.describe()}: a tile index must vary along "
                "the partition axis only (shape (P, 1))")
    static = []
    for d, c in enumerate(comps):
        if isinstance(c, DynamicIndex):
            static.append(c.expr.values)
        elif _is_index_tile(c):
            static.append(np.zeros(c.shape, dtype=np.int64))
        elif isinstance(c, IndexExpr):
            static.append(c.values)
        elif is_int(c):
            static.append(np.asarray(int(c), dtype=np.int64))
        elif isinstance(c, slice):
            start, step, length = _slice_range(c, t.shape[d])
            vals = start + step * np.arange(length, dtype=np.int64)
            static.append(vals.reshape((1,) * d + (length,)) if d else vals.reshape(length, 1))
        else:
            static.append(np.asarray(c, dtype=np.int64))
    nd = max(a.ndim for a in static)
    static = [a.reshape(a.shape + (1,) * (nd - a.ndim)) if 0 < a.ndim < nd else a for a in static]
    shape = tuple(int(v) for v in np.broadcast_shapes(*[a.shape for a in static]))
    base = t
    tiles_d = dict(tiles)

    def arrays() -> list[np.ndarray]:
        out = []
        for d, a in enumerate(static):
            c = tiles_d.get(d)
            if isinstance(c, DynamicIndex):
                out.append(a + int(_index_values(c.tile).reshape(-1)[0]))
            elif c is not None:
                v = _index_values(c).astype(np.int64)
                out.append(v.reshape(v.shape + (1,) * (nd - v.ndim)) if 0 < v.ndim < nd else v)
            else:
                out.append(a)
        return out

    def resolve() -> tuple:
        g = _gather_from_arrays(base, arrays(), shape, 0,
                                tuple(c.tile if isinstance(c, DynamicIndex) else c for _, c in tiles))
        assert g.resolver is not None
        return g.resolver()
    return NkiTensor(t.storage, shape, None, 0, t.dtype, 0, resolver=resolve, indirect_dims=(0,))


def _dynamic(t: NkiTensor, comps: list) -> NkiTensor:
    """Subscripts with ``nl.ds(runtime_start, size)``: resolved to slices at instruction time."""
    base = t
    dyn = [(d, c) for d, c in enumerate(comps) if isinstance(c, DynamicSlice)]
    shape_probe = [slice(0, c.size) if isinstance(c, DynamicSlice) else c for c in comps]
    shape = _basic(t, shape_probe).shape

    def resolve() -> tuple:
        key = list(comps)
        for d, c in dyn:
            s = int(_scalar_value(c.start))
            key[d] = slice(s, s + c.size)
        v = _index(base, tuple(key))
        acc = v.access()
        return acc.flat_indices(), acc.oob, acc.oob_desc, tuple(c.start for _, c in dyn if is_tile(c))
    return NkiTensor(t.storage, shape, None, 0, t.dtype, resolver=resolve, indirect_dims=tuple(d for d, _ in dyn))


def _scalar_value(x: Any) -> int:
    if is_tile(x):
        v = _index_values(x)
        return int(np.asarray(v).reshape(-1)[0])
    reg = getattr(x, "value", None)
    if reg is not None:
        return int(reg)
    return int(x)


def _dynamic_select(t: NkiTensor, dim: int, index: Any) -> NkiTensor:
    if t.buffer.kind in ON_CHIP and dim == 0:
        raise err_invalid_instruction_argument("dynamic select on the partition dim of an on-chip tensor")
    key: list[Any] = [slice(None)] * t.ndim
    key[dim] = 0
    probe = _basic(t, key)
    shape = probe.shape
    base = t

    def resolve() -> tuple:
        k = list(key)
        k[dim] = _scalar_value(index)
        v = _basic(base, k)
        acc = v.access()
        return acc.flat_indices(), acc.oob, acc.oob_desc, ((index,) if is_tile(index) else ())
    return NkiTensor(t.storage, shape, None, 0, t.dtype, resolver=resolve, indirect_dims=(dim,))


def _gather_transform(t: NkiTensor, fn: Callable[[np.ndarray], np.ndarray], shape: tuple) -> NkiTensor:
    """A view of a gather view: ``fn`` maps its index (and OOB) arrays."""
    base = t

    def resolve() -> tuple:
        acc = base.access()
        idx = np.ascontiguousarray(fn(acc.flat_indices()))
        oob = np.ascontiguousarray(fn(acc.oob)) if acc.oob is not None else None
        return idx, oob, acc.oob_desc, acc.deps
    return NkiTensor(t.storage, shape, None, 0, t.dtype, resolver=resolve, indirect_dims=t.indirect_dims)


def _defer_flat_bounds(v: NkiTensor, what: str) -> None:
    """An access pattern reaching outside its storage is legal to *create* (AWS's kernels build one
    before the guard that skips it: nki-library's output projection); it becomes a gather whose
    out-of-bound elements raise ``err_tensor_access_out_of_bound`` when an instruction accesses them
    unmasked (never a read outside the storage)."""
    if v.strides is None or not v.size:
        return
    lo = v.offset + sum(min(0, (n - 1) * s) for n, s in zip(v.shape, v.strides, strict=False))
    hi = v.offset + sum(max(0, (n - 1) * s) for n, s in zip(v.shape, v.strides, strict=False))
    size = v.storage.flat(v.dtype).size
    if lo >= 0 and hi < size:
        return
    acc = Access(v.storage, v.dtype, v.shape, v.strides, v.offset)
    fi = acc.flat_indices()
    oob = (fi < 0) | (fi >= size)
    idx = np.clip(fi, 0, size - 1)
    desc = f"{what}: elements [{lo}, {hi}] of a storage of {size}"
    v.strides, v.offset = None, 0
    v.resolver = lambda: (idx, oob, desc, ())


def _indirect_ap(t: NkiTensor, pat: list, offset: int, scalar_offset: Any, vector_offset: Any,
                 indirect_dim: int, dt: Any, desc: str) -> NkiTensor:
    """``.ap(..., scalar_offset= | vector_offset=, indirect_dim=)``: the runtime offset times the
    element count to the right of ``indirect_dim`` in the *base* tensor is added (AWS's access
    pattern deep dive); with ``vector_offset`` partition ``w`` uses ``vector_offset[w]``."""
    # the tensor .ap is called on (a reshaped view of a 1-D storage counts with its own dims)
    base_shape = tuple(t.shape) if len(t.shape) > indirect_dim else t.storage.shape
    if not 0 <= indirect_dim < max(len(base_shape), 1):
        raise err_invalid_instruction_argument(
            f"{desc}: indirect_dim={indirect_dim} is not a dimension of a {len(base_shape)}-D tensor")
    unit = int(np.prod(base_shape[indirect_dim + 1:], dtype=np.int64)) if len(base_shape) > indirect_dim + 1 else 1
    st = t.storage
    shape = tuple(n for _, n in pat)
    size = st.flat(dt).size
    rows = base_shape[indirect_dim] if base_shape else 1

    def resolve() -> tuple:
        static = np.full(shape, offset, dtype=np.int64)
        for d, (s, n) in enumerate(pat):
            if vector_offset is not None and d == 0:
                continue
            shp = [1] * len(shape)
            shp[d] = n
            static = static + (np.arange(n, dtype=np.int64) * s).reshape(shp)
        if vector_offset is not None:
            vals = _index_values(vector_offset).astype(np.int64).reshape(vector_offset.shape[0], -1)[:, 0]
            if vals.shape[0] < shape[0]:
                raise err_invalid_instruction_argument(
                    f"vector_offset {vector_offset.describe()} has fewer rows than the pattern's {shape[0]}")
            dynv = vals[:shape[0]].reshape((shape[0],) + (1,) * (len(shape) - 1))
            deps: tuple = (vector_offset,)
        else:
            dynv = np.int64(_scalar_value(scalar_offset))
            deps = (scalar_offset,) if is_tile(scalar_offset) else ()
        flat = static + dynv * unit
        bad_rows = (np.asarray(dynv) < 0) | (np.asarray(dynv) >= rows)
        bad = (flat < 0) | (flat >= size) | np.broadcast_to(bad_rows, shape)
        oob = bad if bad.any() else None
        return np.clip(flat, 0, size - 1), oob, f"indirect access of {desc}: offsets out of bounds", deps
    return NkiTensor(st, shape, None, 0, dt, resolver=resolve, indirect_dims=(indirect_dim,))


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive ints."""
    return -(-a // b)

