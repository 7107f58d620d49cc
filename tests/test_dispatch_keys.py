"""Every dispatch key PyTorch layers over a device works on ``neuron`` or raises a clear error.

ZeroTensor (efficient zeros: backward formulas and forward AD use them), Conjugate and Negative
views, functionalization, Python dispatch modes, FakeTensorMode, functorch transforms, autocast,
inference mode, tensor subclasses; quantized, sparse and nested tensors are refused with the
device's layout message. Each case asserts the value against the CPU, or the error.
"""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

import torch_neuronx

NEURON = torch.device("neuron:0")


# -- ZeroTensor ------------------------------------------------------------------------------------

def test_efficientzerotensor_is_a_zero_tensor_on_neuron_without_memory():
    before = torch.neuron.memory_allocated()
    z = torch._efficientzerotensor(3, device="neuron")
    assert z.device == NEURON and z._is_zerotensor() and z.dtype == torch.float32
    assert torch.neuron.memory_allocated() == before
    assert torch.equal(z.cpu(), torch.zeros(3))
    assert torch.equal(torch._efficientzerotensor(2, 3, device="neuron:1", dtype=torch.bfloat16).cpu(),
                       torch.zeros(2, 3, dtype=torch.bfloat16))


def test_zero_tensor_arithmetic_materializes_on_neuron():
    z = torch._efficientzerotensor(3, device="neuron")
    ones = torch.ones(3, device="neuron")
    s = z + ones
    assert s.device == NEURON and torch.equal(s.cpu(), torch.ones(3))
    p = z * ones
    assert p.device == NEURON and torch.equal(p.cpu(), torch.zeros(3))


def test_sgn_backward_of_a_real_tensor_is_zero():
    x = torch.randn(4, requires_grad=True)
    (g_cpu,) = torch.autograd.grad(torch.sgn(x).sum(), x)
    xn = x.detach().to("neuron").requires_grad_()
    (g,) = torch.autograd.grad(torch.sgn(xn).sum(), xn)
    assert g.device == NEURON
    assert torch.equal(g.cpu(), g_cpu) and torch.equal(g.cpu(), torch.zeros(4))


def test_forward_ad_zero_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(torch.randn(3, device="neuron"), torch.ones(3, device="neuron"))
        tangent = fwAD.unpack_dual(torch.sgn(x)).tangent
        assert tangent.device == NEURON
        assert torch.equal(tangent.cpu(), torch.zeros(3))


def test_zero_tensor_operand_of_an_out_variant():
    """The fallback materializes the zero operand; the result is real memory on neuron."""
    z = torch._efficientzerotensor(3, device="neuron")
    out = torch.empty(3, device="neuron")
    torch.add(z, torch.full((3,), 2.0, device="neuron"), out=out)
    assert torch.equal(out.cpu(), torch.full((3,), 2.0))


@pytest.mark.parametrize("op", ["dot", "vdot"])
def test_zero_tensor_reaching_the_cpu_kernel_keeps_its_zero_bit(op):
    """dot and vdot are ZeroTensor fallthroughs: their CPU kernel tests the bit itself (it would read
    the ZeroTensor's null memory otherwise) and answers with a ZeroTensor, as the CPU does."""
    f = getattr(torch, op)
    a = torch.tensor([1.0, -2.0, 0.5], dtype=torch.complex64 if op == "vdot" else torch.float32)
    for z_first in (False, True):
        args_cpu = (torch._efficientzerotensor(3, dtype=a.dtype), a)[:: -1 if not z_first else 1]
        args_n = (torch._efficientzerotensor(3, dtype=a.dtype, device="neuron"), a.to("neuron"))[
            :: -1 if not z_first else 1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fp64/complex host-fallback notice
            expected, got = f(*args_cpu), f(*args_n)
        assert expected._is_zerotensor()
        assert got.device == NEURON and got._is_zerotensor() and got.dtype == expected.dtype
        assert torch.equal(got.cpu(), expected)


@pytest.mark.parametrize("name,fn", [
    ("dot", torch.dot),
    ("matmul of vectors", torch.matmul),
    ("inner", torch.inner),
    ("linalg.vecdot", torch.linalg.vecdot),
])
def test_forward_ad_of_a_vector_product_with_one_tangent(name, fn):
    """Forward AD of dot(x, y) with a tangent for x only: the formula's other term is dot(x, zeros)
    with y's tangent a ZeroTensor (PyTorch's test_ops_fwd_gradients found it reading null memory)."""
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    y = torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64)
    tx = torch.tensor([0.5, 0.0, -1.0], dtype=torch.float64)
    results = []
    for device in ("cpu", "neuron"):
        with warnings.catch_warnings(), fwAD.dual_level():
            warnings.simplefilter("ignore")  # the fp64/complex host-fallback notice
            out = fn(fwAD.make_dual(x.to(device), tx.to(device)), y.to(device))
            primal, tangent = fwAD.unpack_dual(out)
            results.append((primal.cpu(), tangent.cpu()))
    (p_cpu, t_cpu), (p_n, t_n) = results
    assert torch.equal(p_n, p_cpu) and torch.equal(t_n, t_cpu)
    assert torch.equal(t_cpu, torch.tensor(0.5, dtype=torch.float64))  # tx . y = 0.5*2 + 0*(-1) + (-1)*0.5


