"""NKI tests import ``torch_neuronx`` normally: if the package is broken, these tests fail with it."""
import torch_neuronx  # noqa: F401  (the package under test; import errors must surface)
import torch_neuronx.nki  # noqa: F401
