"""The two cores of an LNC=2 launch interleave by simulated time between synchronisation points.

On hardware both cores of a logical NeuronCore run at once; a kernel may let each core zero its own
share of a shared output and then write results into the other core's share without a
``core_barrier`` in between, relying on the short zeroing finishing before the later writes. Our
kernels below do that and are checked against NumPy."""
import numpy as np

import torch_neuronx.nki.current.isa as nisa
import torch_neuronx.nki.current.language as nl
from torch_neuronx.nki import current as nki

F32 = np.float32


@nki.jit(platform_target="trn2")
def _zero_share_then_scatter(a):
    # a: [128, 8], token block c (rows 64c..64c+63) belongs to core c. o: [256, 8], two halves of
    # 128 rows; core c zeroes half c, then writes 2 * its token block into row block c of BOTH halves
    o = nl.ndarray((256, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    z = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=z, value=0.0)
    nisa.dma_copy(dst=o[me * 128:me * 128 + 64, :], src=z)
    nisa.dma_copy(dst=o[me * 128 + 64:me * 128 + 128, :], src=z)
    t = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[me * 64:(me + 1) * 64, :])
    u = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=o[me * 64:(me + 1) * 64, :], src=u)
    nisa.dma_copy(dst=o[128 + me * 64:128 + (me + 1) * 64, :], src=u)
    return o


def test_zeroing_of_one_core_does_not_land_after_the_other_cores_later_writes():
    # run one core to its end before the other starts, and core 1's zeroing of rows 128..255 would
    # wipe the rows 128..191 core 0 wrote: 512 zeros (found in nki-library's MoE backward, LNC=2)
    a = np.random.default_rng(3).standard_normal((128, 8)).astype(F32)
    o = _zero_share_then_scatter[2](a)
    np.testing.assert_allclose(o, np.concatenate([2 * a, 2 * a]), rtol=0, atol=0)


@nki.jit(platform_target="trn2")
def _barrier_then_read_other_half(a):
    # each core writes its half, meets the other at core_barrier, then accumulates the other half
    # onto its own: the read after the barrier must see the other core's write
    o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    s = nl.ndarray((64, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    t = nl.ndarray((64, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[me * 64:(me + 1) * 64, :])
    nisa.dma_copy(dst=o[me * 64:(me + 1) * 64, :], src=t)
    nisa.core_barrier(o, (0, 1))
    u = nl.ndarray((64, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=o[(1 - me) * 64:(2 - me) * 64, :])
    v = nl.ndarray((64, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=v, data1=t, data2=u, op=nl.add)
    if me == 0:
        nisa.dma_copy(dst=s, src=v)
    return o, s


def test_read_after_core_barrier_sees_the_other_cores_write():
    a = np.random.default_rng(4).standard_normal((128, 16)).astype(F32)
    o, s = _barrier_then_read_other_half[2](a)
    np.testing.assert_array_equal(o, a)
    np.testing.assert_allclose(s, a[:64] + a[64:], rtol=1e-6, atol=1e-6)
