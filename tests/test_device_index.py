"""How ``torch.neuron`` functions read their ``device`` argument (``torch_neuronx._device_index``):
PyTorch's own parsing, then a check against the visible cores that names the bad index."""
from __future__ import annotations

import pytest
import torch

from torch_neuronx._device_index import device_index


def test_every_accepted_spelling_names_the_same_core():
    count = torch.neuron.device_count()
    assert count >= 2
    assert device_index(1) == device_index("neuron:1") == device_index(torch.device("neuron", 1)) == 1
    with torch.neuron.device(1):
        # None and an index-less "neuron" mean the calling thread's current device
        assert device_index(None) == device_index("neuron") == device_index(torch.device("neuron")) == 1
    assert torch.neuron.memory_allocated("neuron:1") == torch.neuron.memory_allocated(1)


def test_bad_devices_raise_errors_that_name_the_problem():
    count = torch.neuron.device_count()
    with pytest.raises(RuntimeError, match=rf"Invalid device neuron:{count}: {count} logical NeuronCore\(s\) are "
                                           rf"visible .*NEURON_RT_VISIBLE_CORES"):
        torch.neuron.memory_allocated(count)
    with pytest.raises(RuntimeError, match="Invalid device neuron:7"):
        torch.neuron.get_device_properties("neuron:7")
    with pytest.raises(ValueError, match="cuda"):
        torch.neuron.memory_allocated("cuda:0")
    # PyTorch's helper alone would read these as "the current device": refused instead
    for bad in (1.5, [1], object()):
        with pytest.raises(TypeError, match=r"device must be None, an int, 'neuron'"):
            torch.neuron.memory_allocated(bad)
