"""Backend "neuron": results vs eager, outputs stay on neuron, training graphs, static-shape
semantics (dynamic=True error, no automatic dynamic, and when that Dynamo setting is applied),
mode warning, fallback policy both ways, recompile diagnostics, graph breaks, debug dumps, cheap
autoload, graphs on a second core."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import torch_neuronx.compile as tnc
from torch_neuronx.compile.backend import CompileModeWarning
from torch_neuronx.compile.fallback import CompileFallbackWarning


def mlp_fn(x, w):
    return torch.nn.functional.gelu(x @ w).softmax(-1) * x.sum(-1, keepdim=True)


def test_inference_matches_eager_and_stays_on_neuron():
    torch.manual_seed(0)
    x, w = torch.randn(8, 16), torch.randn(16, 16)
    before = torch.neuron.memory_allocated()
    out = torch.compile(mlp_fn, backend="neuron")(x.to("neuron"), w.to("neuron"))
    assert out.device == torch.device("neuron:0")
    assert torch.neuron.memory_allocated() >= before + out.numel() * 4  # accounted device memory
    torch.testing.assert_close(out.cpu(), mlp_fn(x, w), rtol=1e-5, atol=1e-5)
    m = tnc.get_dynamo_metrics()
    assert set(m) == set(tnc.DynamoMetrics.__annotations__)  # the TypedDict documents every key
    assert m["graphs"] == 1 and m["graphs_compiled"] + m["cache_hits_memory"] + m["cache_hits_disk"] == 1
    assert m["compile_seconds"] > 0


def test_training_forward_backward_fullgraph_matches_eager():
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.LayerNorm(32),
                              torch.nn.Linear(32, 4))
    dev = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.LayerNorm(32),
                              torch.nn.Linear(32, 4))
    dev.load_state_dict(ref.state_dict())
    dev.to("neuron")
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    cdev = torch.compile(dev, backend="neuron", fullgraph=True)
    loss = torch.nn.functional.cross_entropy(cdev(x.to("neuron")), y.to("neuron"))
    loss.backward()
    loss_ref = torch.nn.functional.cross_entropy(ref(x), y)
    loss_ref.backward()
    torch.testing.assert_close(loss.cpu(), loss_ref, rtol=1e-5, atol=1e-6)
    for p, q in zip(dev.parameters(), ref.parameters(), strict=True):
        assert p.grad.device.type == "neuron"
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-4, atol=1e-6)
    m = tnc.get_dynamo_metrics()
    # one Dynamo graph -> a forward and a backward graph
    assert m["graphs"] == 1
    assert m["graphs_compiled"] + m["cache_hits_memory"] + m["cache_hits_disk"] == 2


def test_dynamic_true_is_rejected_with_a_clear_error():
    f = torch.compile(lambda x: x * 2, backend="neuron", dynamic=True)
    with pytest.raises(Exception, match="static shapes only.*dynamic=True"):
        f(torch.ones(5, device="neuron"))


def test_mark_dynamic_is_rejected():
    x = torch.ones(6, 3, device="neuron")
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(Exception, match="static shapes only"):
        torch.compile(lambda t: t + 1, backend="neuron")(x)


def test_new_shapes_are_new_static_graphs_with_diagnostics(monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_RECOMPILE_WARN", "2")
    f = torch.compile(lambda ids: (ids * 3).sum(-1), backend="neuron")  # dynamic unset
    with pytest.warns(tnc.RecompileWarning,
                      match=r"recompiled 2 times.*dimension 1 \(sequence length\).*pad_to_multiple"):
        for n in (5, 9, 13):
            x = torch.arange(2 * n, device="neuron").view(2, n)
            assert torch.equal(f(x).cpu(), (x.cpu() * 3).sum(-1))
    m = tnc.get_dynamo_metrics()
    assert m["graphs"] == 3  # no dynamic promotion: every length is its own static graph
    assert len(m["recompiles"]) == 2
    rec = m["recompiles"][0]
    assert "size mismatch" in rec["guard"] and "expected 5, actual 9" in rec["guard"]
    assert rec["changed"] == [{"input": "L['ids']", "dim": 1, "before": 5, "after": 9}]



@pytest.mark.parametrize("value", ["abc", "-3", "2.5"])
def test_a_bad_recompile_warn_threshold_warns_and_uses_the_default(monkeypatch, value):
    # "abc" and "2.5" were silently the default 3, and "-3" warned at the first recompile
    from torch_neuronx.compile import metrics

    monkeypatch.setenv("TORCH_NEURONX_RECOMPILE_WARN", value)
    monkeypatch.setattr(metrics, "_bad_threshold_warned", set(), raising=False)
    with pytest.warns(UserWarning, match=f"TORCH_NEURONX_RECOMPILE_WARN='{value}' is not an integer >= 0: using 3"):
        assert metrics.recompile_warn_threshold() == 3
    for good, expected in (("0", 0), ("5", 5), ("", 3)):
        monkeypatch.setenv("TORCH_NEURONX_RECOMPILE_WARN", good)
        assert metrics.recompile_warn_threshold() == expected

def test_mode_other_than_default_warns_and_works():
    f = torch.compile(lambda x: x.relu() + 1, backend="neuron", mode="max-autotune")
    with pytest.warns(CompileModeWarning, match="mode='max-autotune' is ignored"):
        out = f(torch.tensor([-1.0, 2.0], device="neuron"))
    assert out.cpu().tolist() == [1.0, 3.0]


def test_graph_break_gives_two_graphs_and_a_reason():
    def f(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    x = torch.randn(4, device="neuron")
    out = torch.compile(f, backend="neuron")(x)
    torch.testing.assert_close(out.cpu(), x.cpu().sin().cos())
    m = tnc.get_dynamo_metrics()
    assert m["graphs"] == 2
    assert sum(m["graph_breaks"].values()) >= 1


_lib = torch.library.Library("tnx_compile_test", "DEF")
_lib.define("boom(Tensor x) -> Tensor")
_lib.impl("boom", lambda x: x + 100, "CompositeExplicitAutograd")


@torch.library.register_fake("tnx_compile_test::boom")
def _boom_fake(x):
    return torch.empty_like(x)


def _install_failing_lowering():
    from torch._inductor.lowering import lowerings, register_lowering

    op = torch.ops.tnx_compile_test.boom.default
    if op not in lowerings:
        @register_lowering(op)
        def _fail(x):
            raise RuntimeError("no lowering for tnx_compile_test.boom on this NeuronCore")


def test_fallback_disabled_by_default_raises_with_graph_and_reason():
    _install_failing_lowering()
    f = torch.compile(lambda x: torch.ops.tnx_compile_test.boom(x * 2), backend="neuron")
    with pytest.raises(Exception) as info:
        f(torch.ones(3, device="neuron"))
    text = str(info.value)
    assert "backend 'neuron' failed to compile" in text
    assert "no lowering for tnx_compile_test.boom" in text  # the reason
    assert "tnx_compile_test.boom" in text.split("Graph:", 1)[1]  # the graph


def test_fallback_enabled_warns_and_runs_eagerly(monkeypatch):
    _install_failing_lowering()
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    f = torch.compile(lambda x: torch.ops.tnx_compile_test.boom(x * 2), backend="neuron")
    with pytest.warns(CompileFallbackWarning, match="running it eagerly"):
        out = f(torch.ones(3, device="neuron"))
    assert out.device.type == "neuron" and out.cpu().tolist() == [102.0, 102.0, 102.0]
    m = tnc.get_dynamo_metrics()
    assert len(m["fallbacks"]) == 1 and "no lowering" in m["fallbacks"][0]["reason"]


def test_fallback_execution_option_overrides_the_variable(monkeypatch):
    _install_failing_lowering()

    def boom(x):
        return torch.ops.tnx_compile_test.boom(x * 2)

    # the variable at its default (raise): the option turns fallback execution on for this compile
    f = torch.compile(boom, backend="neuron", options={"fallback_execution": True})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(torch.ones(3, device="neuron"))
    assert out.device.type == "neuron" and out.cpu().tolist() == [102.0, 102.0, 102.0]
    assert any(issubclass(c.category, CompileFallbackWarning) for c in caught)
    assert not any(issubclass(c.category, CompileModeWarning) for c in caught)  # the option is read
    assert len(tnc.get_dynamo_metrics()["fallbacks"]) == 1
    # the variable allows it: the option False still raises
    torch._dynamo.reset()
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    g = torch.compile(boom, backend="neuron", options={"fallback_execution": False})
    with pytest.raises(Exception, match="backend 'neuron' failed to compile"):
        g(torch.ones(3, device="neuron"))


def test_fallback_execution_option_must_be_a_bool():
    f = torch.compile(lambda x: x + 1, backend="neuron", options={"fallback_execution": "yes"})
    with pytest.raises(Exception, match="fallback_execution.*True.*False"):
        f(torch.ones(3, device="neuron"))


def test_debug_dir_dumps_fx_and_generated_code(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DEBUG_DIR", str(tmp_path))
    torch.compile(lambda x: (x * x).sum(), backend="neuron")(torch.ones(7, device="neuron"))
    names = sorted(p.name for p in tmp_path.iterdir())
    dynamo = [n for n in names if n.endswith("_dynamo.txt")]
    aten = [n for n in names if n.endswith("_aten.txt")]
    code = [n for n in names if n.endswith("_code.py")]
    assert dynamo and aten and code, names
    assert "f32[7]" in (tmp_path / dynamo[0]).read_text()
    generated = (tmp_path / code[0]).read_text()
    assert "def call(" in generated and "cpp_fused" in generated  # Inductor's C++ kernel



def test_an_unwritable_debug_dir_warns_and_the_graph_still_runs(tmp_path, monkeypatch):
    # a file as the dump folder failed the compile with a bare FileExistsError
    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.setenv("TORCH_NEURONX_DEBUG_DIR", str(tmp_path / "a_file"))
    torch._dynamo.reset()
    f = torch.compile(lambda x: (x * 3).sum(), backend="neuron")
    with pytest.warns(UserWarning, match="TORCH_NEURONX_DEBUG_DIR=.*a_file.* cannot be written"):
        out = f(torch.ones(5, device="neuron"))
    assert out.item() == 15.0

def test_autoload_imports_no_dynamo_backend_and_no_inductor():
    """`import torch` loads neither the backend nor Inductor; importing torch_neuronx.compile
    changes no Dynamo setting; loading the backend turns automatic dynamic shapes off."""
    code = textwrap.dedent("""
        import sys, torch
        print('torch._inductor' in sys.modules, 'torch_neuronx.compile.backend' in sys.modules)
        import torch._dynamo, torch_neuronx.compile as tnc
        print(torch._dynamo.config.automatic_dynamic_shapes)
        tnc.register()
        print(torch._dynamo.config.automatic_dynamic_shapes)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "False", "True", "False"]


