"""Low-precision types are rounded for real (ml_dtypes), engine math is fp32, and a switch keeps
everything in fp32."""
import ml_dtypes
import numpy as np
import pytest

from torch_neuronx import nki
import torch_neuronx.nki.language as nl
from torch_neuronx.nki import dtypes as D
from torch_neuronx.nki.errors import err_unsupported_dtype


def _cast_kernel(out_dtype):
    @nki.jit
    def k(x):
        o = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.shared_hbm)
        nl.store(o, value=nl.copy(nl.load(x), dtype=out_dtype))
        return o
    return k


@pytest.mark.parametrize("dt", [nl.bfloat16, nl.float16, nl.float8_e4m3, nl.float8_e5m2])
def test_store_rounds_to_low_precision(dt):
    x = np.random.default_rng(0).standard_normal((128, 256), dtype=np.float32)
    out = _cast_kernel(dt)(x)
    assert out.dtype == dt
    np.testing.assert_array_equal(out.astype(np.float32), x.astype(dt).astype(np.float32))
    assert np.any(out.astype(np.float32) != x)          # really rounded, not kept in fp32


def test_tfloat32_keeps_10_mantissa_bits():
    x = np.float32(1.0) + np.float32(2.0 ** -11) * np.arange(1, 5, dtype=np.float32)
    r = D.round_to(x, D.tfloat32)
    assert r[0] == 1.0 and r[3] == np.float32(1.0 + 2.0 ** -10 * 2)   # 1+2^-11: tie -> even; 1+4*2^-11
    assert np.all(np.diff(r) >= 0)


def test_elementwise_math_is_fp32_then_rounded_once():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 512), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 512), dtype=np.float32).astype(ml_dtypes.bfloat16)

    @nki.jit
    def k(a, b):
        o = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(o, value=nl.multiply(nl.load(a), nl.load(b)) + 1.0)   # bf16 * bf16 -> bf16, then + 1
        return o
    out = k(a, b)
    prod = (a.astype(np.float32) * b.astype(np.float32)).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(out.astype(np.float32),
                                  (prod + 1.0).astype(ml_dtypes.bfloat16).astype(np.float32))


def test_keep_fp32_switch_disables_rounding():
    x = np.random.default_rng(2).standard_normal((128, 256), dtype=np.float32)
    with nki.keep_fp32():
        out = _cast_kernel(nl.bfloat16)(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, x)
    assert not D.get_keep_fp32()
    assert _cast_kernel(nl.bfloat16)(x).dtype == ml_dtypes.bfloat16     # switch restored


def test_integer_types_saturate_and_truncate():
    r = D.round_to(np.array([1.6, -1.6, -300.0, 300.0, np.nan], np.float32), nl.int8)
    assert r.dtype == np.int8 and r.tolist() == [1, -1, -128, 127, 0]


def test_fp64_and_int64_inputs_are_rejected():
    k = _cast_kernel(nl.float32)
    with pytest.raises(err_unsupported_dtype, match="float64"):
        k(np.zeros((4, 4), np.float64))
    with pytest.raises(err_unsupported_dtype, match="int64"):
        k(np.zeros((4, 4), np.int64))


def test_type_promotion_of_nl_ops():
    assert D.promote(nl.bfloat16, nl.bfloat16) == nl.bfloat16
    assert D.promote(nl.bfloat16, nl.float32) == nl.float32
    assert D.promote(nl.bfloat16, nl.float16) == nl.float32
    assert D.promote(nl.int32, nl.bfloat16) == nl.bfloat16


def test_keep_fp32_keeps_precision_but_not_range():
    # fp32 mode (AWS's legacy simulator precision) keeps bf16 values unrounded, but a value beyond bf16's
    # range overflows as the hardware's downcast does (FP32_MIN written to a bf16 tile becomes -inf)
    v = np.array([1.0 + 2.0 ** -12, -3.4028235e38, 3.4e38], np.float32)
    r = D.from_f32(v, nl.bfloat16, True)
    assert r.dtype == np.float32 and r[0] == v[0] and r[1] == -np.inf and r[2] == np.inf
