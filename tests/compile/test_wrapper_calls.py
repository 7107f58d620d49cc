"""The per-run calls of a compiled graph's wrapper (allocations, extern matmuls) without the eager
device path, and Inductor's CPU choices for small matmuls on ``neuron``: same values as the CPU,
same op counts and memory accounting as eager, the eager errors for misplaced operands."""
from __future__ import annotations

import re

import pytest
import torch

import torch_neuronx
from torch_neuronx.compile import wrapper_calls


def _ops() -> dict[str, int]:
    return dict(torch_neuronx.get_executed_ops())


def test_compiled_linear_counts_its_matmul_and_allocation_as_eager():
    torch.manual_seed(0)
    x, w, b = torch.randn(8, 16), torch.randn(32, 16), torch.randn(32)

    def f(x, w, b):
        return torch.nn.functional.linear(x, w, b).relu(), x @ w.t()

    want = f(x, w, b)
    compiled = torch.compile(f, backend="neuron")
    nx, nw, nb = x.to("neuron"), w.to("neuron"), b.to("neuron")
    compiled(nx, nw, nb)                                   # compile
    torch_neuronx.clear_op_tracking()
    before = torch.neuron.memory_allocated()
    got = compiled(nx, nw, nb)
    ops = _ops()
    assert ops.get("aten::mm.out", 0) + ops.get("aten::addmm.out", 0) == 2, ops
    assert ops.get("aten::empty_strided", 0) >= 2, ops   # each output buffer, accounted
    assert torch.neuron.memory_allocated() - before >= 2 * 8 * 32 * 4
    for g, w_ in zip(got, want, strict=True):
        assert g.device == torch.device("neuron:0")
        torch.testing.assert_close(g.cpu(), w_, rtol=1e-5, atol=1e-5)


def test_decode_shaped_attention_is_fused_as_on_cpu():
    """[B·H, 1, D] @ [B·H, D, L]: Inductor fuses it on the CPU (no BLAS call); so on neuron."""
    torch.manual_seed(0)
    q, k, v = torch.randn(4, 1, 64), torch.randn(4, 55, 64), torch.randn(4, 55, 64)

    def attend(q, k, v):
        return torch.softmax(q @ k.transpose(1, 2) / 8.0, dim=-1) @ v

    compiled = torch.compile(attend, backend="neuron")
    nq, nk, nv = (t.to("neuron") for t in (q, k, v))
    compiled(nq, nk, nv)
    torch_neuronx.clear_op_tracking()
    got = compiled(nq, nk, nv)
    assert not any(name.startswith("aten::bmm") for name in _ops()), _ops()
    torch.testing.assert_close(got.cpu(), attend(q, k, v), rtol=1e-5, atol=1e-5)
    # a bf16 matrix-vector product decomposed the same way stays within bf16 rounding of the CPU
    qb, kb = q.bfloat16(), k.bfloat16()
    got_b = torch.compile(lambda a, b: a @ b.transpose(1, 2), backend="neuron")(qb.to("neuron"), kb.to("neuron"))
    torch.testing.assert_close(got_b.cpu(), qb @ kb.transpose(1, 2), rtol=2e-2, atol=2e-2)


