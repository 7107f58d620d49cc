"""nki_op / wrap_nki: NKI kernels as torch ops on neuron tensors (zero-copy inputs, in-place mutable
inputs, kernel cache, device/dtype errors, fake tensors and torch.compile, autograd)."""
import numpy as np
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from torch_neuronx import nki
import torch_neuronx.nki.language as nl
import torch_neuronx.nki.typing as nt
from torch_neuronx.nki.errors import NKIError
from torch_neuronx.nki.torch_op import (NKI_OPS, SymbolicShapeError, clear_kernel_cache, kernel_cache, nki_op,
                                        tensor_to_numpy, wrap_nki)


@nki.jit
def add_kernel(a, b):
    """SPMD [N // 128] grid of [128, M] tiles."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    iy = nl.arange(a.shape[1])[None, :]
    nl.store(out[ix, iy], value=nl.load(a[ix, iy]) + nl.load(b[ix, iy]))
    return out


@nki.jit
def scaled_add_inplace(a, scale, b: nt.mutable_tensor):
    ix = nl.arange(a.shape[0])[:, None]
    iy = nl.arange(a.shape[1])[None, :]
    nl.store(b[ix, iy], value=nl.load(a[ix, iy]) * scale + nl.load(b[ix, iy]))
    return b


@nki.jit
def writes_its_input(a):
    nl.store(a, value=nl.load(a))
    return a


@nki_op("test_nki_op::add", mutates_args=())
def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return wrap_nki(add_kernel)[a.shape[0] // 128](a, b)


@nki_op("test_nki_op::scaled_add_", mutates_args={"b"})
def scaled_add_(a: torch.Tensor, scale: float, b: torch.Tensor) -> torch.Tensor:
    return scaled_add_inplace(a, scale, b)


@nki_op("test_nki_op::bad", mutates_args=())
def bad(a: torch.Tensor) -> torch.Tensor:
    return writes_its_input(a)


def _pair(dtype=torch.float32, shape=(256, 64)):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=g).to(dtype).to("neuron") for _ in range(2)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_op_matches_torch_and_stays_on_device(dtype):
    a, b = _pair(dtype)
    out = add(a, b)
    assert out.device == a.device and out.dtype == dtype and out.shape == a.shape
    torch.testing.assert_close(out.cpu(), a.cpu() + b.cpu())     # same rounding as torch's add
    torch.testing.assert_close(torch.ops.test_nki_op.add(a, b).cpu(), out.cpu())


def test_inputs_are_zero_copy_views():
    a, _ = _pair(torch.bfloat16)
    view = tensor_to_numpy(a)
    assert view.ctypes.data == a.data_ptr() and str(view.dtype) == "bfloat16"
    view[0, 0] = 3.0
    assert a[0, 0].item() == 3.0


def test_first_call_compiles_later_calls_reuse():
    clear_kernel_cache()
    a, b = _pair()
    add(a, b)
    add(a * 2, b)
    (entry,) = [e for e in kernel_cache() if e.name == "add_kernel"]
    assert entry.calls == 1 and entry.instructions > 0
    assert entry.outputs == [("tensor", (256, 64), torch.float32)]
    assert entry.estimated_latency_us > 0                          # cost-model estimate
    add(*_pair(shape=(128, 64)))                                   # new shape: a new compile
    assert len([e for e in kernel_cache() if e.name == "add_kernel"]) == 2


def test_mutable_input_is_updated_in_place():
    a, b = _pair(shape=(64, 32))
    b_before, ptr = b.cpu().clone(), b.data_ptr()
    out = scaled_add_(a, 2.0, b)
    assert b.data_ptr() == ptr
    torch.testing.assert_close(b.cpu(), a.cpu() * 2 + b_before)
    torch.testing.assert_close(out.cpu(), b.cpu())
    assert out.data_ptr() != b.data_ptr()                          # custom_op outputs never alias inputs


def test_cpu_and_unsupported_dtypes_are_refused():
    a, b = _pair()
    with pytest.raises(RuntimeError, match="neuron tensors"):
        add(a.cpu(), b.cpu())
    with pytest.raises(TypeError, match="float64"):
        add(a.double(), b.double())


def test_simulator_rule_errors_surface_through_the_op():
    a, _ = _pair(shape=(64, 32))
    with pytest.raises(NKIError, match="err_cannot_update_immutable_parameter"):
        bad(a)


def test_fake_tensors_get_shapes_without_device_memory():
    clear_kernel_cache()
    with FakeTensorMode() as mode:
        a = mode.from_tensor(torch.empty(384, 16, device="neuron"))
        out = add(a, a)
    assert out.shape == (384, 16) and out.device.type == "neuron"
    (entry,) = kernel_cache()                       # inferred once from zero placeholders
    assert entry.instructions == 0 and entry.outputs == [("tensor", (384, 16), torch.float32)]


def test_compiled_graph_has_one_node_per_call_and_matches_eager():
    seen = []

    def backend(gm, inputs):
        seen.extend(n.target for n in gm.graph.nodes if n.op == "call_function")
        from torch._dynamo.backends.debugging import aot_eager
        return aot_eager(gm, inputs)

    def f(x, y):
        z = y * 1.0
        scaled_add_(x, 3.0, z)
        return add(x * 2, z).relu()

    x, y = _pair(shape=(128, 64))
    torch._dynamo.reset()
    out = torch.compile(f, backend=backend, fullgraph=True)(x, y)
    assert seen.count(torch.ops.test_nki_op.add.default) == 1
    assert seen.count(torch.ops.test_nki_op.scaled_add_.default) == 1
    torch.testing.assert_close(out.cpu(), f(x, y).cpu())
    assert "test_nki_op::add" in NKI_OPS


def test_register_autograd_trains_through_the_op_compiled():
    add.register_autograd(lambda ctx, g: (g, g))
    x, y = (t.requires_grad_() for t in _pair(shape=(128, 32)))
    torch._dynamo.reset()
    loss = torch.compile(lambda a, b: (add(a, b) ** 2).sum(), backend="aot_eager", fullgraph=True)(x, y)
    loss.backward()
    torch.testing.assert_close(x.grad.cpu(), 2 * (x + y).detach().cpu())
    torch.testing.assert_close(y.grad.cpu(), x.grad.cpu())


def test_nki_jit_kernel_called_with_numpy_is_unchanged():
    a = np.ones((128, 8), np.float32)
    np.testing.assert_array_equal(add_kernel[1](a, a), 2 * a)


@nki.jit
def xor_u32(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.bitwise_xor(nl.load(a), nl.load(b)))
    return out


def test_unsigned_16_and_32_bit_tensors_are_kernel_inputs_and_outputs():
    # nl.uint16 / nl.uint32 are NKI dtypes (AWS's MXFP tutorial hands packed x4 data over as uint32 tensors)
    rng = np.random.default_rng(3)
    for np_dt, t_dt in ((np.uint32, torch.uint32), (np.uint16, torch.uint16)):
        a = rng.integers(0, np.iinfo(np_dt).max, size=(128, 64), dtype=np_dt)
        b = rng.integers(0, np.iinfo(np_dt).max, size=(128, 64), dtype=np_dt)
        out = xor_u32(torch.from_numpy(a).to("neuron"), torch.from_numpy(b).to("neuron"))
        assert out.device.type == "neuron" and out.dtype == t_dt
        np.testing.assert_array_equal(out.cpu().numpy(), a ^ b)


def test_symbolic_shapes_are_refused_with_the_static_shape_fix():
    # torch.export with a dynamic dimension traces the fake implementation with a SymInt size; it
    # failed with "unhashable type: non-nested SymInt". The error now names the symbolic size and
    # the ways to keep it static; static export still runs and matches eager.
    a, b = _pair()

    class M(torch.nn.Module):
        def forward(self, x, y):
            return add(x, y)

    n = torch.export.Dim("n")
    with pytest.raises(SymbolicShapeError, match=r"shape \(256, s\d+\).*static shapes.*dynamic=False"):
        torch.export.export(M(), (a, b), dynamic_shapes=({1: n}, {1: n}))
    got = torch.export.export(M(), (a, b)).module()(a, b)
    assert got.device == a.device
    torch.testing.assert_close(got.cpu(), a.cpu() + b.cpu())


def test_empty_input_names_the_empty_grid():
    # zero rows give the grid [0 // 128] = [0]: no program instance runs and nothing is written
    a = torch.ones(0, 64, device="neuron")
    with pytest.raises(NKIError, match=r"empty grid \[0\].*no program instance ran.*skip the launch"):
        add(a, a)