# -- Conjugate / Negative views ----------------------------------------------------------------------

@pytest.fixture
def complex_pair():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fp64/complex host-fallback notice
        c = torch.randn(3, dtype=torch.complex64)
        yield c, c.to("neuron")


def test_conjugate_views(complex_pair):
    c, n = complex_pair
    y = n.conj()
    assert y.is_conj() and torch.equal(y.resolve_conj().cpu(), c.conj())
    assert torch.equal((n.conj() * n).cpu(), c.conj() * c)
    z = torch.empty(3, dtype=torch.complex64, device="neuron")
    z.copy_(n.conj())
    assert torch.equal(z.cpu(), c.conj())
    assert torch.equal(n.conj().cpu(), c.conj())
    assert torch.equal(c.conj().to("neuron").cpu(), c.conj())


def test_negative_views(complex_pair):
    c, n = complex_pair
    y = torch._neg_view(n)
    assert y.is_neg() and torch.equal(y.resolve_neg().cpu(), -c)
    assert torch.equal((torch._neg_view(n) + n).cpu(), torch._neg_view(c) + c)


def test_hfft_conjugate_copy(complex_pair):
    c, n = complex_pair
    torch.testing.assert_close(torch.fft.hfft(n).cpu(), torch.fft.hfft(c))


# -- functionalization, Python modes, functorch ----------------------------------------------------------

def test_functionalize_with_view_mutation():
    def f(x):
        y = x.clone()
        y.view(-1)[0].add_(1)
        return y.add_(1)

    x = torch.randn(2, 2)
    got = torch.func.functionalize(f)(x.to("neuron"))
    assert got.device == NEURON and torch.equal(got.cpu(), f(x))


def test_torch_dispatch_mode_sees_neuron_ops():
    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = torch.randn(3)
    with Record():
        y = (x.to("neuron") * 2).sum()
    assert y.device == NEURON and torch.equal(y.cpu(), (x * 2).sum())
    assert "aten.mul.Tensor" in seen


def test_fake_tensor_mode_keeps_the_neuron_device():
    with FakeTensorMode():
        x = torch.randn(3, 4, device="neuron")
        y = x @ x.T
    assert y.device == NEURON and y.shape == (3, 3)
    mode = FakeTensorMode()
    assert mode.from_tensor(torch.randn(3, device="neuron:1")).device == torch.device("neuron:1")


def test_set_rng_state_under_fake_tensor_mode():
    """Activation checkpointing restores RNG states inside shape-only (FakeTensorMode) runs: the
    real state is restored; a data-less state is a clear error, never a crash."""
    state = torch.neuron.get_rng_state()
    torch.neuron.manual_seed(123)
    with FakeTensorMode(allow_non_fake_inputs=True):
        torch.neuron.set_rng_state(state)
        fake_state = torch.empty(16, dtype=torch.uint8)
        with pytest.raises(RuntimeError, match="neuron generator state has no data"):
            torch.neuron.set_rng_state(fake_state)
    assert torch.equal(torch.neuron.get_rng_state(), state)


def test_checkpoint_preserving_rng_state_under_fake_tensor_mode():
    lin = torch.nn.Linear(4, 4).to("neuron")
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        x = mode.from_tensor(torch.randn(2, 4, device="neuron")).requires_grad_()
        y = torch.utils.checkpoint.checkpoint(lambda t: torch.nn.functional.dropout(lin(t), 0.5), x,
                                              use_reentrant=False, preserve_rng_state=True)
        y.sum().backward()
        assert x.grad.shape == (2, 4) and x.grad.device == NEURON


def test_meta_to_neuron_empty_like():
    assert torch.empty_like(torch.empty(3, device="meta"), device="neuron").device == NEURON


