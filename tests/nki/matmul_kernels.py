"""Matrix-multiplication kernels following the steps of AWS's NKI matmul tutorial, written for this
project against the legacy API (only the imports differ from AWS's module names).

    result[M, N] = lhsT[K, M].T @ rhs[K, N]

Steps: single tile (64x128x512) -> tiled -> hoisted loads -> blocked free dims -> fully blocked
(K blocked too, partial sums kept in SBUF). Run this file to print the cost-model calibration
against the tutorial's measured trn1 latencies (takes about a minute):

    python tests/nki/matmul_kernels.py [M K N]
"""
import os
import sys

if __name__ == "__main__":  # allow running from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
    import conftest  # noqa: F401  (makes torch_neuronx.nki importable)

from torch_neuronx import nki
import torch_neuronx.nki.language as nl

TILE_K = nl.tile_size.pmax                  # 128: contraction tile (partition dim)
TILE_M = nl.tile_size.gemm_stationary_fmax  # 128: stationary free size
TILE_N = nl.tile_size.gemm_moving_fmax      # 512: moving free size


@nki.jit
def matmul_single_tile(lhsT, rhs):
    """64(M) x 128(K) x 512(N): lhsT [128, 64], rhs [128, 512] -> [64, 512]."""
    result = nl.ndarray((64, 512), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    i_lp, i_lf = nl.mgrid[0:128, 0:64]
    i_rp, i_rf = nl.mgrid[0:128, 0:512]
    i_op, i_of = nl.mgrid[0:64, 0:512]
    a = nl.load(lhsT[i_lp, i_lf])
    b = nl.load(rhs[i_rp, i_rf])
    acc = nl.matmul(a, b, transpose_x=True)          # fp32 in PSUM
    nl.store(result[i_op, i_of], value=nl.copy(acc, dtype=result.dtype))
    return result


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Step 1: every (m, n, k) loads its two tiles; PSUM += accumulation over k."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                a = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                b = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nl.matmul(a, b, transpose_x=True)
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=out)
    return result


@nki.jit
def matmul_hoisted(lhsT, rhs):
    """Step 2: the lhsT column of tiles is loaded once per m, the rhs column once per (m, n)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TILE_K
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        a_tiles = nl.ndarray((KT, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            a_tiles[k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
        for n in nl.affine_range(N // TILE_N):
            b_tiles = nl.ndarray((KT, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                b_tiles[k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc += nl.matmul(a_tiles[k], b_tiles[k], transpose_x=True)
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=out)
    return result


def _load_tile_block(tiles, src, block, tiles_in_block, k_tiles, width):
    """Loads column block ``block`` of ``src`` ([K, cols] in HBM) into ``tiles`` ([tiles_in_block, k_tiles,
    TILE_K, width] in SBUF), one [TILE_K, width] tile per transfer, as AWS's tutorial kernel does."""
    for b in nl.affine_range(tiles_in_block):
        for k in nl.affine_range(k_tiles):
            c0 = (block * tiles_in_block + b) * width
            tiles[b, k] = nl.load(src[k * TILE_K:(k + 1) * TILE_K, c0:c0 + width])


