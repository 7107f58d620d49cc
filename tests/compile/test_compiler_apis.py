"""The ``torch.compiler`` APIs of TorchNeuron's backend reference with backend "neuron": each is
supported (value compared with the CPU) or refused with an error that says what to use instead.

| API | here |
|---|---|
| ``save_cache_artifacts`` / ``load_cache_artifacts`` | supported: our cache entries travel |
| regional compilation (``module.compile`` of repeated blocks, Diffusers' ``compile_repeated_blocks``) | supported |
| ``nested_compile_region`` | supported |
| ``mark_static`` | supported; ``mark_dynamic`` / ``dynamic=True`` refused (``tests/compile/test_backend.py``) |
| ``set_stance`` (``fail_on_recompile``, ``force_eager``), ``disable``, ``list_backends`` | supported |
| ``torch.export.export`` then run | supported |
| ``options=`` | ``fallback_execution`` read (test_backend.py), other keys warn (TorchNeuron: partial) |
| ``aot_compile`` (precompile) | refused: ``AOTCompileUnsupportedError`` |
| AOTInductor (``aoti_compile_and_package``) on ``neuron`` | refused: ``CppWrapperUnsupportedError`` |
| compiled ``flex_attention`` on ``neuron`` | refused by PyTorch's own device check |
"""
from __future__ import annotations

import warnings

import pytest
import torch

import torch_neuronx.compile as tnc
from torch_neuronx.compile import cache
from torch_neuronx.compile.backend import CompileModeWarning
from torch_neuronx.compile.mega_cache import ARTIFACT_TYPE
from torch_neuronx.compile.precompile import AOTCompileUnsupportedError


def mlp_fn(x, w):
    return torch.nn.functional.gelu(x @ w).softmax(-1)


def inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(8, 16, generator=g), torch.randn(16, 16, generator=g)


