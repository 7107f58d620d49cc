"""The boxed fallback's per-op path (csrc/aten/Fallback.cpp, Alias.cpp, Tracking.cpp).

Structured ops run their CPU kernel once (not PyTorch's composite + the out= kernel); results
are device tensors exactly like factory tensors; the CPU aliases of operands are recycled
between ops without keeping device memory alive or losing the overlap checks; op counts are
exact when several threads run ops.
"""
from __future__ import annotations

import threading

import pytest
import torch

import torch_neuronx


def N(t):  # noqa: N802  (short: it wraps nearly every tensor in these tests)
    return t.to("neuron")


def _ops(fn):
    torch_neuronx.clear_op_tracking()
    out = fn()
    return out, torch_neuronx.get_executed_ops()


@pytest.mark.parametrize("name,fn,op", [
    ("add", lambda a, b: torch.add(a, b, alpha=2), "aten::add.Tensor"),
    ("mul_", lambda a, b: a.clone().mul_(b), "aten::mul_.Tensor"),
    ("exp", lambda a, b: torch.exp(a), "aten::exp"),
    ("where", lambda a, b: torch.where(a > b, a, b), "aten::where.self"),
    ("mm", lambda a, b: a @ b.T, "aten::mm"),
])
def test_structured_ops_run_their_cpu_kernel_once(name, fn, op):
    torch.manual_seed(0)
    a, b = torch.randn(5, 7), torch.randn(5, 7)
    expected = fn(a, b)
    out, ops = _ops(lambda: fn(N(a), N(b)))
    assert torch.equal(out.cpu(), expected)
    assert ops.get(op) == 1
    # Not the composite kernel: no separate output allocation, no out= variant.
    assert "aten::empty.memory_format" not in ops and not any(k.endswith(".out") for k in ops)


def test_results_are_device_tensors_like_factory_ones():
    a = N(torch.randn(4, 3))
    r = a * 3
    factory = torch.empty(2, device="neuron")
    assert r.device == torch.device("neuron:0")
    assert torch._C._dispatch_keys(r) == torch._C._dispatch_keys(factory)
    assert r.untyped_storage().device == r.device
    r.add_(1)  # in-place on a relabelled result
    assert torch.equal(r.cpu(), a.cpu() * 3 + 1)
    with torch.inference_mode():
        ri = a * 3
        assert ri.is_inference()
        assert torch._C._dispatch_keys(ri) == torch._C._dispatch_keys(torch.empty(2, device="neuron"))
    b = torch.randn(3, device="neuron:1")
    before = torch.neuron.memory_allocated(1)
    r1 = b + 1
    assert r1.device == torch.device("neuron:1")
    assert torch.neuron.memory_allocated(1) - before == r1.untyped_storage().nbytes()


def test_recycled_aliases_keep_no_device_memory():
    x = N(torch.randn(1 << 18))
    base = torch.neuron.memory_allocated()
    y = x + 1
    assert torch.neuron.memory_allocated() - base == y.untyped_storage().nbytes()
    del x  # no alias of x is kept by the fallback: its memory goes at once
    assert torch.neuron.memory_allocated() - base == y.untyped_storage().nbytes() - (1 << 20)
    del y
    assert torch.neuron.memory_allocated() == base - (1 << 20)


@pytest.mark.filterwarnings("ignore:neuron. float64")
def test_recycled_aliases_take_each_operands_metadata():
    """One alias object serves operands of other dtypes, shapes, strides, offsets, conj bits
    and inference modes in turn: every result must still equal the CPU's."""
    torch.manual_seed(0)
    z = torch.randn(4, 3, dtype=torch.complex64)
    cases = [
        lambda t: t["z"].conj() * 2,  # conjugate view operand
        lambda t: t["z"] * 2,  # the same alias again, without the conj bit
        lambda t: t["f"][1:, ::2] + t["f"][:-1, 1::2],  # offsets and strides
        lambda t: t["i"] * 3,  # another dtype
        lambda t: t["b"].T @ t["b"],  # bf16, transposed
        lambda t: t["f"].sum(0),
    ]
    cpu = {"z": z, "f": torch.randn(5, 6), "i": torch.arange(12).reshape(3, 4),
           "b": torch.randn(4, 4).bfloat16()}
    dev = {k: N(v) for k, v in cpu.items()}
    for _ in range(2):
        for case in cases:
            assert torch.equal(case(dev).cpu(), case(cpu))
            with torch.inference_mode():
                assert torch.equal(case(dev).cpu(), case(cpu))


def test_overlapping_operands_are_still_detected():
    """Operands that share a storage share one CPU alias storage, so the CPU kernel's overlap
    check sees them (a silent wrong result otherwise)."""
    for dev in ("cpu", "neuron"):
        x = torch.arange(6.0, device=dev)
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            x[1:].mul_(x[:-1])


def test_op_counts_are_exact_across_threads():
    a = N(torch.ones(8))
    torch_neuronx.clear_op_tracking()

    def work():
        for _ in range(500):
            torch.add(a, a)
            torch.mul(a, a)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ops = torch_neuronx.get_executed_ops()
    assert ops.get("aten::add.Tensor") == 2000
    assert ops.get("aten::mul.Tensor") == 2000
    torch_neuronx.clear_op_tracking()
    assert torch_neuronx.get_executed_ops() == {}
    torch.add(a, a)  # counted again after a clear (each thread caches its entries)
    assert torch_neuronx.get_executed_ops() == {"aten::add.Tensor": 1}


def test_a_cuda_only_op_names_itself_instead_of_a_cpu_backend():
    """An op PyTorch implements for CUDA only (no CPU kernel for the fallback to run) stops with
    an error naming the op and the device, not the dispatcher's "'CPU' backend" message."""
    x = torch.ones(4, device="neuron")
    with pytest.raises(NotImplementedError, match=r"aten::_fused_dropout has no kernel on this device.*CUDA only"):
        torch._fused_dropout(x, 0.5)


def test_transformer_encoder_fast_path_nested_tensor_is_refused_with_the_fix():
    """nn.TransformerEncoder's inference fast path builds a nested tensor by itself; on neuron that
    is a clear NotImplementedError naming enable_nested_tensor=False, which gives the CPU's values."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    x = torch.randn(2, 5, 8)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    enc = torch.nn.TransformerEncoder(layer, 2).eval()
    with torch.no_grad():
        want = enc(x, src_key_padding_mask=mask)
        with pytest.raises(NotImplementedError, match="enable_nested_tensor=False"):
            enc.to("neuron")(x.to("neuron"), src_key_padding_mask=mask.to("neuron"))
        dense = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
        got = dense.to("neuron")(x.to("neuron"), src_key_padding_mask=mask.to("neuron")).cpu()
    keep = ~mask[..., None]  # padded positions hold unspecified values in the nested path
    torch.testing.assert_close(got * keep, want * keep, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "name, fn",
    [
        ("ldexp_", lambda a, b: a.ldexp_(b)),  # its composite runs mul.out(self, 2**other, out=self)
        ("mul out=self", lambda a, b: torch.mul(a, b, out=a)),
    ],
)
def test_an_output_that_is_also_an_input_is_not_resized(name, fn):
    # TensorIterator refuses to resize an out= that is also an input, recognising it by identity;
    # the fallback gives the tensor one alias so the CPU kernel sees that. Found by PyTorch's
    # TestCommon.test_variant_consistency_eager (ldexp_ resized self to the broadcast shape).
    for device in ("cpu", "neuron"):
        a = torch.ones(3, device=device)
        b = torch.ones(2, 3, dtype=torch.int64, device=device)
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            fn(a, b)
        assert a.shape == (3,)
