"""neuron-rmsnorm: an example Hugging Face ``kernels`` repository for the ``neuron`` device.

Layout (kernels 0.17, ``kernels/resolver.py`` + ``kernels/importer.py``): a noarch build variant
``build/torch-neuron/`` holding ``metadata.json`` (name, id, ``backend.type = "neuron"``) and this
package, ``<python name of the kernel>/__init__.py``. ``kernels`` picks the ``torch-neuron`` variant
when ``torch.neuron`` exists (``kernels/backends.py:_backend``) and reads layers from ``layers``.

Functions: ``rms_norm(x, weight, eps)`` -> [..., H] (the NKI RMSNorm of ``torch_neuronx.kernels``,
a ``torch.ops.neuron_kernels.rms_norm`` op with an NKI backward). Layers: :mod:`.layers`.
"""
from torch_neuronx.kernels import rms_norm

from . import layers

__all__ = ["rms_norm", "layers"]
