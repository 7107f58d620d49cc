"""The C++ kernels of a ``neuron`` graph are built as one library (:mod:`torch_neuronx.compile.kernel_bundle`):
the same functions as one library per kernel, with the same results; sets that cannot share a library are
built one kernel per library as before."""
from __future__ import annotations

import types

import pytest
import torch

from torch_neuronx.compile import kernel_bundle


def _graph(x, w):
    y = (x.sin() * 2 + 1).softmax(-1) @ w  # a matmul between two fused kernels
    return torch.nn.functional.layer_norm(y, (y.shape[-1],)).relu() + x.cos().sum(0), torch.cumsum(y, 1)


def test_a_graphs_kernels_share_one_library_and_compute_what_separate_libraries_do():
    from torch._inductor.codecache import PyCodeCache

    torch.manual_seed(0)
    x, w = torch.randn(4, 16, 33), torch.randn(33, 33)
    xn, wn = x.to("neuron"), w.to("neuron")
    before = set(PyCodeCache.modules)
    got = torch.compile(_graph, backend="neuron")(xn, wn)
    [module] = [m for m in PyCodeCache.modules if m not in before]
    source = open(module.__file__).read()
    assert kernel_bundle.KERNEL_BUNDLE in source and source.count("async_compile.cpp_pybinding(") >= 2
    kernels = {k: v for k, v in vars(module).items() if k.startswith("cpp_fused")}
    assert len({v.__module__ for v in kernels.values()}) == 1  # one library
    for a, b in zip(got, _graph(x, w), strict=True):
        torch.testing.assert_close(a.cpu(), b, atol=1e-5, rtol=1e-5)
    # The same wrapper with Inductor's own AsyncCompile: one library per kernel, bit-identical results.
    alone = types.ModuleType("alone")
    exec(compile(source.replace(kernel_bundle.KERNEL_BUNDLE, ""), "alone", "exec"), vars(alone))
    separate = {k: v for k, v in vars(alone).items() if k.startswith("cpp_fused")}
    assert set(separate) == set(kernels) and len({v.__module__ for v in separate.values()}) == len(separate)
    for a, b in zip(alone.call([xn, wn]), module.call([xn, wn]), strict=True):
        assert torch.equal(a.cpu(), b.cpu())


_KERNEL = r'''
#include <torch/csrc/inductor/cpp_prefix.h>
HELPER
extern "C"  void  kernel(const float* in_ptr0, float* out_ptr0, int64_t n)
{
    for (int64_t i = 0; i < n; i++) out_ptr0[i] = helper(in_ptr0[i]) + OFFSET;
}
'''


def _kernel(offset: int, helper: str = "static inline float helper(float v) { return 2 * v; }") -> str:
    return _KERNEL.replace("HELPER", helper).replace("OFFSET", str(offset))


def _check_built(kernels, offsets, libraries):
    """Builds ``kernels``: ``libraries`` distinct libraries, kernel i computing 2 * x + offsets[i]."""
    built = kernel_bundle.load_kernels(kernels)
    assert len({f.__module__ for f in built}) == libraries
    x = torch.arange(4.0)
    for offset, f in zip(offsets, built, strict=True):
        out = torch.empty(4)
        f(x, out, 4)
        assert torch.equal(out, 2 * x + offset)


def test_kernels_that_cannot_share_a_library_are_built_one_by_one():
    types_ = ["const float*", "float*", "int64_t"]
    # each defines the same static helper: one translation unit refuses it, each alone builds
    kernels = [(types_, _kernel(1)), (types_, _kernel(2))]
    assert kernel_bundle.bundle_source(kernels) is not None
    _check_built(kernels, offsets=(1, 2), libraries=2)
    # distinct helpers share one library
    shared = [(types_, _kernel(i, f"static inline float helper{i}(float v) {{ return 2 * v; }}")
               .replace("helper(", f"helper{i}(")) for i in (3, 4)]
    _check_built(shared, offsets=(3, 4), libraries=1)
    # not bundled: a source with two definitions, an argument type the bindings do not parse
    assert kernel_bundle.bundle_source([(types_, _kernel(1) + _kernel(2)), (types_, _kernel(3))]) is None
    assert kernel_bundle.bundle_source([(["double"], _kernel(1)), (types_, _kernel(2))]) is None


def test_a_kernel_used_before_wait_says_so():
    compiler = kernel_bundle.KernelBundleCompile()
    pending = compiler.cpp_pybinding(["const float*", "float*", "int64_t"], _kernel(1))
    with pytest.raises(RuntimeError, match="before async_compile.wait"):
        pending(torch.zeros(1), torch.zeros(1), 1)
    scope = {"k": pending}
    compiler.wait(scope)
    out = torch.empty(2)
    scope["k"](torch.ones(2), out, 2)
    assert torch.equal(out, torch.full((2,), 3.0))