def test_vmap_jvp_jacrev():
    x = torch.randn(4, 3)
    xn = x.to("neuron")
    torch.testing.assert_close(torch.vmap(torch.sum)(xn).cpu(), x.sum(1))
    _, t = torch.func.jvp(torch.sin, (xn[0],), (torch.ones(3, device="neuron"),))
    torch.testing.assert_close(t.cpu(), torch.cos(x[0]))
    torch.testing.assert_close(torch.func.jacrev(torch.sin)(xn[0]).cpu(), torch.diag(torch.cos(x[0])))


def test_autocast_and_inference_mode():
    x = torch.randn(4, 4)
    with torch.autocast("neuron"):
        y = x.to("neuron") @ x.to("neuron")
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float().cpu(), x @ x, rtol=2e-2, atol=5e-2)
    with torch.inference_mode():
        z = x.to("neuron") + 1
    assert z.is_inference() and torch.equal(z.cpu(), x + 1)


def test_tensor_subclasses():
    from torch.testing._internal.two_tensor import TwoTensor

    class Sub(torch.Tensor):
        pass

    x = torch.randn(3)
    s = x.to("neuron").as_subclass(Sub) + 1
    assert type(s) is Sub and s.device == NEURON and torch.equal(s.cpu(), x + 1)
    t = TwoTensor(x.to("neuron"), (2 * x).to("neuron")) * 2
    assert type(t) is TwoTensor and torch.equal(t.a.cpu(), 2 * x) and torch.equal(t.b.cpu(), 4 * x)


# -- refused layouts ---------------------------------------------------------------------------------

def test_quantized_tensors_are_refused_clearly():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized creation functions are deprecated
        q = torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.qint8)
    with pytest.raises(NotImplementedError, match="neuron supports only dense.*quantized tensor on neuron"):
        q.to("neuron")


def test_sparse_tensors_are_refused_clearly():
    with pytest.raises(NotImplementedError, match="neuron supports only dense"):
        torch.randn(3, 3).to_sparse().to("neuron")


@pytest.mark.parametrize("call", [
    lambda s, d: torch.sparse.mm(s, d),
    lambda s, d: torch.mm(s, d),
    lambda s, d: s + d,
    lambda s, d: d.add_(s),
])
def test_sparse_cpu_tensor_mixed_with_neuron_is_named_a_device_mix(call):
    """A sparse CPU tensor with a dense neuron one dispatches to the sparse neuron key; the error
    says the tensors are on two devices (as CUDA's does) and names both fixes, and each fix gives
    the CPU's value."""
    s, dense = torch.eye(3).to_sparse(), torch.arange(6.0).reshape(3, 2)
    d = dense.to("neuron")
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*sparse CPU "
                                           r"tensor and neuron tensors.*\.cpu\(\).*to_dense"):
        call(s, d)
    torch.testing.assert_close(torch.mm(s.to_dense().to("neuron"), d).cpu(), torch.mm(s, dense))


@pytest.mark.parametrize("module", [torch.nn.Embedding, torch.nn.EmbeddingBag])
def test_sparse_embedding_gradients_name_the_fix(module):
    """A sparse gradient is the one sparse tensor an ordinary model makes by itself: both embedding
    modules fail in backward with the same exception type, naming ``sparse=False``; with it the
    gradient equals the CPU's."""
    idx = torch.tensor([[0, 2, 1, 2]])
    weight = torch.randn(5, 3)
    emb = module(5, 3, sparse=True).to("neuron")
    with torch.no_grad():
        emb.weight.copy_(weight)
    with pytest.raises(NotImplementedError, match="sparse=False"):
        emb(idx.to("neuron")).sum().backward()
    dense_cpu = module(5, 3, sparse=False)
    dense = module(5, 3, sparse=False).to("neuron")
    with torch.no_grad():
        dense_cpu.weight.copy_(weight)
        dense.weight.copy_(weight)
    dense_cpu(idx).pow(2).sum().backward()
    dense(idx.to("neuron")).pow(2).sum().backward()
    torch.testing.assert_close(dense.weight.grad.cpu(), dense_cpu.weight.grad)


def test_nested_tensors_are_refused_when_built_on_neuron():
    """Of neuron tensors: refused when built. Of CPU tensors with device="neuron" (PyTorch's
    composite builds that one under the CPU key): refused at its first op, ``.cpu()`` included."""
    x, y = torch.randn(2, device="neuron"), torch.randn(3, device="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        with pytest.raises(NotImplementedError, match="neuron supports only dense.*produced a nested tensor"):
            torch.nested.nested_tensor([x, y])
        with pytest.raises(NotImplementedError, match="produced a nested tensor"):
            torch.nested.as_nested_tensor([x, y])
        nt = torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], device="neuron")
    with pytest.raises(NotImplementedError, match="neuron supports only dense.*nested tensor on neuron"):
        nt + 1
    with pytest.raises(NotImplementedError, match="nested tensor on neuron"):
        nt.cpu()