def test_extern_kernels_match_eager_and_raise_its_errors():
    torch.manual_seed(0)
    a, b, c = torch.randn(3, 5), torch.randn(5, 4), torch.randn(3, 4)
    na, nb, nc = a.to("neuron"), b.to("neuron"), c.to("neuron")
    out = torch.empty(3, 4, device="neuron")
    ek = wrapper_calls.extern_kernels
    ek.mm(na, nb, out=out)
    torch.testing.assert_close(out.cpu(), a @ b)
    ek.addmm(nc, na, nb, alpha=1, beta=1, out=out)
    torch.testing.assert_close(out.cpu(), c + a @ b)
    ek.addmm(nc, na, nb, alpha=2, beta=0.5, out=out)            # non-unit scalars: the eager path
    torch.testing.assert_close(out.cpu(), 0.5 * c + 2 * (a @ b))
    x, y = torch.randn(2, 3, 5), torch.randn(2, 5, 4)
    bout = torch.empty(2, 3, 4, device="neuron")
    ek.bmm(x.to("neuron"), y.to("neuron"), out=bout)
    torch.testing.assert_close(bout.cpu(), x @ y)
    ek.baddbmm(bout, x.to("neuron"), y.to("neuron"), out=bout.clone())   # delegated attribute lookups work
    assert ek.convolution is not None                      # any other kernel is Inductor's
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ek.mm(a, nb, out=out)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ek.mm(na, b, out=out)
    alloc = wrapper_calls.empty_strided_neuron((2, 3), (1, 2), torch.bfloat16)
    assert (alloc.device, alloc.shape, alloc.stride(), alloc.dtype) == (
        torch.device("neuron:0"), torch.Size([2, 3]), (1, 2), torch.bfloat16)


def test_fusion_thresholds_are_inductors_cpu_values():
    from torch._inductor import config

    from torch_neuronx.compile.aten_compile import INDUCTOR_PATCHES

    assert INDUCTOR_PATCHES["realize_opcount_threshold"] == config.realize_cpu_opcount_threshold
    assert INDUCTOR_PATCHES["realize_acc_reads_threshold"] == config.realize_cpu_acc_reads_threshold


def test_wrapper_calls_reject_bad_arguments_like_python():
    a, b = torch.randn(3, 5, device="neuron"), torch.randn(5, 4, device="neuron")
    out = torch.empty(3, 4, device="neuron")
    ek = wrapper_calls.extern_kernels
    assert ek.mm(a, b, out=out) is out                          # returns out itself, as torch.mm(out=)
    with pytest.raises(TypeError, match="missing required argument 'out'"):
        ek.mm(a, b)
    with pytest.raises(TypeError, match="argument 'mat2' must be a Tensor"):
        ek.mm(a, 3, out=out)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bias'"):
        ek.addmm(out, a, b, bias=1, out=out)
    with pytest.raises(TypeError, match="takes 2 positional arguments"):
        ek.mm(a, b, out)
    with pytest.raises(TypeError, match="'size' must be a tuple of ints"):
        wrapper_calls.empty_strided_neuron((2, "x"), (1, 1), torch.float32)
    with pytest.raises(TypeError, match="'dtype' must be a torch.dtype"):
        wrapper_calls.empty_strided_neuron((2,), (1,), 5)


def test_extern_products_take_described_views():
    """``(base, sizes, strides, offset)`` is the view ``reinterpret_tensor`` makes (offset counted
    from base's own storage offset): the CPU's values on that view, on the alias path and on
    the eager path, the same op counts, and the eager errors for a misplaced base."""
    torch.manual_seed(0)
    base, w, bias = torch.randn(40), torch.randn(4, 6), torch.randn(3, 6)
    nbase, nw = base.to("neuron"), w.to("neuron")
    out = torch.empty(3, 6, device="neuron")
    ek = wrapper_calls.extern_kernels
    torch_neuronx.clear_op_tracking()
    assert ek.mm((nbase, (3, 4), (1, 5), 2), nw, out=out) is out     # a transposed view at offset 2
    assert _ops().get("aten::mm.out") == 1, _ops()
    torch.testing.assert_close(out.cpu(), base.as_strided((3, 4), (1, 5), 2) @ w)
    ek.mm((nbase[4:], (3, 4), (1, 5), 2), (nw, (4, 6), (6, 1), 0), out=out)
    torch.testing.assert_close(out.cpu(), base.as_strided((3, 4), (1, 5), 6) @ w)
    ek.addmm(bias.to("neuron"), (nbase, (3, 4), (1, 5), 2), nw, alpha=2, beta=1, out=out)  # eager path
    torch.testing.assert_close(out.cpu(), bias + 2 * (base.as_strided((3, 4), (1, 5), 2) @ w))
    ek.addmm((bias.to("neuron"), (3, 6), (0, 1), 0), (nbase, (3, 4), (4, 1), 0), nw, out=out)
    torch.testing.assert_close(out.cpu(), bias[0] + base[:12].view(3, 4) @ w)
    batch1, batch2 = torch.randn(24), torch.randn(2, 4, 5)
    bout = torch.empty(2, 3, 5, device="neuron")
    ek.bmm((batch1.to("neuron"), (2, 3, 4), (12, 1, 3), 0), batch2.to("neuron"), out=bout)
    torch.testing.assert_close(bout.cpu(), batch1.as_strided((2, 3, 4), (12, 1, 3), 0) @ batch2)
    assert nbase.cpu().equal(base) and nw.cpu().equal(w)                # operands untouched
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ek.mm((base, (3, 4), (1, 5), 2), nw, out=out)
    with pytest.raises(TypeError, match="has 2 sizes but 1 strides"):
        ek.mm((nbase, (3, 4), (1,), 2), nw, out=out)
    with pytest.raises(TypeError, match="needs an int offset"):
        ek.mm((nbase, (3, 4), (1, 5), "2"), nw, out=out)
    with pytest.raises(TypeError, match="argument 'self' must be a Tensor, not tuple"):
        ek.mm((nbase, (3, 4), (1, 5)), nw, out=out)


