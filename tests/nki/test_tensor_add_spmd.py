"""Reference kernel 1: tensor add over an SPMD grid of [128, 512] tiles."""
import numpy as np
import pytest

from torch_neuronx import nki
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.errors import NKIError, err_num_partition_exceed_arch_limit


@nki.jit
def add_kernel(a, b):
    """out = a + b; program (i, j) of the grid handles tile [128 i:128 (i+1), 512 j:512 (j+1)]."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(1)
    rows = slice(i * 128, (i + 1) * 128)
    cols = slice(j * 512, (j + 1) * 512)
    x = nl.load(a[rows, cols])
    y = nl.load(b[rows, cols])
    nl.store(out[rows, cols], value=x + y)
    return out


@nki.jit
def add_kernel_mgrid(a, b):
    """Same with nl.mgrid index expressions and nl.add."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.mgrid[0:128, 0:512]
    r = nl.program_id(0) * 128 + ix.p
    c = nl.program_id(1) * 512 + ix.x
    nl.store(out[r, c], value=nl.add(nl.load(a[r, c]), nl.load(b[r, c])))
    return out


@nki.jit
def add_kernel_big_tile(a, b):
    """Illegal: a [256, 512] SBUF tile."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a[0:256, 0:512])
    nl.store(out[0:256, 0:512], value=x + nl.load(b[0:256, 0:512]))
    return out


@pytest.mark.parametrize("kernel", [add_kernel, add_kernel_mgrid])
def test_add_over_spmd_grid_matches_numpy(kernel):
    rng = np.random.default_rng(1)
    n, m = 2, 3
    a = rng.standard_normal((n * 128, m * 512), dtype=np.float32)
    b = rng.standard_normal((n * 128, m * 512), dtype=np.float32)
    out = kernel[n, m](a, b)
    np.testing.assert_array_equal(out, a + b)   # fp32 add is exact vs NumPy's fp32 add


def test_program_ids_and_grid_rank_are_visible():
    seen = []

    @nki.jit
    def probe(a):
        out = nl.ndarray((1, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        seen.append((nl.program_id(0), nl.program_id(1), nl.num_programs(), nl.num_programs(1),
                     nl.program_ndim()))
        nl.store(out, value=nl.load(a[0:1, 0:1]))
        return out

    probe[2, 3](np.zeros((1, 1), np.float32))
    assert seen == [(i, j, 6, 3, 2) for i in range(2) for j in range(3)]


def test_partial_grid_leaves_rest_poisoned():
    a = np.ones((256, 512), np.float32)
    out = add_kernel[1, 1](a, a)        # only program (0, 0): rows 128.. never written
    assert np.all(out[:128] == 2.0)
    assert np.isnan(out[128:]).all()


def test_256_partition_tile_raises_partition_limit():
    a = np.ones((256, 512), np.float32)
    with pytest.raises(err_num_partition_exceed_arch_limit) as ei:
        add_kernel_big_tile(a, a)
    msg = str(ei.value)
    assert isinstance(ei.value, NKIError)
    assert "err_num_partition_exceed_arch_limit" in msg and "[256, 512]" in msg and "sbuf" in msg