def test_composite_ops_with_a_cpu_nested_kernel_refuse_a_nested_tensor_on_neuron():
    """matmul, linear, chunk, narrow have a NestedTensorCPU kernel of their own, because their
    composite kernel cannot take a nested tensor; on neuron the composite ran and stopped with
    "Internal error: NestedTensorImpl doesn't support sizes. Please file an issue." (matmul, linear).
    They now give the nested-tensor refusal naming the op; on the CPU they still compute."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        parts = [torch.randn(2, 3, 4), torch.randn(2, 2, 4)]
        others = [torch.randn(2, 4, 3), torch.randn(2, 4, 2)]
        nt = torch.nested.nested_tensor(parts, device="neuron")
        nt2 = torch.nested.nested_tensor(others, device="neuron")
        w = torch.randn(5, 4)
        for op, call in [("aten::matmul", lambda: torch.matmul(nt, nt2)),
                         ("aten::linear", lambda: torch.nn.functional.linear(nt, w.to("neuron"))),
                         ("aten::chunk", lambda: nt.chunk(2, -1)),
                         ("aten::narrow", lambda: nt.narrow(-1, 0, 2))]:
            with pytest.raises(NotImplementedError, match=f"neuron supports only dense.*{op} was called with a nested"):
                call()
        # The CPU's nested kernels are untouched: values equal the per-component results.
        cpu = torch.nested.nested_tensor(parts)
        got = torch.matmul(cpu, torch.nested.nested_tensor(others)).unbind()
        for g, a, b in zip(got, parts, others, strict=True):
            torch.testing.assert_close(g, a @ b)
        rows = [torch.randn(3, 4), torch.randn(2, 4)]
        for g, a in zip(torch.nn.functional.linear(torch.nested.nested_tensor(rows), w).unbind(), rows, strict=True):
            torch.testing.assert_close(g, a @ w.t())


_NESTED_OF_LEAVES = """
import warnings, torch
warnings.simplefilter("ignore")
a = torch.arange(6.0, device="neuron").reshape(2, 3).requires_grad_()
b = torch.arange(8.0, device="neuron").reshape(2, 4).requires_grad_()
try:
    torch.nested.as_nested_tensor([a, b])
except NotImplementedError as e:
    print("refused:", str(e).splitlines()[0])
# CPU leaves with device="neuron": PyTorch's composite builds this one under the CPU key
c, d = a.detach().cpu().requires_grad_(), b.detach().cpu().requires_grad_()
nt = torch.nested.as_nested_tensor([c, d], device="neuron")
ref = torch.nested.as_nested_tensor([c, d])
print("sizes:", torch.equal(nt._nested_tensor_size(), ref._nested_tensor_size()), nt.requires_grad)
try:
    nt + 1
except NotImplementedError as e:
    print("op refused:", str(e).splitlines()[0])
"""


def test_nested_tensor_of_neuron_leaves_raises_instead_of_aborting():
    """Autograd records a nested result by asking it for its nested sizes inside a noexcept
    function; a nested tensor built on neuron refused that query there, and the process aborted
    (``terminate called after throwing``; PyTorch's test_autograd builds such tensors). Neuron
    leaves are now refused when the nested tensor is built; CPU leaves with ``device="neuron"``
    (built by PyTorch's composite under the CPU key) give a nested tensor whose metadata queries
    answer as on the CPU and whose first computing op is refused. Run in a child process, so
    that an abort is a failure of this test and not of the suite."""
    import subprocess
    import sys

    from .processes import job_env, report

    proc = subprocess.run([sys.executable, "-c", _NESTED_OF_LEAVES], env=job_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, report(proc)
    assert "refused: neuron supports only dense (strided) tensors, but this op produced a nested tensor" \
        in proc.stdout, report(proc)
    assert "sizes: True True" in proc.stdout, report(proc)
    assert "op refused: neuron supports only dense (strided) tensors: aten::add.Tensor was called with a nested" \
        in proc.stdout, report(proc)


def test_op_tracking_counts_zero_tensors():
    torch_neuronx.clear_op_tracking()
    torch._efficientzerotensor(2, device="neuron")
    assert torch_neuronx.get_executed_ops().get("aten::_efficientzerotensor") == 1