@nki.jit
def matmul_blocked_free(lhsT, rhs, tiles_in_block_m=2, tiles_in_block_n=2):
    """Step 3: blocks of 2 M tiles x 2 N tiles share their loads (rhs read M/256 times, not M/128).
    Each load moves one tile ([128, 128] of lhsT, [128, 512] of rhs), as in AWS's tutorial kernel: the
    cost model's DMA rate depends on the bytes per partition of a transfer."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TILE_K
    BM, BN = tiles_in_block_m, tiles_in_block_n
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // (TILE_M * BM)):
        a_tiles = nl.ndarray((BM, KT, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        _load_tile_block(a_tiles, lhsT, m, BM, KT, TILE_M)
        for n in nl.affine_range(N // (TILE_N * BN)):
            b_tiles = nl.ndarray((BN, KT, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            _load_tile_block(b_tiles, rhs, n, BN, KT, TILE_N)
            for bm in nl.affine_range(BM):
                for bn in nl.affine_range(BN):
                    acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
                        acc += nl.matmul(a_tiles[bm, k], b_tiles[bn, k], transpose_x=True)
                    out = nl.copy(acc, dtype=result.dtype)
                    r0 = (m * BM + bm) * TILE_M
                    c0 = (n * BN + bn) * TILE_N
                    nl.store(result[r0:r0 + TILE_M, c0:c0 + TILE_N], value=out)
    return result


@nki.jit
def matmul_blocked_all(lhsT, rhs, tiles_in_block_m=16, tiles_in_block_n=2, tiles_in_block_k=8):
    """Step 4: K blocked too (sequential), fp32 partial sums of a whole [M, 1024] column block kept in
    SBUF; blocks of 2048 (M) x 1024 (N) x 1024 (K) give arithmetic intensity ~683 FLOP/B."""
    K, M = lhsT.shape
    _, N = rhs.shape
    BM, BN, BK = tiles_in_block_m, tiles_in_block_n, tiles_in_block_k
    NBM, NBN, NBK = M // (BM * TILE_M), N // (BN * TILE_N), K // (BK * TILE_K)
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n in nl.affine_range(NBN):
        partial = nl.zeros((NBM, BM, nl.par_dim(TILE_M), BN * TILE_N), nl.float32, buffer=nl.sbuf)
        for kb in nl.sequential_range(NBK):
            b_tiles = nl.ndarray((BK, nl.par_dim(TILE_K), BN * TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in nl.affine_range(BK):
                k0 = (kb * BK + bk) * TILE_K
                b_tiles[bk] = nl.load(rhs[k0:k0 + TILE_K, n * BN * TILE_N:(n + 1) * BN * TILE_N])
            for m in nl.affine_range(NBM):
                a_tiles = nl.ndarray((BK, nl.par_dim(TILE_K), BM * TILE_M), dtype=lhsT.dtype,
                                     buffer=nl.sbuf)
                for bk in nl.affine_range(BK):
                    k0 = (kb * BK + bk) * TILE_K
                    a_tiles[bk] = nl.load(lhsT[k0:k0 + TILE_K, m * BM * TILE_M:(m + 1) * BM * TILE_M])
                for bm in nl.affine_range(BM):
                    for bn in nl.affine_range(BN):
                        acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(BK):
                            acc += nl.matmul(a_tiles[bk, :, bm * TILE_M:(bm + 1) * TILE_M],
                                             b_tiles[bk, :, bn * TILE_N:(bn + 1) * TILE_N],
                                             transpose_x=True)
                        partial[m, bm, :, bn * TILE_N:(bn + 1) * TILE_N] += acc
        for m in nl.affine_range(NBM):
            for bm in nl.affine_range(BM):
                out = nl.copy(partial[m, bm], dtype=result.dtype)
                r0 = (m * BM + bm) * TILE_M
                nl.store(result[r0:r0 + TILE_M, n * BN * TILE_N:(n + 1) * BN * TILE_N], value=out)
    return result


STEPS = [("tiled", matmul_tiled, 51.80), ("hoisted loads", matmul_hoisted, 42.96),
         ("blocked free dims", matmul_blocked_free, 22.07), ("blocked all dims", matmul_blocked_all, 6.97)]


def calibrate(M=4096, K=8192, N=8192, platform="trn1"):
    """Estimated latency of each tutorial step vs AWS's measured trn1 numbers ([MM-TUT])."""
    import time
    import numpy as np
    import ml_dtypes
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((K, M), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((K, N), dtype=np.float32).astype(ml_dtypes.bfloat16)
    print(f"[{M},{K}]@[{K},{N}] bf16 on {platform} (ESTIMATES; AWS measured values for 4096x8192x8192)")
    for name, kern, aws_ms in STEPS:
        t0 = time.time()
        b = nki.benchmark(kern, platform=platform)
        kw = {}
        if kern is matmul_blocked_all:
            kw = dict(tiles_in_block_m=min(16, M // TILE_M), tiles_in_block_k=min(8, K // TILE_K))
        out = b(lhsT, rhs, **kw)
        assert out.shape == (M, N)
        r = b.benchmark_result
        print(f"  {name:<18} estimate {r.latency_ms:9.3f} ms  util {r.flops_utilization:6.2f} %  "
              f"(AWS tutorial: {aws_ms} ms)  [simulated in {time.time() - t0:.1f} s]")


if __name__ == "__main__":
    dims = [int(x) for x in sys.argv[1:4]] or [4096, 8192, 8192]
    calibrate(*dims)
