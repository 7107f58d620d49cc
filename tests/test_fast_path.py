"""The unboxed kernels of the hottest ops (csrc/aten/FastPath.cpp) against the CPU and the boxed fallback.

Each op is run on `neuron` and on the CPU with the same operands: values must be equal (the same
CPU kernel runs; matmuls are compared with fp32 tolerance rtol 1.3e-6, atol 1e-5), the result must be
accounted to the operands' core exactly like the boxed fallback's result, counted once in the op
tracking, and every call the fast path does not cover (CPU operands, fp64, two cores, inference
mode, autograd) must behave as before.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx

G = torch.Generator().manual_seed(0)


def r(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=G).to(dtype)


# name -> (ATen op counted, function of the operands, CPU operands)
CASES = {
    "mul": ("aten::mul.Tensor", lambda a, b: a * b, lambda: (r(4, 8), r(8))),
    "add": ("aten::add.Tensor", lambda a, b: torch.add(a, b, alpha=0.5), lambda: (r(3, 5), r(3, 5))),
    "sub": ("aten::sub.Tensor", lambda a, b: a - b, lambda: (r(3, 5), r(1, 5))),
    "div": ("aten::div.Tensor", lambda a, b: a / b, lambda: (r(6), r(6).abs() + 1)),
    "mm": ("aten::mm", torch.mm, lambda: (r(5, 7), r(7, 3))),
    "bmm": ("aten::bmm", torch.bmm, lambda: (r(2, 5, 7), r(2, 7, 3))),
    "addmm": ("aten::addmm", lambda b, m1, m2: torch.addmm(b, m1, m2, beta=0.5, alpha=2.0),
              lambda: (r(3), r(4, 6), r(6, 3))),
    "cat": ("aten::cat", lambda a, b: torch.cat([a, b], dim=-2), lambda: (r(1, 4, 9, 8), r(1, 4, 1, 8))),
    "mean": ("aten::mean.dim", lambda a: a.mean(-1, keepdim=True), lambda: (r(2, 3, 16),)),
    "pow": ("aten::pow.Tensor_Scalar", lambda a: a.pow(2), lambda: (r(2, 16),)),
    "rsqrt": ("aten::rsqrt", lambda a: torch.rsqrt(a), lambda: (r(9).abs() + 0.1,)),
    "neg": ("aten::neg", lambda a: -a, lambda: (r(2, 6),)),
    "silu": ("aten::silu", F.silu, lambda: (r(2, 6),)),
    "softmax": ("aten::_softmax", lambda a: a.softmax(-1), lambda: (r(3, 10),)),
    "exp": ("aten::exp", torch.exp, lambda: (r(5),)),
    "sum": ("aten::sum.dim_IntList", lambda a: a.sum((0, 2)), lambda: (r(2, 3, 4),)),
    "gelu": ("aten::gelu", lambda a: F.gelu(a, approximate="tanh"), lambda: (r(7),)),
    "tanh": ("aten::tanh", torch.tanh, lambda: (r(7),)),
    "sigmoid": ("aten::sigmoid", torch.sigmoid, lambda: (r(7),)),
}
MATMULS = {"mm", "bmm", "addmm"}


def check_close(name, got, want):
    assert got.device.type == "neuron"
    assert got.dtype == want.dtype and got.shape == want.shape and got.stride() == want.stride()
    if name in MATMULS:
        torch.testing.assert_close(got.cpu(), want, rtol=1.3e-6, atol=1e-5)
    else:
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_accounting_and_count(name):
    op_name, fn, make = CASES[name]
    cpu = make()
    dev = [t.to("neuron") for t in cpu]
    want = fn(*cpu)
    before = torch.neuron.memory_allocated()
    torch_neuronx.clear_op_tracking()
    got = fn(*dev)
    assert torch_neuronx.get_executed_ops().get(op_name) == 1
    assert not torch_neuronx.get_fallback_ops()
    check_close(name, got, want)
    # Exactly the result's bytes are accounted to the core, and given back with it.
    assert torch.neuron.memory_allocated() - before == got.untyped_storage().nbytes()
    del got
    assert torch.neuron.memory_allocated() == before


@pytest.mark.parametrize("name", sorted(CASES))
def test_noncontiguous_low_precision_and_second_core(name):
    op_name, fn, make = CASES[name]
    cpu = [t.to(torch.bfloat16) for t in make()]
    # Transposed twice: same values, non-contiguous strides for every operand with two dims.
    cpu = [t.transpose(-1, -2).contiguous().transpose(-1, -2) if t.dim() >= 2 else t for t in cpu]
    dev = [t.to("neuron:1") for t in cpu]
    before = torch.neuron.memory_allocated(1)
    got = fn(*dev)
    assert got.device == torch.device("neuron:1")
    want = fn(*cpu)
    assert got.dtype == want.dtype and got.shape == want.shape
    if name in MATMULS:
        torch.testing.assert_close(got.cpu(), want, rtol=1.6e-2, atol=1e-2)
    else:
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)
    assert torch.neuron.memory_allocated(1) - before == got.untyped_storage().nbytes()


def test_inference_mode_and_back():
    a, b = r(4, 4), r(4, 4)
    da, db = a.to("neuron"), b.to("neuron")
    for _ in range(3):  # aliases recycled across the two modes
        with torch.inference_mode():
            x = da * db
            assert x.is_inference()
            torch.testing.assert_close(x.cpu(), a * b, rtol=0, atol=0)
        y = torch.mm(da, db)
        assert not y.is_inference()
        torch.testing.assert_close(y.cpu(), a @ b, rtol=1.3e-6, atol=1e-5)


def test_cpu_scalars_are_taken_and_cpu_tensors_refused():
    a = r(3, 4)
    da = a.to("neuron")
    torch.testing.assert_close((da * 2.5).cpu(), a * 2.5, rtol=0, atol=0)
    torch.testing.assert_close((da + torch.tensor(1.5)).cpu(), a + 1.5, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*neuron:0 and cpu"):
        da * a
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device"):
        torch.mm(da, a.t())
    with pytest.raises(RuntimeError, match=r"neuron:0 and neuron:1"):
        torch.cat([da, a.to("neuron:1")])
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied"):
        torch.mm(da, da)


def test_fp64_counts_as_host_fallback():
    a = torch.randn(5, dtype=torch.float64)
    with warnings.catch_warnings():  # the fp64 warning (once per process) is tested elsewhere
        warnings.simplefilter("ignore")
        da = a.to("neuron")
        torch_neuronx.clear_op_tracking()
        got = da * da
    assert torch.equal(got.cpu(), a * a)
    assert torch_neuronx.get_fallback_ops().get("aten::mul.Tensor") == 1


def test_cat_of_many_tensors_and_an_empty_one():
    parts = [r(2, 3) for _ in range(12)] + [torch.empty(0, 3)]
    got = torch.cat([p.to("neuron") for p in parts])
    torch.testing.assert_close(got.cpu(), torch.cat(parts), rtol=0, atol=0)


def test_autograd_through_the_fast_ops():
    a, w, b = r(4, 6), r(6, 3), r(4, 3)
    grads = []
    for dev in ("cpu", "neuron"):
        ta, tw, tb = (t.detach().to(dev).requires_grad_() for t in (a, w, b))
        h = torch.cat([F.silu(torch.mm(ta, tw)) * tb, (ta.pow(2).mean(-1, keepdim=True) + 1).rsqrt()], dim=1)
        (-h).sum().backward()
        grads.append([t.grad.cpu() for t in (ta, tw, tb)])
    for got, want in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(got, want, rtol=1.3e-6, atol=1e-5)


def test_read_aliases_follow_reused_memory_and_keep_nothing_alive():
    # Freed blocks come back at the same address: each round's operands reuse the aliases of the
    # round before (same bytes, same layout), whatever the new values, shapes and strides are.
    before = torch.neuron.memory_allocated()
    for i in range(6):
        a, b = r(8, 16), r(16)
        da, db = a.to("neuron"), b.to("neuron")
        if i % 2:
            da, a = da.t(), a.t()  # same storage, other strides
            db, b = db[:8], b[:8]  # same storage, fewer bytes read
        torch.testing.assert_close((da * db).cpu(), a * b, rtol=0, atol=0)
        torch.testing.assert_close(torch.cat([da, da]).cpu(), torch.cat([a, a]), rtol=0, atol=0)
        da.add_(1.0)  # written between two reads of the same operand
        a.add_(1.0)
        torch.testing.assert_close((da * db).cpu(), a * b, rtol=0, atol=0)
        del a, b, da, db
        assert torch.neuron.memory_allocated() == before
    x = torch.arange(12.0).to("neuron")
    torch.testing.assert_close((-x).cpu(), -torch.arange(12.0), rtol=0, atol=0)
    x.resize_(40)  # new memory for the same tensor
    x.fill_(2.0)
    torch.testing.assert_close((-x).cpu(), torch.full((40,), -2.0), rtol=0, atol=0)


def test_sdpa_read_aliases_and_philox_accounting():
    q, k, v = r(1, 4, 3, 8), r(1, 4, 5, 8), r(1, 4, 5, 8)
    dq, dk, dv = (t.to("neuron") for t in (q, k, v))
    want = F.scaled_dot_product_attention(q, k, v)
    before = torch.neuron.memory_allocated()
    torch_neuronx.clear_op_tracking()
    out = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(dq, dk, dv)
    ops = torch_neuronx.get_executed_ops()
    assert ops["aten::_scaled_dot_product_fused_attention_overrideable"] == 1
    assert ops["aten::empty.memory_format"] == 2  # the 0-dim philox seed and offset
    seed, offset = out[6], out[7]
    assert seed.device.type == "neuron" and seed.dim() == 0 and seed.dtype == torch.int64
    assert offset.device.type == "neuron" and offset.dim() == 0 and offset.dtype == torch.int64
    alive = out[0].untyped_storage().nbytes() + out[1].untyped_storage().nbytes()
    alive += seed.untyped_storage().nbytes() + offset.untyped_storage().nbytes()
    assert torch.neuron.memory_allocated() - before == alive
    torch.testing.assert_close(out[0].cpu(), want, rtol=1.3e-6, atol=1e-5)
    del out, seed, offset
    assert torch.neuron.memory_allocated() == before


def test_read_alias_cache_many_layouts_of_one_block_and_more_keys_than_it_holds():
    # One block seen with several layouts (each takes its own way of the cache), then more distinct
    # (address, layout) keys than the cache's 512 aliases, twice: every result equals the CPU's.
    base = r(256)
    dbase = base.to("neuron")
    layouts = [lambda t: t, lambda t: t.view(4, 64), lambda t: t.view(1, 4, 1, 64),
               lambda t: t.view(4, 64).t(), lambda t: t.view(2, 2, 64).transpose(0, 2),
               lambda t: t[3:131], lambda t: t.view(16, 16)[::2]]
    for _ in range(3):
        for f in layouts:
            torch.testing.assert_close((f(dbase) * 3.0).cpu(), f(base) * 3.0, rtol=0, atol=0)
            torch.testing.assert_close(torch.add(f(dbase), f(dbase)).cpu(), f(base) + f(base),
                                       rtol=0, atol=0)
    many = [r(i % 7 + 1, i % 5 + 2) for i in range(700)]
    dmany = [t.to("neuron") for t in many]
    for _ in range(2):
        for a, da in zip(many, dmany, strict=True):
            torch.testing.assert_close(torch.neg(da).cpu(), -a, rtol=0, atol=0)


def test_boxed_ops_read_operands_values_views_and_accounting():
    # Boxed-fallback ops (no unboxed kernel): read-only operands take cached aliases.
    x, y = r(4, 6), r(4, 6)
    cond = x > 0
    dx, dy, dcond = x.to("neuron"), y.to("neuron"), cond.to("neuron")
    before = torch.neuron.memory_allocated()
    for _ in range(3):
        torch.testing.assert_close(torch.where(dcond, dx, dy).cpu(), torch.where(cond, x, y),
                                   rtol=0, atol=0)
        torch.testing.assert_close(torch.where(dcond, 0.5, dy).cpu(), torch.where(cond, 0.5, y),
                                   rtol=0, atol=0)
        torch.testing.assert_close(torch.maximum(dx.t(), dy.t()).cpu(), torch.maximum(x.t(), y.t()),
                                   rtol=0, atol=0)
        ids, pool = torch.tensor([3, 9, 1, 4]), torch.tensor([1, 2, 3])
        torch.testing.assert_close(torch.isin(ids.to("neuron"), pool.to("neuron")).cpu(),
                                   torch.isin(ids, pool), rtol=0, atol=0)
        torch.testing.assert_close(torch.index_select(dx, 1, torch.tensor([5, 0]).to("neuron")).cpu(),
                                   torch.index_select(x, 1, torch.tensor([5, 0])), rtol=0, atol=0)
        # A boxed view op of a read operand: a neuron view of the same memory.
        v = torch.ops.aten.alias(dx)
        assert v.device.type == "neuron" and v.untyped_storage().data_ptr() == dx.untyped_storage().data_ptr()
        del v
    assert torch.neuron.memory_allocated() == before


def test_boxed_written_operand_sharing_memory_with_a_read_one_keeps_overlap_errors():
    # out= and in-place ops whose read operand overlaps the written one: same error as on the CPU.
    x = torch.arange(10.0)
    dx = x.to("neuron")
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.add(x[:-1], 1.0, out=x[1:])
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.add(dx[:-1], 1.0, out=dx[1:])
    with pytest.raises(RuntimeError, match="single memory location"):
        dx[1:].mul_(dx[:-1])
    # Exact overlap is allowed, as on the CPU.
    x.add_(x)
    dx.add_(dx)
    torch.testing.assert_close(dx.cpu(), x, rtol=0, atol=0)
    out, dout = torch.empty(10), torch.empty(10, device="neuron")
    torch.add(x, x, out=out)
    torch.add(dx, dx, out=dout)
    torch.testing.assert_close(dout.cpu(), out, rtol=0, atol=0)


def test_copies_through_cached_aliases():
    a, b = r(5, 8), r(8, 5)
    da, db = a.to("neuron"), b.to("neuron")
    torch_neuronx.clear_op_tracking()
    for _ in range(3):
        da.copy_(db.t())  # device to device, a transposed source
        torch.testing.assert_close(da.cpu(), b.t(), rtol=0, atol=0)
        db[:, 1].copy_(torch.arange(8.0))  # host to a strided device view
        b[:, 1].copy_(torch.arange(8.0))
        torch.testing.assert_close(db.cpu(), b, rtol=0, atol=0)
        host = torch.empty(8, 5)
        host.copy_(db)  # device to host
        torch.testing.assert_close(host, b, rtol=0, atol=0)
        c = torch.arange(12.0)
        dc = c.to("neuron")
        dc[0:4].copy_(dc[6:10])  # disjoint views of one storage
        c[0:4].copy_(c[6:10])
        torch.testing.assert_close(dc.cpu(), c, rtol=0, atol=0)
        with pytest.raises(RuntimeError, match="single memory location"):
            dc[2:8].copy_(dc[4:10])  # overlapping views: the CPU's error
    assert torch_neuronx.get_executed_ops()["aten::_copy_from"] >= 12


def test_fill_in_place_values_views_dtypes_and_count():
    torch_neuronx.clear_op_tracking()
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):
        x = torch.zeros(4, 6, dtype=dtype)
        dx = x.to("neuron")
        same = dx.fill_(1)
        assert same is dx
        dx[:, 2].fill_(0)  # a strided view: only its elements change
        dx[1:3, ::2].fill_(1)
        x.fill_(1)
        x[:, 2].fill_(0)
        x[1:3, ::2].fill_(1)
        torch.testing.assert_close(dx.cpu(), x, rtol=0, atol=0)
    s = torch.tensor(2.0).to("neuron")
    s.fill_(-3.5)
    assert s.item() == -3.5
    assert torch_neuronx.get_executed_ops()["aten::fill_.Scalar"] == 4 * 3 + 1
    assert "aten::fill_.Scalar" not in torch_neuronx.get_fallback_ops()
    d = torch.zeros(3, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dd = d.to("neuron")
        torch_neuronx.clear_op_tracking()
        dd.fill_(7)  # fp64: the boxed fallback, counted as a host fallback
    assert torch_neuronx.get_fallback_ops()["aten::fill_.Scalar"] == 1
    torch.testing.assert_close(dd.cpu(), torch.full((3,), 7.0, dtype=torch.float64), rtol=0, atol=0)
