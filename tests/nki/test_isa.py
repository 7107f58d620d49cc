"""nki.isa instructions (legacy signatures) against NumPy."""
import ml_dtypes
import numpy as np
import pytest

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.platforms import get_platform

rng = np.random.default_rng(0)
X = rng.standard_normal((128, 256), dtype=np.float32)
V = rng.standard_normal((128, 1), dtype=np.float32)


def run(body, *arrays, out_shape=(128, 256), out_dtype=nl.float32, platform=None):
    """Run ``body(*tiles) -> tile`` in a kernel that loads the arrays and stores the result."""
    @nki.jit(platform_target=platform)
    def k(*ins):
        o = nl.ndarray(out_shape, dtype=out_dtype, buffer=nl.shared_hbm)
        res = body(*[nl.load(t) for t in ins])
        nl.store(o, value=res if res.buffer == nl.sbuf else nl.copy(res))
        return o
    return k(*arrays)


def test_activation_scale_bias():
    out = run(lambda x, b: nisa.activation(nl.tanh, x, bias=b, scale=0.5), X, V)
    np.testing.assert_allclose(out, np.tanh(X * 0.5 + V), rtol=1e-6, atol=1e-6)


def test_activation_with_vector_scale_and_numpy_op():
    out = run(lambda x, s: nisa.activation(np.exp, x, scale=s), X, V)
    np.testing.assert_allclose(out, np.exp(X * V), rtol=1e-6)


def test_activation_reduce_sums_the_activated_values():
    def body(x):
        acc = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(nl.square, x, reduce_op=nl.add, reduce_res=acc)
        return acc
    np.testing.assert_allclose(run(body, X, out_shape=(128, 1)), (X * X).sum(1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("op,ref", [(nl.add, np.add), (nl.maximum, np.maximum), (np.multiply, np.multiply),
                                    (nl.subtract, np.subtract), (nl.greater, np.greater)])
def test_tensor_tensor(op, ref):
    Y = rng.standard_normal((128, 256), dtype=np.float32)
    out = run(lambda x, y: nisa.tensor_tensor(x, y, op), X, Y)
    np.testing.assert_array_equal(out, ref(X, Y).astype(np.float32))


def test_tensor_scalar_two_ops_and_reverse():
    out = run(lambda x, v: nisa.tensor_scalar(x, np.subtract, v, op1=np.multiply, operand1=3.0), X, V)
    np.testing.assert_allclose(out, (X - V) * 3.0, rtol=1e-6)
    out = run(lambda x: nisa.tensor_scalar(x, nl.subtract, 1.0, reverse0=True), X)
    np.testing.assert_allclose(out, 1.0 - X, rtol=1e-6)


@pytest.mark.parametrize("op,ref", [(nl.add, np.sum), (np.max, np.max), (nl.minimum, np.min)])
def test_tensor_reduce_with_negate(op, ref):
    out = run(lambda x: nisa.tensor_reduce(op, x, axis=1, keepdims=True, negate=True), X, out_shape=(128, 1))
    np.testing.assert_allclose(out, -ref(X, axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_tensor_copy_converts_dtype():
    out = run(lambda x: nisa.tensor_copy(x, dtype=nl.bfloat16, engine=nisa.engine.gpsimd), X,
              out_dtype=nl.bfloat16)
    np.testing.assert_array_equal(out, X.astype(ml_dtypes.bfloat16))


def test_iota_and_memset():
    def body(x):
        i_p, i_f = nl.mgrid[0:128, 0:256]
        return nisa.iota(i_p * 1000 + i_f, dtype=nl.int32)
    out = run(body, X, out_dtype=nl.int32)
    np.testing.assert_array_equal(out, np.arange(128)[:, None] * 1000 + np.arange(256)[None, :])
    out = run(lambda x: nisa.memset((128, 256), 2.5, nl.float32), X)
    assert np.all(out == 2.5)


def test_affine_select_causal_mask():
    def body(x):
        i_q, i_k = nl.mgrid[0:128, 0:256]
        return nisa.affine_select(i_q >= i_k, x, -9984.0)
    out = run(body, X)
    q, k = np.meshgrid(np.arange(128), np.arange(256), indexing="ij")
    np.testing.assert_array_equal(out, np.where(q >= k, X, np.float32(-9984.0)))


def test_bn_stats_bn_aggr_mean_and_variance():
    Z = (rng.standard_normal((128, 1024), dtype=np.float32) * 3 + 2).astype(np.float32)

    def body(z):
        stats = nl.ndarray((128, 12), dtype=nl.float32, buffer=nl.sbuf)
        stats[:, 0:6] = nisa.bn_stats(z[:, 0:512])
        stats[:, 6:12] = nisa.bn_stats(z[:, 512:1024])
        return nisa.bn_aggr(stats)
    out = run(body, Z, out_shape=(128, 2))
    np.testing.assert_allclose(out[:, 0], Z.mean(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 1], Z.var(1), rtol=1e-4)


def test_dma_copy_hbm_to_hbm_then_update_the_copy():
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=a)
        nl.store(o, value=nl.load(o) + 1.0)
        return o
    np.testing.assert_array_equal(k(X), X + 1.0)


@pytest.mark.parametrize("platform,version", [("trn1", "gen2"), ("inf2", "gen2"), ("trn2", "gen3"),
                                              ("trn3", "gen4")])
def test_get_nc_version_follows_platform(platform, version):
    seen = []

    @nki.jit(platform_target=platform)
    def k(a):
        seen.append(nisa.get_nc_version())
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(o, value=nl.load(a))
        return o
    k(X)
    assert seen == [getattr(nisa.nc_version, version)]
    assert get_platform(platform).core.generation == seen[0].value
