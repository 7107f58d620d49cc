"""``torch.autocast("neuron")``: the cast policy PyTorch registers for CUDA, op by op.

Lower-precision ops run in the autocast dtype, fp32 ops in float32, ``torch.norm``'s dtype-less
overloads redispatch with a float32 dtype, and ``binary_cross_entropy`` is refused with the fix
(``binary_cross_entropy_with_logits``), as on CUDA; ``avg_pool3d``, which has no bf16/fp16 CPU kernel,
runs in float32 as under the CPU's autocast. Values are checked against the CPU computing the same
thing in the dtype the policy picks.
"""
from __future__ import annotations

import pytest
import torch


def test_matmul_runs_in_the_autocast_dtype_and_exp_in_float32():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with torch.autocast("neuron", dtype=torch.bfloat16):
        mm = a.to("neuron") @ b.to("neuron")
        ex = torch.exp(torch.randn(3, dtype=torch.bfloat16).to("neuron"))
    assert mm.dtype == torch.bfloat16 and ex.dtype == torch.float32
    torch.testing.assert_close(mm.cpu(), a.bfloat16() @ b.bfloat16(), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_norm_without_dtype_runs_in_float32(dtype):
    # CUDA's autocast sends aten::norm.Scalar / norm.ScalarOpt_dim to their dtype overloads with
    # float32 (a low-precision sum of squares overflows or loses the small terms). torch.norm itself
    # goes through linalg.vector_norm; jit scripts and decompositions call these overloads.
    aten = torch.ops.aten
    x = (torch.randn(6, 5) * 300).to(dtype)
    with torch.autocast("neuron", dtype=dtype):
        whole = aten.norm.Scalar(x.to("neuron"), 2)
        rows = aten.norm.ScalarOpt_dim(x.to("neuron"), 2, [1], False)
    assert whole.dtype == torch.float32 and rows.dtype == torch.float32
    torch.testing.assert_close(whole.cpu(), aten.norm.ScalarOpt_dtype(x, 2, dtype=torch.float32), rtol=0, atol=0)
    torch.testing.assert_close(
        rows.cpu(), aten.norm.ScalarOpt_dim_dtype(x, 2, [1], False, dtype=torch.float32), rtol=0, atol=0)


def test_binary_cross_entropy_is_refused_with_the_fix():
    p = torch.rand(2, 3, device="neuron")
    y = torch.rand(2, 3, device="neuron")
    with torch.autocast("neuron", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast.*binary_cross_entropy_with_logits"):
            torch.nn.functional.binary_cross_entropy(p, y)
        # The safe form runs, in float32 (PyTorch's fp32 list).
        loss = torch.nn.functional.binary_cross_entropy_with_logits(p, y)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(
        loss.cpu(), torch.nn.functional.binary_cross_entropy_with_logits(p.cpu(), y.cpu()), rtol=1e-6, atol=0)
    # Outside autocast binary_cross_entropy runs as on the CPU.
    torch.testing.assert_close(
        torch.nn.functional.binary_cross_entropy(p, y).cpu(),
        torch.nn.functional.binary_cross_entropy(p.cpu(), y.cpu()), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_avg_pool3d_after_a_conv3d_runs_in_float32(dtype):
    # CUDA leaves avg_pool3d in the autocast dtype, but its CPU kernel (the one the device runs) has
    # no bf16/fp16: the conv3d's low-precision output used to stop with "avg_pool3d_out_frame not
    # implemented for 'BFloat16'". It runs in float32, as under the CPU's autocast.
    torch.manual_seed(0)
    conv = torch.nn.Conv3d(2, 4, 3)
    x = torch.randn(1, 2, 6, 6, 6)
    conv_n = torch.nn.Conv3d(2, 4, 3).to("neuron")
    conv_n.load_state_dict(conv.state_dict())
    with torch.autocast("neuron", dtype=dtype):
        h = conv_n(x.to("neuron"))
        out = torch.nn.functional.avg_pool3d(h, 2)
    assert h.dtype == dtype and out.dtype == torch.float32
    with torch.autocast("cpu", dtype=dtype):
        want = torch.nn.functional.avg_pool3d(conv(x), 2)
    assert want.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), want, rtol=0, atol=0)