_HAS_ENTRY_POINT = "neuron" in importlib.metadata.entry_points(group="torch_dynamo_backends").names


@pytest.mark.skipif(not _HAS_ENTRY_POINT, reason="the torch_dynamo_backends entry point "
                    "'neuron = torch_neuronx.compile.backend:neuron_backend' is not installed "
                    "(pyproject.toml, then pip install -e .)")
def test_backend_usable_right_after_import_torch(tmp_path):
    code = textwrap.dedent("""
        import torch
        f = torch.compile(lambda x: x * 2 + 1, backend="neuron")
        print(f(torch.ones(3, device="neuron")).cpu().tolist())
    """)
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[3.0, 3.0, 3.0]"


def test_graph_on_second_core_keeps_its_buffers_there():
    """A graph whose inputs are on neuron:1, called while neuron:0 is current, allocates its
    intermediates (addmm's out= buffer included) on neuron:1 and leaves the current core alone."""
    if torch.neuron.device_count() < 2:
        pytest.skip("needs two NeuronCores")
    torch._dynamo.reset()
    lin = torch.nn.Linear(8, 8).to("neuron:1")
    x = torch.randn(4, 8)
    fn = torch.compile(lambda t: torch.relu(lin(t)) * 2, backend="neuron")
    torch.neuron.set_device(0)
    out = fn(x.to("neuron:1"))
    assert out.device == torch.device("neuron:1")
    assert torch.neuron.current_device() == 0
    ref = torch.relu(torch.nn.functional.linear(x, lin.weight.cpu(), lin.bias.cpu())) * 2
    torch.testing.assert_close(out.cpu(), ref)


def test_core_pinning_wrapper_calls_the_graph_inside_dynamos_disable_wrappers():
    # Dynamo wraps a backend's result in torch._dynamo.disable itself (taking the innermost function
    # of an already wrapped one): the pinning wrapper must not call a second, inner disable wrapper
    # per run. Values, the boxed convention and the current-core switch are unchanged.
    from torch_neuronx.compile.device_pinning import on_graph_core

    seen = []

    def graph(args):
        seen.append(torch.neuron.current_device())
        return [args[0] * 2]

    graph._boxed_call = True
    wrapped = torch._dynamo.disable(graph)
    x = torch.ones(3, device="neuron")
    run = on_graph_core(wrapped, [x])
    assert run._boxed_call is True
    import inspect

    assert inspect.getclosurevars(run).nonlocals["compiled"] is graph
    torch.testing.assert_close(run([x])[0].cpu(), torch.full((3,), 2.0))
    assert seen == [0]
    if torch.neuron.device_count() > 1:
        y = torch.ones(3, device="neuron:1")
        run1 = on_graph_core(wrapped, [y])
        assert run1([y])[0].device == torch.device("neuron:1") and seen[-1] == 1
        assert torch.neuron.current_device() == 0
