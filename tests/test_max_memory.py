"""torch_neuronx.max_memory(): the dict accelerate's device_map="auto" needs to plan across NeuronCores."""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import torch_neuronx


def test_budget_per_core():
    mm = torch_neuronx.max_memory(fraction=0.5)
    assert sorted(k for k in mm if k != "cpu") == list(range(torch.neuron.device_count()))
    free, _ = torch.neuron.mem_get_info(0)
    assert mm[0] == int(free * 0.5) and mm["cpu"] > 0
    assert "cpu" not in torch_neuronx.max_memory(include_cpu=False)
    with pytest.raises(ValueError, match="fraction"):
        torch_neuronx.max_memory(fraction=0)


@pytest.mark.parametrize("kwargs,match", [
    ({"fraction": "0.9"}, r"fraction='0.9'\): the fraction is a number in \(0, 1\]"),  # was: '<' not supported
    ({"fraction": True}, r"fraction=True"),                                          # was: taken as 1.0
    ({"include_cpu": "no"}, r"include_cpu='no'\): True or False"),                  # was: truthy, cpu offered
])
def test_arguments_of_the_wrong_type_are_named(kwargs, match):
    with pytest.raises(TypeError, match=match):
        torch_neuronx.max_memory(**kwargs)


def test_device_map_auto_places_on_neuron_cores(tmp_path):
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    model = LlamaForCausalLM.from_pretrained(tmp_path, device_map="auto", max_memory=torch_neuronx.max_memory())
    assert {p.device.type for p in model.parameters()} == {"neuron"}
    ref = LlamaForCausalLM.from_pretrained(tmp_path)
    x = torch.randint(0, 256, (1, 8))
    with torch.no_grad():
        out = model(x.to("neuron:0")).logits
    torch.testing.assert_close(out.cpu(), ref(x).logits)
