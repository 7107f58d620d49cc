"""`neuron` is registered at `import torch` and the HF libraries detect it."""
import importlib.metadata
import sys

import torch


def test_import_torch_alone_gives_the_device(py):
    r = py("""
        import sys, torch
        x = torch.ones(2, device='neuron') * 2
        print(x.device, x.cpu().tolist())
        print('torch_xla' in sys.modules, 'transformers' in sys.modules)
    """)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split("\n")
    assert out[0] == "neuron:0 [2.0, 2.0]"
    assert out[1] == "False False"


def test_torch_xla_is_not_importable():
    import importlib.util

    assert importlib.util.find_spec("torch_xla") is None
    assert "torch_xla" not in sys.modules


def test_privateuse1_is_neuron():
    assert torch._C._get_privateuse1_backend_name() == "neuron"
    assert torch.accelerator.current_accelerator().type == "neuron"
    assert torch.accelerator.is_available()
    assert torch.device(0) == torch.device("neuron", 0)
    assert torch.zeros(1, device=0).device == torch.device("neuron:0")
    assert torch.neuron.is_available() and torch.neuron.device_count() == 4
    t = torch.ones(2).neuron()
    assert t.is_neuron and t.device.type == "neuron"
    assert torch.nn.Linear(2, 2).neuron().weight.is_neuron


def test_distribution_metadata():
    assert importlib.metadata.version("torch_neuronx") == importlib.metadata.version("torch-neuronx")
    ep = [e for e in importlib.metadata.entry_points(group="torch.backends") if e.name == "torch_neuronx"]
    assert ep and ep[0].value == "torch_neuronx:_autoload"


def test_hf_libraries_detect_neuron():
    from accelerate import PartialState
    from accelerate.utils import is_neuron_available
    from diffusers.utils import is_torch_neuronx_available
    from transformers.utils.import_utils import is_torch_neuron_available
    from trl import SFTConfig

    assert is_torch_neuron_available()
    assert is_neuron_available()
    assert is_torch_neuronx_available()
    assert PartialState().device.type == "neuron"
    cfg = SFTConfig(output_dir="/tmp/tnx-sft-cfg", report_to=[])
    assert cfg.pad_to_multiple_of == 128


def test_bad_environment_does_not_break_import_torch(py):
    r = py("""
        import torch
        print(torch.neuron.is_available())
        try:
            torch.ones(1, device='neuron')
        except RuntimeError as e:
            print('ERR', e)
    """, env={"NEURON_LOGICAL_NC_CONFIG": "3"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("False")
    assert "NEURON_LOGICAL_NC_CONFIG=3" in r.stdout and "use 1 or 2" in r.stdout
