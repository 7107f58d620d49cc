"""Reference kernel 4: row softmax with a row count that is not a multiple of 128 (masked tail tile)
and up to 4K columns: the shipped kernel (``torch_neuronx.kernels.softmax``, nisa instructions) run on
NumPy arrays, and a kernel written with nl.softmax."""
import ml_dtypes
import numpy as np
import pytest

from torch_neuronx import nki
import torch_neuronx.nki.language as nl
from torch_neuronx.kernels.softmax import softmax_kernel


@nki.jit
def softmax_nl(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    for t in nl.affine_range((R + 127) // 128):
        rows = t * 128 + i_p
        tile = nl.load(x[rows, i_f], mask=rows < R)
        nl.store(out[rows, i_f], value=nl.softmax(tile, axis=1, mask=rows < R), mask=rows < R)
    return out


def _ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("R,C", [(300, 512), (130, 4096)])
def test_shipped_softmax_kernel_fp32_masked_tail(R, C):
    x = np.random.default_rng(R).standard_normal((R, C), dtype=np.float32) * 4
    out = softmax_kernel(x)
    assert not np.isnan(out).any()            # the masked tail rows were computed, nothing else
    np.testing.assert_allclose(out, _ref(x), rtol=1e-5, atol=1e-7)


def test_shipped_softmax_kernel_bf16():
    x = (np.random.default_rng(3).standard_normal((200, 1024), dtype=np.float32) * 3).astype(ml_dtypes.bfloat16)
    out = softmax_kernel(x)
    assert out.dtype == ml_dtypes.bfloat16    # fp32 math inside, rounded once on the way out
    np.testing.assert_allclose(out.astype(np.float32), _ref(x.astype(np.float32)), rtol=2 ** -8, atol=1e-6)


def test_softmax_nl_bf16():
    R, C = 200, 1024
    x = (np.random.default_rng(7).standard_normal((R, C), dtype=np.float32) * 3).astype(ml_dtypes.bfloat16)
    out = softmax_nl(x)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(out.astype(np.float32), _ref(x.astype(np.float32)), rtol=2 ** -7, atol=1e-4)
    np.testing.assert_allclose(out.astype(np.float32).sum(axis=1), 1.0, atol=2e-2)
