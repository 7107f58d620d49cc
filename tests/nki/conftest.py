"""NKI tests import ``torch_neuronx`` normally: if the package is broken, these tests fail with it."""
import torch_neuronx  # the package under test: its import errors must surface here
import torch_neuronx.nki  # noqa: F401