def test_input_layout_check_is_inductors():
    """One call checks every input as Inductor's ``assert_size_stride(x, size, stride, 'input')``
    does: exact layouts pass, a size-1 dimension's stride is not compared, a mismatch raises
    Inductor's error naming the dimension."""
    x, row = torch.empty(3, 4, device="neuron"), torch.empty(1, 4, device="neuron")
    assert wrapper_calls.assert_input_layouts((x, row, x.t()), (
        ((3, 4), (4, 1)), ((1, 4), (99, 1)), ((4, 3), (1, 4)))) is None
    with pytest.raises(AssertionError, match=r"stride 1==3 at dim=0"):
        wrapper_calls.assert_input_layouts((x, x.t()), (((3, 4), (4, 1)), ((4, 3), (3, 1))))
    with pytest.raises(AssertionError, match=r"expected size 3==2"):
        wrapper_calls.assert_input_layouts((x,), (((2, 4), (4, 1)),))
    with pytest.raises(TypeError, match="two tuples of equal length"):
        wrapper_calls.assert_input_layouts((x, x), (((3, 4), (4, 1)),))


def test_generated_wrapper_checks_inputs_once_and_describes_matmul_views(tmp_path, monkeypatch):
    """The generated code of a ``neuron`` graph: one ``assert_input_layouts`` call instead of
    Inductor's per-input ``assert_size_stride``, extern matmuls given described views instead
    of ``reinterpret_tensor``; the results are the CPU's."""
    monkeypatch.setenv("TORCH_NEURONX_DEBUG_DIR", str(tmp_path))
    torch.manual_seed(0)
    x, w, b = torch.randn(5, 12), torch.randn(7, 12), torch.randn(7)

    def f(x, w, b):
        h = torch.nn.functional.linear(x, w) + b
        return h.relu() @ w, h.sum()

    got = torch.compile(f, backend="neuron")(x.to("neuron"), w.to("neuron"), b.to("neuron"))
    for g, want in zip(got, f(x, w, b), strict=True):
        torch.testing.assert_close(g.cpu(), want, rtol=1e-5, atol=1e-5)
    code = "\n".join(p.read_text() for p in tmp_path.iterdir() if p.name.endswith("_code.py"))
    call = code[code.index("def call("):]
    assert call.count("assert_input_layouts((") == 1 and "assert_size_stride(" not in call, call
    matmuls = [line.strip() for line in call.splitlines() if "extern_kernels." in line]
    assert matmuls and all("reinterpret_tensor" not in line for line in matmuls), matmuls
    described = re.compile(r"\(arg\d+_1, \([\d, ]*\), \([\d, ]*\), \d+\)")   # (w, sizes, strides, offset)
    assert any(described.search(line) for line in matmuls), matmuls
