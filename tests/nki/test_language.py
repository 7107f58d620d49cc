"""nki.language: creation, indexing, Python operators on tiles, math, reductions, jit modes."""
import numpy as np
import pytest

from torch_neuronx import nki
import torch_neuronx.nki.language as nl

rng = np.random.default_rng(0)
A = rng.standard_normal((128, 64), dtype=np.float32)
B = rng.uniform(0.5, 2.0, (128, 64)).astype(np.float32)


def kernel_of(body, out_shape=(128, 64)):
    @nki.jit
    def k(a, b):
        o = nl.ndarray(out_shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(o, value=body(nl.load(a), nl.load(b)))
        return o
    return k


@pytest.mark.parametrize("body,ref", [
    (lambda x, y: x + y * 2.0 - 1.0, lambda x, y: x + y * 2 - 1),
    (lambda x, y: (x / y) ** 2, lambda x, y: (x / y) ** 2),
    (lambda x, y: 3.0 - (-x), lambda x, y: 3.0 + x),
    (lambda x, y: abs(x) * (x > 0), lambda x, y: np.abs(x) * (x > 0)),
    (lambda x, y: nl.where(x > 0, x, y), lambda x, y: np.where(x > 0, x, y)),
    (lambda x, y: nl.maximum(nl.minimum(x, 0.5), -0.5), lambda x, y: np.clip(x, -0.5, 0.5)),
])
def test_python_operators_and_binary_ops(body, ref):
    np.testing.assert_allclose(kernel_of(body)(A, B), ref(A, B), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,ref", [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("rsqrt", lambda v: 1 / np.sqrt(v)),
    ("reciprocal", lambda v: 1 / v), ("tanh", np.tanh), ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
    ("relu", lambda v: np.maximum(v, 0)), ("silu", lambda v: v / (1 + np.exp(-v))),
    ("gelu", lambda v: 0.5 * v * (1 + np.vectorize(__import__("math").erf)(v / np.sqrt(2)))),
    ("square", np.square), ("negative", np.negative), ("abs", np.abs),
])
def test_unary_math(name, ref):
    fn = getattr(nl, name)
    x = B if name in ("log", "sqrt", "rsqrt") else A
    np.testing.assert_allclose(kernel_of(lambda a, b: fn(b if x is B else a))(A, B), ref(x), rtol=2e-6,
                               atol=1e-6)


def test_reductions_keepdims_and_mean():
    k = kernel_of(lambda x, y: nl.sum(x, axis=1, keepdims=True) + nl.max(x, axis=1) - nl.mean(y, axis=[1]),
                  out_shape=(128, 1))
    ref = A.sum(1, keepdims=True) + A.max(1, keepdims=True) - B.mean(1, keepdims=True)
    np.testing.assert_allclose(k(A, B), ref, rtol=1e-5, atol=1e-5)


def test_matmul_without_transpose_x_inserts_a_transpose():
    x = rng.standard_normal((64, 128), dtype=np.float32)
    y = rng.standard_normal((128, 256), dtype=np.float32)

    @nki.jit
    def k(x, y):
        o = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(o, value=nl.copy(nl.matmul(nl.load(x), nl.load(y))))
        return o
    np.testing.assert_allclose(k(x, y), x @ y, rtol=1e-4, atol=1e-4)


def test_creation_functions():
    @nki.jit
    def k(a):
        o = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(o[0], value=nl.zeros((128, 64), dtype=nl.float32))
        nl.store(o[1], value=nl.ones((128, 64), dtype=nl.bfloat16))
        nl.store(o[2], value=nl.full((128, 64), 7.0, dtype=nl.float32))
        z = nl.zeros_like(nl.load(a))
        z[:, 0:32] = nl.load(a[:, 0:32])
        nl.store(o[3], value=z)
        return o
    out = k(A)
    assert np.all(out[0] == 0) and np.all(out[1] == 1) and np.all(out[2] == 7)
    np.testing.assert_array_equal(out[3][:, :32], A[:, :32])
    assert np.all(out[3][:, 32:] == 0)


def test_block_dimensions_and_ds():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        blocks = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            blocks[i] = nl.load(a[:, nl.ds(i * 64, 64)])
        for i in nl.affine_range(4):
            nl.store(o[:, nl.ds((3 - i) * 64, 64)], value=nl.copy(blocks[i]))
        return o
    a = rng.standard_normal((128, 256), dtype=np.float32)
    np.testing.assert_array_equal(k(a), a.reshape(128, 4, 64)[:, ::-1].reshape(128, 256))


def test_simulate_kernel_simulate_and_modes():
    def plain(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(o, value=nl.load(a) * 2.0)
        return o
    np.testing.assert_array_equal(nki.simulate_kernel(plain, A), A * 2)
    np.testing.assert_array_equal(nki.simulate(plain)(A), A * 2)
    np.testing.assert_array_equal(nki.jit(plain, mode="simulation")(A), A * 2)
    np.testing.assert_array_equal(nki.baremetal(plain)(A), A * 2)
    with pytest.raises(NotImplementedError, match="simulator"):
        nki.jit(plain, mode="torchxla")(A)
    for bad in ("bogus", "Simulation", None):
        with pytest.raises(ValueError, match="unknown mode.*'simulation'"):
            nki.jit(mode=bad)(plain)


def test_sub_kernel_is_inlined_and_device_print(capsys):
    @nki.trace
    def double(t):
        return t * 2.0

    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = double(nl.load(a))
        nl.device_print("t=", t[0:1, 0:2])
        nl.store(o, value=t)
        return o
    np.testing.assert_array_equal(k(A), A * 2)
    assert "t=" in capsys.readouterr().out


def test_multiple_outputs_returned_as_tuple():
    @nki.jit
    def k(a):
        o1 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(o1, value=t + 1.0)
        nl.store(o2, value=t - 1.0)
        return o1, o2
    o1, o2 = k(A)
    np.testing.assert_array_equal(o1, A + 1)
    np.testing.assert_array_equal(o2, A - 1)