class Block(torch.nn.Module):
    """A transformer-like repeated block (a custom module, as Diffusers' blocks are)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        return x + torch.nn.functional.gelu(self.lin(self.norm(x)))


def test_save_and_load_cache_artifacts_seed_an_empty_cache(tmp_path, monkeypatch, py):
    x, w = inputs(1)
    earlier = torch.compiler.save_cache_artifacts()  # what earlier tests of this process recorded
    before = set(earlier[1].artifacts[ARTIFACT_TYPE]) if earlier else set()
    torch.compile(mlp_fn, backend="neuron")(x.to("neuron"), w.to("neuron"))
    saved = torch.compiler.save_cache_artifacts()
    assert saved is not None
    blob, info = saved
    keys = info.artifacts[ARTIFACT_TYPE]
    ours = set(keys) - before
    assert ours and all(cache.entry_path(k).exists() for k in ours)  # this compile's entries

    # a fresh process with an empty cache folder loads them before compiling anything
    (tmp_path / "artifacts.bin").write_bytes(blob)
    fresh = tmp_path / "fresh-cache"
    proc = py(f"""
        import torch
        info = torch.compiler.load_cache_artifacts(open({str(tmp_path / "artifacts.bin")!r}, "rb").read())
        print(sorted(info.artifacts[{ARTIFACT_TYPE!r}]))
    """, env={"TORCH_NEURONX_NEFF_CACHE_DIR": str(fresh)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(sorted(ours))  # the blob holds what was recorded since `earlier`
    assert all(cache.entry_path(k, fresh).exists() for k in ours)

    # this process, pointed at that folder with its memory level cleared: a disk hit, no compile
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(fresh))
    cache.GLOBAL_CACHE.clear_memory()
    torch._dynamo.reset()
    tnc.reset_dynamo_metrics()
    out = torch.compile(mlp_fn, backend="neuron")(x.to("neuron"), w.to("neuron"))
    torch.testing.assert_close(out.cpu(), mlp_fn(x, w), rtol=1e-5, atol=1e-5)
    m = tnc.get_dynamo_metrics()
    assert m["graphs_compiled"] == 0 and m["cache_hits_disk"] == 1, m


def test_regional_compilation_of_repeated_blocks_matches_cpu():
    torch.manual_seed(0)
    blocks = torch.nn.ModuleList(Block() for _ in range(3))
    x = torch.randn(4, 16)
    want = x
    for b in blocks:
        want = b(want)
    blocks.to("neuron")
    for b in blocks:  # what Diffusers' compile_repeated_blocks does
        b.compile(backend="neuron", fullgraph=True)
    # one graph serves every block (inference, as Diffusers' recompilation test runs it)
    with torch._dynamo.config.patch(error_on_recompile=True), torch.no_grad():
        h = x.to("neuron")
        for b in blocks:
            h = b(h)
    torch.testing.assert_close(h.cpu(), want, rtol=1e-5, atol=1e-5)
    assert tnc.get_dynamo_metrics()["graphs"] == 1


def test_nested_compile_region_matches_cpu():
    @torch.compiler.nested_compile_region
    def block(x, w):
        return torch.relu(x @ w) + 1

    def f(x, w):
        return block(block(x, w) * 0.5, w)

    x, w = inputs(2)
    out = torch.compile(f, backend="neuron", fullgraph=True)(x.to("neuron"), w.to("neuron"))
    assert out.device == torch.device("neuron:0")
    torch.testing.assert_close(out.cpu(), f(x, w), rtol=1e-5, atol=1e-5)


def test_mark_static_matches_cpu():
    x, w = inputs(3)
    xn = x.to("neuron")
    torch._dynamo.mark_static(xn, 0)
    out = torch.compile(mlp_fn, backend="neuron")(xn, w.to("neuron"))
    torch.testing.assert_close(out.cpu(), mlp_fn(x, w), rtol=1e-5, atol=1e-5)


def test_set_stance_fail_on_recompile_and_force_eager():
    x, w = inputs(4)
    fn = torch.compile(mlp_fn, backend="neuron")
    fn(x.to("neuron"), w.to("neuron"))
    with torch.compiler.set_stance("fail_on_recompile"):
        with pytest.raises(RuntimeError, match="fail_on_recompile"):
            fn(x[:4].to("neuron"), w.to("neuron"))
    tnc.reset_dynamo_metrics()
    with torch.compiler.set_stance("force_eager"):
        out = fn(x[:2].to("neuron"), w.to("neuron"))
    torch.testing.assert_close(out.cpu(), mlp_fn(x[:2], w), rtol=1e-5, atol=1e-5)
    assert tnc.get_dynamo_metrics()["graphs"] == 0


def test_disable_list_backends_and_options_warning():
    assert "neuron" in torch.compiler.list_backends()
    x, w = inputs(5)

    def f(x, w):
        return torch.compiler.disable(mlp_fn)(x, w) * 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(f, backend="neuron", options={"max_autotune": True})(x.to("neuron"), w.to("neuron"))
    assert any(issubclass(c.category, CompileModeWarning) and "max_autotune" in str(c.message) for c in caught)
    torch.testing.assert_close(out.cpu(), f(x, w), rtol=1e-5, atol=1e-5)


def test_export_then_run_on_neuron_matches_cpu():
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(4, 16)
    ep = torch.export.export(Block().to("neuron").eval(), (x.to("neuron"),))
    ep.module().load_state_dict(block.state_dict())
    out = ep.module()(x.to("neuron"))
    torch.testing.assert_close(out.cpu(), block(x), rtol=1e-5, atol=1e-5)


def test_aot_compile_is_refused_with_what_to_use():
    x, w = inputs(6)
    with pytest.raises(AOTCompileUnsupportedError, match="TORCH_NEURONX_NEFF_CACHE_DIR.*save_cache_artifacts"):
        torch.compile(mlp_fn, backend="neuron", fullgraph=True).aot_compile(
            ((x.to("neuron"), w.to("neuron")), {}))


def test_aoti_package_on_neuron_is_refused_with_what_to_use(tmp_path):
    ep = torch.export.export(torch.nn.Linear(16, 4).to("neuron"), (torch.randn(2, 16, device="neuron"),))
    with pytest.raises(Exception, match="CppWrapperUnsupportedError.*not supported on the neuron device.*cpu"):
        torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "m.pt2"))


def test_compiled_flex_attention_on_neuron_is_refused_by_pytorch():
    """PyTorch's own device check (documented in the README with the workaround: SDPA)."""
    from torch.nn.attention.flex_attention import flex_attention

    q = torch.randn(1, 2, 128, 16, device="neuron")
    with pytest.raises(ValueError, match="FlexAttention is only supported on CUDA, CPU"):
        torch.compile(flex_attention, backend="neuron")(q, q, q)
