"""``nki.typing`` (legacy ``neuronxcc.nki.typing``; also served as the current front end's
``nki.typing``): annotations of kernel parameters and variables.

* ``nt.tensor`` marks an ordinary (read-only) kernel input; ``nt.tensor[128, 512]`` (a shape) and
  ``nt.tensor[nl.float32, (128, 512)]`` are accepted as annotations.
* ``nt.mutable_tensor`` marks an input the kernel may write in place (AWS's errors page,
  ``err_cannot_update_immutable_parameter``: "kernel inputs are immutable unless annotated
  nt.mutable_tensor"). The simulator creates a mutable input as a writable HBM tensor and, after the
  kernel returns, writes its final values back into the caller's array.
* ``nt.scalar`` marks a scalar parameter; ``nt.mutable`` is ``mutable_tensor``'s generic alias.
* ``nt.tensor[[8192, 4096], nl.bfloat16]`` passed as a kernel *argument* is a placeholder (AWS's
  matmul tutorial benchmarks with them): ``nki.benchmark`` and ``nki.profile``, whose device runs do
  not use the inputs' values, run the kernel on zeros of that shape and dtype (:func:`placeholder_spec`);
  every other entry point computes values and refuses a placeholder with a ``TypeError``.

Python does not evaluate annotations of local variables (``c: tensor[128, 512] = ...``), so their
shapes are not checked (AWS's ``err_annotation_shape_mismatch`` is a rule of its parser).
"""
from __future__ import annotations

from typing import Any

__all__ = ["tensor", "mutable_tensor", "scalar", "mutable", "is_mutable_annotation", "placeholder_spec"]


class _Annotated:
    """``tensor[...]``: the annotation with its subscript kept (``.args``)."""

    def __init__(self, base: type, args: Any):
        self.base = base
        self.args = args

    def __repr__(self) -> str:
        return f"{self.base.__name__}[{self.args!r}]"


class tensor:
    """Annotation: a kernel input tensor in HBM (read-only). Subscriptable: ``tensor[128, 512]``."""

    def __class_getitem__(cls, item: Any) -> _Annotated:
        return _Annotated(cls, item)


class mutable_tensor(tensor):
    """Annotation: a kernel input tensor in HBM that the kernel may write in place."""


class scalar:
    """Annotation: a scalar (Python number) kernel parameter."""

    def __class_getitem__(cls, item: Any) -> _Annotated:
        return _Annotated(cls, item)


mutable = mutable_tensor


def is_mutable_annotation(annotation: Any) -> bool:
    """True for ``nt.mutable_tensor`` (the class, ``mutable_tensor[...]``, or a string annotation
    naming it, as with ``from __future__ import annotations``)."""
    if isinstance(annotation, str):
        head = annotation.split("[", 1)[0]
        return head.rsplit(".", 1)[-1] in ("mutable_tensor", "mutable")
    if isinstance(annotation, _Annotated):
        annotation = annotation.base
    return isinstance(annotation, type) and issubclass(annotation, mutable_tensor)


def placeholder_spec(a: Any) -> tuple[tuple[int, ...], Any] | None:
    """(shape, dtype) of a ``tensor[shape, dtype]`` placeholder argument (``nt.tensor[[8192, 4096],
    nl.bfloat16]`` or ``nt.tensor[nl.bfloat16, (8192, 4096)]``); None when ``a`` is not a placeholder.

    Raises:
        TypeError: a placeholder without both a shape and a dtype.
    """
    if not isinstance(a, _Annotated) or not (isinstance(a.base, type) and issubclass(a.base, tensor)):
        return None
    args = a.args if isinstance(a.args, tuple) else (a.args,)
    shape = next((x for x in args if isinstance(x, (list, tuple))), None)
    dts = [x for x in args if not isinstance(x, (list, tuple))]
    if shape is None or len(dts) != 1:
        raise TypeError(f"kernel argument {a!r}: a tensor placeholder needs a shape and a dtype, e.g. "
                        "nt.tensor[[128, 512], nl.bfloat16]")
    return tuple(int(n) for n in shape), dts[0]
