"""Reference kernel 5a: RMSNorm  y = x * rsqrt(mean(x^2) + eps) * g, rows not a multiple of 128."""
import ml_dtypes
import numpy as np

from torch_neuronx import nki
import torch_neuronx.nki.language as nl


@nki.jit
def rmsnorm_kernel(a, g, eps):
    """a [N, H], g [H] -> [N, H]."""
    N, H = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_h = nl.arange(H)[None, :]
    g_row = nl.load(g.reshape((1, H))[nl.arange(1)[:, None], i_h])
    g_all = g_row.broadcast_to((128, H))               # replicate across partitions once
    for t in nl.affine_range((N + 127) // 128):
        rows = t * 128 + i_p
        live = rows < N
        x = nl.load(a[rows, i_h], mask=live)
        ms = nl.mean(nl.square(x, mask=live, dtype=nl.float32), axis=1, mask=live)   # (128,) fp32
        r = nl.rsqrt(ms + eps, mask=live)
        y = nl.multiply(nl.multiply(x, r, mask=live, dtype=nl.float32), g_all, mask=live, dtype=a.dtype)
        nl.store(out[rows, i_h], value=y, mask=live)
    return out


def _ref(a, g, eps):
    a = a.astype(np.float64)
    return a / np.sqrt((a * a).mean(axis=1, keepdims=True) + eps) * g.astype(np.float64)


def test_rmsnorm_fp32():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 512), dtype=np.float32)
    g = rng.standard_normal(512, dtype=np.float32)
    np.testing.assert_allclose(rmsnorm_kernel(a, g, 1e-6), _ref(a, g, 1e-6), rtol=1e-5, atol=1e-5)


def test_rmsnorm_bf16():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 1024), dtype=np.float32).astype(ml_dtypes.bfloat16)
    g = rng.standard_normal(1024, dtype=np.float32).astype(ml_dtypes.bfloat16)
    out = rmsnorm_kernel(a, g, 1e-6)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(out.astype(np.float32), _ref(a, g, 1e-6), rtol=2 ** -7, atol=1e-2)
