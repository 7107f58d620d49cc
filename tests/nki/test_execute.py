"""``nki.execute(kernel, *args)`` (the current API's standalone entry point, AWS's NKI Standalone page):
runs a ``nki.jit`` kernel or a plain function on the simulator, NumPy in and out, ``neuron`` tensors in
and out; values against NumPy / the CPU. Kernels and inputs are ours."""
import numpy as np
import torch

import torch_neuronx.nki.current.isa as nisa
import torch_neuronx.nki.current.language as nl
from torch_neuronx.nki import current as nki


def _matmul(x, y):
    xs = nl.ndarray(shape=x.shape, dtype=x.dtype, buffer=nl.sbuf)
    ys = nl.ndarray(shape=y.shape, dtype=y.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xs, src=x)
    nisa.dma_copy(dst=ys, src=y)
    zp = nl.matmul(xs, ys)
    zs = nl.ndarray(shape=zp.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(zs, zp)
    z = nl.ndarray(shape=zs.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=z, src=zs)
    return z


def test_execute_runs_a_jit_kernel_and_a_plain_function_on_numpy():
    rng = np.random.default_rng(3)
    x = rng.random((4, 4), dtype=np.float32)
    y = rng.random((4, 3), dtype=np.float32)
    kernel = nki.jit(_matmul)
    for k in (kernel, _matmul):
        out = nki.execute(k, x, y)
        assert isinstance(out, np.ndarray) and out.shape == (4, 3)
        np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-6)
    assert kernel.last_run is not None  # the launch of the last execute, for the cost model


def test_execute_takes_neuron_tensors_and_returns_a_neuron_tensor():
    x = torch.rand(8, 16, device="neuron")
    y = torch.rand(16, 5, device="neuron")
    out = nki.execute(nki.jit(_matmul), x.t().contiguous().t(), y)
    assert out.device.type == "neuron" and out.shape == (8, 5)
    torch.testing.assert_close(out.cpu(), x.cpu() @ y.cpu(), rtol=1e-5, atol=1e-5)
