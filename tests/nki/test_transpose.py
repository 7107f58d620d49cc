"""Reference kernel 3: transposes -- free-axis (F1, F2) -> (F2, F1) by access patterns, and the
128x128 partition<->free transpose on the Tensor Engine (nc_transpose / nl.transpose)."""
import ml_dtypes
import numpy as np
import pytest

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.errors import err_size_of_dimension_exceed_arch_limit


@nki.jit
def transpose_free_axes(x, f1, f2):
    """x [P, f1*f2] viewed as [P, f1, f2] -> out [P, f2*f1] viewed as [P, f2, f1]."""
    P = x.shape[0]
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None, None]
    i_1 = nl.arange(f1)[None, :, None]
    i_2 = nl.arange(f2)[None, None, :]
    tile = nl.load(x)
    res = nl.ndarray((P, f2 * f1), dtype=x.dtype, buffer=nl.sbuf)
    res[i_p, i_2 * f1 + i_1] = nl.copy(tile[i_p, i_1 * f2 + i_2])
    nl.store(out, value=res)
    return out


@nki.jit
def transpose_pe(x):
    """[128, 128] partition<->free transpose with nisa.nc_transpose on the Tensor Engine."""
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    t_psum = nisa.nc_transpose(nl.load(x), engine=nisa.engine.tensor)
    nl.store(out, value=nl.copy(t_psum))
    return out


@nki.jit
def transpose_nl(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.copy(nl.transpose(nl.load(x))))
    return out


@nki.jit
def transpose_vector_32(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.nc_transpose(nl.load(x), engine=nisa.engine.vector))
    return out


@nki.jit
def transpose_dma(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load_transpose2d(x))
    return out


def test_free_axis_transpose_by_access_patterns():
    f1, f2 = 8, 24
    x = np.arange(128 * f1 * f2, dtype=np.float32).reshape(128, f1 * f2)
    out = transpose_free_axes(x, f1, f2)
    expect = x.reshape(128, f1, f2).transpose(0, 2, 1).reshape(128, f2 * f1)
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("kernel", [transpose_pe, transpose_nl, transpose_dma])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_partition_free_transpose_128(kernel, dtype):
    x = np.random.default_rng(0).standard_normal((128, 128), dtype=np.float32).astype(dtype)
    out = kernel(x)
    np.testing.assert_array_equal(out, x.T)      # a transpose moves values, never rounds them


def test_rectangular_transpose_on_tensor_engine():
    x = np.random.default_rng(1).standard_normal((96, 40), dtype=np.float32)
    np.testing.assert_array_equal(transpose_pe(x), x.T)


def test_vector_engine_transpose_is_limited_to_32x32():
    x = np.random.default_rng(2).standard_normal((32, 32), dtype=np.float32)
    np.testing.assert_array_equal(transpose_vector_32(x), x.T)
    with pytest.raises(err_size_of_dimension_exceed_arch_limit):
        transpose_vector_32(np.zeros((64, 32), np.float32))


def test_tensor_engine_transpose_is_limited_to_128():
    @nki.jit
    def too_wide(x):
        out = nl.ndarray((256, 128), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out[0:128, :], value=nl.copy(nl.transpose(nl.load(x))))
        return out
    with pytest.raises(err_size_of_dimension_exceed_arch_limit) as ei:
        too_wide(np.zeros((128, 256), np.float32))
    assert "[128, 256]" in str(ei.value)
