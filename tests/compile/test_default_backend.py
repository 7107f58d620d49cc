"""``torch.compile`` as users write it on ``neuron``: no ``backend=`` auto-selects backend "neuron"
(TorchNeuron's documented behaviour: ``mode`` other than "default" warns and is ignored), CPU
graphs still go to Inductor, and the paths that name Inductor themselves (``backend="inductor"``,
transformers' ``CompileConfig``, flex attention's ``create_block_mask(_compile=True)``) compile on
``neuron`` because Inductor knows the device. Every result is compared with the CPU."""
from __future__ import annotations

import warnings

import pytest
import torch

import torch_neuronx.compile as tnc
from torch_neuronx.compile.backend import CompileModeWarning
from torch_neuronx.compile.default_backend import auto_select_backend, graph_on_neuron


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                               torch.nn.Linear(16, 4))


def stats(x):
    var, mean = torch.var_mean(x, dim=-1)
    return var, mean, torch.nn.functional.layer_norm(x, (x.shape[-1],))


def test_default_backend_is_auto_selection():
    assert torch.compiler.get_default_backend() is auto_select_backend


def test_no_backend_on_neuron_selects_neuron_and_matches_cpu():
    ref = mlp()
    x = torch.randn(4, 8)
    model = mlp().to("neuron")
    out = torch.compile(model)(x.to("neuron"))
    assert out.device == torch.device("neuron:0")
    torch.testing.assert_close(out.cpu(), ref(x), rtol=1e-5, atol=1e-5)
    assert tnc.get_dynamo_metrics()["graphs"] == 1  # backend "neuron" compiled it


def test_no_backend_var_mean_and_layer_norm_match_cpu():
    x = torch.randn(4, 32)
    got = torch.compile(stats)(x.to("neuron"))
    for g, want in zip(got, stats(x), strict=True):
        assert g.device.type == "neuron"
        torch.testing.assert_close(g.cpu(), want, rtol=1e-5, atol=1e-5)


def test_no_backend_on_cpu_goes_to_inductor():
    x = torch.randn(4, 32)
    got = torch.compile(stats)(x)
    for g, want in zip(got, stats(x), strict=True):
        assert g.device.type == "cpu"
        torch.testing.assert_close(g, want, rtol=1e-5, atol=1e-5)
    assert tnc.get_dynamo_metrics()["graphs"] == 0  # not backend "neuron"


def test_fallback_execution_option_without_backend_reaches_neuron_and_not_inductor():
    x = torch.randn(4, 32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        on_cpu = torch.compile(stats, options={"fallback_execution": True})(x)   # Inductor: key dropped
        on_neuron = torch.compile(stats, options={"fallback_execution": True})(x.to("neuron"))
    assert not any(issubclass(w.category, CompileModeWarning) for w in caught), [str(w.message) for w in caught]
    for a, b, want in zip(on_cpu, on_neuron, stats(x), strict=True):
        assert (a.device.type, b.device.type) == ("cpu", "neuron")
        torch.testing.assert_close(a, want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(b.cpu(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_mode_other_than_default_warns_and_compiles_as_default(mode):
    ref = mlp()
    x = torch.randn(4, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(mlp().to("neuron"), mode=mode)(x.to("neuron"))
    assert any(issubclass(w.category, CompileModeWarning) and repr(mode) in str(w.message)
               for w in caught), [str(w.message) for w in caught]
    torch.testing.assert_close(out.cpu(), ref(x), rtol=1e-5, atol=1e-5)


def test_graph_on_neuron_sees_tensors_created_inside_the_graph():
    gm = torch.fx.symbolic_trace(lambda n: torch.arange(4, device="neuron") * n)
    assert graph_on_neuron(gm, [3])
    assert not graph_on_neuron(torch.fx.symbolic_trace(lambda n: torch.arange(4) * n), [3])


def test_explicit_inductor_knows_neuron():
    """backend="inductor" written out (Diffusers' and transformers' default) is Inductor's own path:
    var_mean, an indexed gather and layer_norm with mode="reduce-overhead" (CompileConfig's)."""
    x = torch.randn(4, 32)
    idx = torch.tensor([3, 1, 0])

    def f(x, idx):
        return (*stats(x), x[idx].sum(0))

    got = torch.compile(f, backend="inductor", mode="reduce-overhead")(x.to("neuron"), idx.to("neuron"))
    for g, want in zip(got, f(x, idx), strict=True):
        assert g.device == torch.device("neuron:0")
        torch.testing.assert_close(g.cpu(), want, rtol=1e-5, atol=1e-5)
    assert tnc.get_dynamo_metrics()["graphs"] == 0
    from torch._inductor.codegen.common import get_scheduling_for_device
    from torch._inductor.codegen.cpp import CppScheduling

    # what Inductor read from torch.neuron: the C++ kernel generator
    assert get_scheduling_for_device("neuron") is torch.neuron.Scheduling
    assert issubclass(torch.neuron.Scheduling, CppScheduling)


def test_create_block_mask_compiled_on_neuron_matches_cpu():
    from torch.nn.attention.flex_attention import create_block_mask

    def causal(b, h, q, kv):
        return q >= kv

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyTorch deprecates _compile itself
        got = create_block_mask(causal, None, None, 256, 256, device="neuron", _compile=True)
        want = create_block_mask(causal, None, None, 256, 256, device="cpu")
    assert got.kv_num_blocks.device == torch.device("neuron:0")
    assert torch.equal(got.kv_num_blocks.cpu(), want.kv_num_blocks)
    assert torch.equal(got.kv_indices.cpu(), want.kv_indices)
    assert torch.equal(got.full_kv_num_blocks.cpu(), want.full_kv_num_blocks)


def test_generate_with_compile_config_matches_cpu(tiny_llama):
    """transformers compiles the static-cache forward with CompileConfig's backend ("inductor",
    mode "reduce-overhead") when a compile_config is passed without one."""
    from transformers import CompileConfig

    model = tiny_llama()
    ids = torch.randint(0, 256, (1, 5), generator=torch.Generator().manual_seed(0))
    want = model.generate(ids, max_new_tokens=4, do_sample=False, cache_implementation="static")
    model.to("neuron")
    got = model.generate(ids.to("neuron"), max_new_tokens=4, do_sample=False, cache_implementation="static",
                         compile_config=CompileConfig(dynamic=False))
    assert torch.equal(got.cpu(), want)


def test_auto_selection_installed_when_dynamo_loads_and_keeps_a_user_default(py):
    proc = py("""
        import sys, torch
        assert "torch._dynamo" not in sys.modules  # import torch loads no Dynamo
        print(torch.compiler.get_default_backend().__name__)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["auto_select_backend"]
    proc = py("""
        import torch
        torch.compiler.set_default_backend("eager")  # chosen before torch_neuronx loads
        import torch_neuronx
        print(torch.compiler.get_default_backend())
    """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["eager"]
