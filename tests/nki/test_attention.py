"""Reference kernel 6: fused attention softmax(Q K^T * scale) V, one 128-row Q strip at a time: the
shipped kernel (``torch_neuronx.kernels.attention``) on NumPy arrays, bf16 inputs, fp32 PSUM
accumulation, an SPMD grid of one program per (batch x head). Sequences are kept short (512 and 768:
one and two 384/512-wide score chunks) so the test stays fast."""
import math

import ml_dtypes
import numpy as np
import pytest

from torch_neuronx.kernels.attention import attention_kernel


def _ref(q, k, v):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


@pytest.mark.parametrize("S,d", [(512, 64), (768, 128)])
def test_shipped_attention_kernel_bf16_matches_numpy(S, d):
    rng = np.random.default_rng(d)
    BH = 2
    q, k, v = (rng.standard_normal((BH, S, d), dtype=np.float32).astype(ml_dtypes.bfloat16) for _ in range(3))
    out = attention_kernel[BH](q, k, v, 1.0 / math.sqrt(d))
    assert out.shape == (BH, S, d) and out.dtype == ml_dtypes.bfloat16
    # bf16 probabilities and output: errors of a few bf16 ulps of O(1) values
    np.testing.assert_allclose(out.astype(np.float32), _ref(q, k, v), rtol=0.03, atol=0.02)
