"""The legacy typed storage classes of ``torch.neuron`` (``torch.neuron.FloatStorage``, ...).

PyTorch's typed-storage layer looks a device's legacy storage classes up as attributes of its
device module: ``Tensor.storage_type()`` and ``TypedStorage.type()`` return
``getattr(torch.<device>, "FloatStorage")`` for a ``cuda`` or PrivateUse1 storage, and
``TypedStorage.__new__`` / ``isinstance`` take a class's device from its ``__module__``
(``torch.<device>``). CUDA defines them in ``torch.cuda``; without them a ``neuron`` tensor's
``storage_type()`` was ``None`` and its ``storage().type()`` the generic
``'torch.storage.TypedStorage'`` instead of ``'torch.neuron.FloatStorage'``.

Each class is a ``torch.storage._LegacyStorage`` whose ``__module__`` is ``torch.neuron``:
``torch.neuron.FloatStorage(4)`` allocates 4 float32 elements on the current NeuronCore,
``isinstance(t.storage(), torch.neuron.FloatStorage)`` is true for a float32 ``neuron`` tensor,
and the class pickles by name. Like PyTorch's own legacy classes they are deprecated (each use warns
``TypedStorage is deprecated``); ``untyped_storage()`` is the current API.
"""
from __future__ import annotations

import torch
from torch.storage import _LegacyStorage, _warn_typed_storage_removal


class _NeuronLegacyStorage(_LegacyStorage):
    """Base of the ``torch.neuron.<Type>Storage`` classes: device memory, so no host-only
    constructors (a host buffer, a shared-memory file or a weak pointer)."""

    @classmethod
    def from_buffer(cls, *args, **kwargs):
        _warn_typed_storage_removal()
        raise RuntimeError(
            "from_buffer: not available for neuron storage (device memory); build a CPU storage with "
            "torch.TypedStorage.from_buffer and move it with .to('neuron')"
        )

    @classmethod
    def _new_with_weak_ptr(cls, *args, **kwargs):
        raise RuntimeError("_new_with_weak_ptr: not available for neuron storage")

    @classmethod
    def _new_shared_filename(cls, *args, **kwargs):
        raise RuntimeError(
            "_new_shared_filename: not available for neuron storage (neuron tensors cross "
            "processes as memory files, torch_neuronx.device.sharing)"
        )


class _DtypeProperty:
    """``cls.dtype`` on the class itself (warns as PyTorch's legacy classes do); ``cls._dtype``
    without the warning."""

    def __init__(self, dtype: torch.dtype, warn: bool) -> None:
        self._value = dtype
        self._warn = warn

    def __get__(self, instance: object, owner: type | None = None) -> torch.dtype:
        if self._warn:
            _warn_typed_storage_removal()
        return self._value


def _make_classes() -> dict[str, type]:
    classes: dict[str, type] = {}
    # PyTorch's own table of legacy class names (FloatStorage, BFloat16Storage, ...); the
    # quantized ones are left out: neuron has no quantized tensors.
    for dtype, name in torch.storage._dtype_to_storage_type_map().items():
        if name.startswith("Q"):
            continue
        classes[name] = type(
            name,
            (_NeuronLegacyStorage,),
            {
                "__module__": "torch.neuron",
                "__qualname__": name,
                "__doc__": f"Legacy typed storage of {dtype} on a NeuronCore (deprecated: use untyped_storage()).",
                "dtype": _DtypeProperty(dtype, warn=True),
                "_dtype": _DtypeProperty(dtype, warn=False),
            },
        )
    return classes


LEGACY_STORAGE_CLASSES: dict[str, type] = _make_classes()
"""Class name (``"FloatStorage"``) → the ``torch.neuron`` class, for every non-quantized dtype
PyTorch has a legacy storage name for."""
