"""Reference kernel 2: matmul C = lhsT.T @ rhs with fp32 PSUM accumulation over K tiles,
bf16 inputs, in every step of the AWS tutorial's optimisation sequence, plus the 64x128x512 tile."""
import ml_dtypes
import numpy as np
import pytest

from . import matmul_kernels as mk

BF16 = ml_dtypes.bfloat16


def _inputs(M, K, N, seed=0):
    rng = np.random.default_rng(seed)
    lhsT = rng.standard_normal((K, M), dtype=np.float32).astype(BF16)
    rhs = rng.standard_normal((K, N), dtype=np.float32).astype(BF16)
    ref = lhsT.astype(np.float32).T @ rhs.astype(np.float32)   # exact products of the bf16 values
    return lhsT, rhs, ref


def test_single_tile_64x128x512_fp32_is_exact_to_fp32_rounding():
    rng = np.random.default_rng(3)
    lhsT = rng.standard_normal((128, 64), dtype=np.float32)
    rhs = rng.standard_normal((128, 512), dtype=np.float32)
    out = mk.matmul_single_tile(lhsT, rhs)
    assert out.shape == (64, 512) and out.dtype == np.float32
    np.testing.assert_allclose(out, lhsT.T @ rhs, rtol=1e-5, atol=1e-4)


def test_single_tile_bf16_in_bf16_out():
    lhsT, rhs, ref = _inputs(64, 128, 512)
    out = mk.matmul_single_tile(lhsT, rhs)
    assert out.dtype == BF16
    # fp32 accumulation, one final rounding to bf16: within one bf16 ulp (2^-8 relative)
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=2 ** -8, atol=1e-2)


@pytest.mark.parametrize("kernel", [mk.matmul_tiled, mk.matmul_hoisted, mk.matmul_blocked_free])
def test_tiled_steps_with_psum_accumulation_match_numpy(kernel):
    lhsT, rhs, ref = _inputs(256, 512, 1024)
    out = kernel(lhsT, rhs)
    assert out.shape == (256, 1024) and out.dtype == BF16
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=2 ** -8, atol=1e-2)


def test_fully_blocked_with_sbuf_partial_sums_matches_numpy():
    lhsT, rhs, ref = _inputs(256, 512, 1024)
    out = mk.matmul_blocked_all(lhsT, rhs, tiles_in_block_m=2, tiles_in_block_k=2)  # 2 sequential K blocks
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=2 ** -8, atol=1e-2)


def test_accumulation_is_in_fp32_not_bf16():
    # 512 products of 1.0 * 2^-9: a bf16 accumulator would stop growing at 2^-1 + ... (ulp of 1 is
    # 2^-7); fp32 PSUM accumulation reaches exactly 1.0.
    K = 512
    lhsT = np.ones((K, 128), BF16)
    rhs = np.full((K, 512), 2.0 ** -9, BF16)
    out = mk.matmul_tiled(lhsT, rhs)
    assert np.all(out.astype(np.float32) == 1.0)
