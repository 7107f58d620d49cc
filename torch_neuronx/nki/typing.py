"""``nki.typing`` (legacy ``neuronxcc.nki.typing``): parameter annotations of kernel arguments.

``nt.tensor`` marks an ordinary (read-only) input; ``nt.mutable_tensor`` marks an input the kernel may
write in place (AWS: "kernel inputs are immutable unless annotated ``nt.mutable_tensor``", used for
``nki_op(..., mutates_args=...)`` such as KV-cache updates). The simulator creates a mutable input as a
writable HBM tensor and, after the kernel returns, writes its final values back into the caller's
array (NumPy in, so a zero-copy view of a ``neuron`` tensor is updated in place). Returning a mutable
input from the kernel returns the caller's own array object.
"""
from __future__ import annotations

__all__ = ["tensor", "mutable_tensor", "is_mutable_annotation"]


class tensor:
    """Annotation: a kernel input tensor in HBM (read-only)."""


class mutable_tensor(tensor):
    """Annotation: a kernel input tensor in HBM that the kernel may write in place."""


def is_mutable_annotation(annotation) -> bool:
    """True for ``nt.mutable_tensor`` (the class, or a string annotation naming it, as with
    ``from __future__ import annotations``)."""
    if isinstance(annotation, str):
        return annotation.rsplit(".", 1)[-1] == "mutable_tensor"
    return isinstance(annotation, type) and issubclass(annotation, mutable_tensor)
