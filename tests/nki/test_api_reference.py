"""Both front ends against AWS's NKI API reference: every public name exists, the element-wise
``nki.language`` functions give NumPy's values in both front ends, the ``nki.isa`` instructions no other
test covers follow their API pages (values we derived from each page's definition), and the names the
simulator does not run raise ``NotImplementedError`` naming the API.

The names are those of AWS's reference pages and stubs: the current ``nki`` package at
``aws-neuron/aws-neuron-sdk@81ce03a:nki/api/`` (``nki.isa.rst``, ``nki.language.rst``, ``nki.rst``,
``nki.collectives.rst``, ``nki.api.shared.rst`` and the ``nki/api/nki/**/__init__.py`` stubs) and the
legacy ``neuronxcc.nki`` package at ``aws-neuron/aws-neuron-sdk@cca3784:general/nki/api/``. Kernels and
inputs are ours.
"""
import importlib
import math

import numpy as np
import pytest

import torch_neuronx.nki.current.isa as nisa
import torch_neuronx.nki.current.language as nl
import torch_neuronx.nki.language as lnl
from torch_neuronx import nki as legacy
from torch_neuronx.nki import current as nki

CURRENT = {
    'nki': (
        'jit', 'simulate'
    ),
    'nki.collectives': (
        'ReplicaGroup', 'all_gather', 'all_gather_v', 'all_reduce', 'all_to_all', 'all_to_all_v',
        'collective_permute', 'collective_permute_implicit',
        'collective_permute_implicit_current_processing_rank_id', 'collective_permute_implicit_reduce', 'rank_id',
        'reduce_scatter'
    ),
    'nki.isa': (
        'NkiInstruction', 'NkiValidationError', 'VirtualRegister', 'activate2', 'activation', 'activation_reduce',
        'affine_select', 'bn_aggr', 'bn_stats', 'core_barrier', 'dge_mode', 'dma_compute', 'dma_copy', 'dma_engine',
        'dma_transpose', 'dropout', 'engine', 'exponential', 'get_nc_sub_version', 'get_nc_version',
        'gpsimd_engine', 'iota', 'local_gather', 'matmul_perf_mode', 'max8', 'memset', 'nc_find_index8',
        'nc_match_replace8', 'nc_matmul', 'nc_matmul_mx', 'nc_n_gather', 'nc_stream_shuffle', 'nc_transpose',
        'nc_version', 'nonzero_with_count', 'oob_mode', 'quantize_mx', 'rand2', 'rand_get_state', 'rand_set_state',
        'range_select', 'reciprocal', 'reduce_cmd', 'register_alloc', 'register_load', 'register_move',
        'register_store', 'rng', 'scalar_engine', 'scalar_tensor_tensor', 'select_reduce', 'sendrecv',
        'sequence_bounds', 'set_rng_seed', 'tensor_copy', 'tensor_copy_predicated', 'tensor_engine',
        'tensor_partition_reduce', 'tensor_reduce', 'tensor_scalar', 'tensor_scalar_cumulative',
        'tensor_scalar_reduce', 'tensor_tensor', 'tensor_tensor_scan', 'topk', 'unknown_engine', 'vector_engine'
    ),
    'nki.language': (
        'DType', 'MemoryRegion', 'NKIObject', 'NkiTensor', 'abs', 'abs_max', 'abs_min', 'add', 'affine_range',
        'all', 'arctan', 'average', 'bfloat16', 'bitwise_and', 'bitwise_or', 'bitwise_xor', 'bool_', 'broadcast_to',
        'bypass', 'ceil', 'copy', 'cos', 'device_print', 'divide', 'dropout', 'ds', 'dynamic_range', 'empty_like',
        'equal', 'erf', 'erf_dx', 'exp', 'expand_dims', 'float16', 'float32', 'float4_e2m1fn_x4', 'float8_e4m3',
        'float8_e4m3fn', 'float8_e4m3fn_x4', 'float8_e5m2', 'float8_e5m2_x4', 'float8_e8m0fnu', 'floor', 'fmod',
        'fori_loop', 'full', 'gather_flattened', 'gelu', 'gelu_apprx_sigmoid', 'gelu_apprx_sigmoid_dx',
        'gelu_apprx_tanh', 'gelu_dx', 'greater', 'greater_equal', 'hbm', 'int16', 'int32', 'int8', 'invert',
        'is_hbm', 'is_on_chip', 'is_psum', 'is_sbuf', 'left_shift', 'less', 'less_equal', 'load',
        'load_transpose2d', 'log', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'matmul', 'max',
        'maximum', 'mean', 'min', 'minimum', 'mish', 'mod', 'multiply', 'ndarray', 'negative', 'no_reorder',
        'not_equal', 'num_programs', 'ones', 'power', 'prelu', 'private_hbm', 'prod', 'program_id', 'program_ndim',
        'psum', 'rand', 'random_seed', 'reciprocal', 'relu', 'right_shift', 'rms_norm', 'rsqrt', 'sbuf',
        'sequential_range', 'shared_constant', 'shared_hbm', 'shared_identity_matrix', 'sigmoid', 'sign', 'silu',
        'silu_dx', 'sin', 'softmax', 'softplus', 'sqrt', 'square', 'static_range', 'store', 'subtract', 'sum',
        'tan', 'tanh', 'tfloat32', 'tile_size', 'transpose', 'trunc', 'uint16', 'uint32', 'uint8', 'var', 'where',
        'while_loop', 'zeros', 'zeros_like'
    ),
}

LEGACY = {
    'nki': (
        'FrameworkKernel', 'baremetal', 'benchmark', 'jit', 'profile', 'simulate_kernel', 'tensor'
    ),
    'nki.compiler': (
        'allocation_scope', 'enable_stack_allocator', 'force_auto_alloc', 'multi_buffer', 'no_reorder', 'psum',
        'sbuf', 'sbuf.alloc', 'sbuf.auto_alloc', 'sbuf.mod_alloc', 'skip_middle_end_transformations'
    ),
    'nki.compiler.psum': (
        'alloc', 'auto_alloc', 'mod_alloc'
    ),
    'nki.compiler.sbuf': (
        'alloc', 'auto_alloc', 'mod_alloc'
    ),
    'nki.isa': (
        'activation', 'activation_reduce', 'affine_select', 'bn_aggr', 'bn_stats', 'builtin_custom_op', 'dge_mode',
        'dma_copy', 'dma_engine', 'dma_transpose', 'dropout', 'engine', 'fp32', 'get_nc_version', 'gpsimd_engine',
        'iota', 'local_gather', 'max8', 'memset', 'nc_find_index8', 'nc_match_replace8', 'nc_matmul',
        'nc_stream_shuffle', 'nc_transpose', 'nc_version', 'oob_mode', 'range_select', 'reciprocal', 'reduce_cmd',
        'scalar_engine', 'scalar_tensor_tensor', 'select_reduce', 'sequence_bounds', 'tensor_copy',
        'tensor_copy_dynamic_dst', 'tensor_copy_dynamic_src', 'tensor_copy_predicated', 'tensor_engine',
        'tensor_partition_reduce', 'tensor_reduce', 'tensor_scalar', 'tensor_scalar_reduce', 'tensor_tensor',
        'tensor_tensor_scan', 'unknown_engine', 'vector_engine'
    ),
    'nki.language': (
        'abs', 'add', 'affine_range', 'all', 'all_reduce', 'arange', 'arctan', 'atomic_rmw', 'bfloat16', 'bfp16',
        'bitwise_and', 'bitwise_or', 'bitwise_xor', 'bool_', 'broadcast_to', 'ceil', 'copy', 'cos', 'device_print',
        'divide', 'dropout', 'ds', 'empty_like', 'equal', 'erf', 'erf_dx', 'exp', 'expand_dims', 'finfo', 'float16',
        'float32', 'float8_e4m3', 'float8_e5m2', 'floor', 'fmod', 'fp32', 'full', 'gather_flattened', 'gelu',
        'gelu_apprx_sigmoid', 'gelu_apprx_tanh', 'gelu_dx', 'gemm_grid', 'gemm_stationary_grid', 'greater',
        'greater_equal', 'hbm', 'int16', 'int32', 'int8', 'invert', 'left_shift', 'less', 'less_equal', 'load',
        'load_transpose2d', 'log', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'loop_reduce',
        'matmul', 'max', 'maximum', 'mean', 'mgrid', 'min', 'minimum', 'mish', 'mod', 'multiply', 'nc', 'ndarray',
        'negative', 'not_equal', 'num_programs', 'ones', 'par_dim', 'power', 'private_hbm', 'prod', 'program_id',
        'program_ndim', 'psum', 'rand', 'random_seed', 'reciprocal', 'relu', 'right_shift', 'rms_norm', 'rsqrt',
        'sbuf', 'sequential_range', 'shared_constant', 'shared_hbm', 'shared_identity_matrix', 'sigmoid', 'sign',
        'silu', 'silu_dx', 'sin', 'softmax', 'softplus', 'spmd_dim', 'sqrt', 'square', 'static_cast',
        'static_range', 'store', 'subtract', 'sum', 'tan', 'tanh', 'tfloat32', 'tile_size', 'transpose', 'trunc',
        'uint16', 'uint32', 'uint8', 'var', 'where', 'zeros', 'zeros_like'
    ),
}

OURS = {"current": "torch_neuronx.nki.current", "legacy": "torch_neuronx.nki"}


def _resolve(front: str, module: str, name: str):
    mod = importlib.import_module(OURS[front] + module[len("nki"):])
    obj = mod
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("front,table", [("current", CURRENT), ("legacy", LEGACY)])
def test_every_public_name_of_the_api_reference_exists(front, table):
    missing = []
    for module, names in table.items():
        for name in names:
            try:
                _resolve(front, module, name)
            except (AttributeError, ImportError):
                missing.append(f"{module}.{name}")
    assert not missing, f"{front} front end lacks {missing}"


# --- names the simulator cannot run: NotImplementedError naming the API --------------------------------
def test_unsimulated_names_raise_not_implemented_naming_the_api():
    @nki.jit
    def topk(a):
        src = nl.ndarray((16, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        v = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        i = nl.ndarray((16, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=v, idx_dst=i, src=src, n=64)
        o = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=v)
        return o
    with pytest.raises(NotImplementedError, match="nki.isa.topk"):
        topk(np.zeros((16, 4), np.float32))

    @legacy.jit
    def all_reduce(a):
        o = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        lnl.store(o, lnl.all_reduce(lnl.load(a), op=np.add, program_axes=[0]))
        return o
    with pytest.raises(NotImplementedError, match="nki.language.all_reduce"):
        all_reduce(np.zeros((4, 4), np.float32))
    with pytest.raises(NotImplementedError, match="nki.language.gemm_grid"):
        lnl.gemm_grid()


# --- element-wise nki.language functions, both front ends, against NumPy ------------------------------
_RNG = np.random.default_rng(11)
_X = _RNG.uniform(-3.0, 3.0, (128, 48)).astype(np.float32)
_POS = _RNG.uniform(0.5, 2.0, (128, 48)).astype(np.float32)
_BOOL_A = (_X > 0).astype(np.float32)
_BOOL_B = (_X[::-1] > 0.5).astype(np.float32)
_ERF = np.vectorize(math.erf)


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _phi(v):
    return 0.5 * (1.0 + _ERF(v / np.sqrt(2.0)))


# (name, input, reference): definitions as AWS's pages state them (numpy's functions where the page says
# "Similar to numpy.<name>"; the activation functions and their derivatives by their textbook formulas)
UNARY = [
    ("log", _POS, np.log), ("sigmoid", _X, _sig), ("gelu", _X, lambda v: v * _phi(v)),
    ("gelu_apprx_tanh", _X, lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))),
    ("gelu_apprx_sigmoid", _X, lambda v: v * _sig(1.702 * v)),
    ("gelu_dx", _X, lambda v: _phi(v) + v * np.exp(-v * v / 2) / np.sqrt(2 * np.pi)),
    ("silu_dx", _X, lambda v: _sig(v) * (1 + v * (1 - _sig(v)))),
    ("softplus", _X, lambda v: np.log1p(np.exp(v))), ("mish", _X, lambda v: v * np.tanh(np.log1p(np.exp(v)))),
    ("erf", _X, _ERF), ("erf_dx", _X, lambda v: 2 / np.sqrt(np.pi) * np.exp(-v * v)),
    ("sin", _X, np.sin), ("cos", _X, np.cos), ("tan", _X * 0.4, np.tan), ("arctan", _X, np.arctan),
    ("ceil", _X, np.ceil), ("floor", _X, np.floor), ("trunc", _X, np.trunc), ("sign", _X, np.sign),
    ("negative", _X, np.negative), ("logical_not", _BOOL_A, lambda v: (v == 0).astype(np.float32)),
]
BINARY = [
    ("divide", _X, _POS, np.divide), ("power", _POS, _X, np.power), ("fmod", _X, _POS, np.fmod),
    ("mod", _X, _POS, np.mod), ("less", _X, _POS, np.less), ("less_equal", _X, _POS, np.less_equal),
    ("greater_equal", _X, _POS, np.greater_equal), ("equal", np.round(_X), np.round(_X[::-1]), np.equal),
    ("not_equal", np.round(_X), np.round(_X[::-1]), np.not_equal),
    ("logical_and", _BOOL_A, _BOOL_B, np.logical_and), ("logical_or", _BOOL_A, _BOOL_B, np.logical_or),
    ("logical_xor", _BOOL_A, _BOOL_B, np.logical_xor),
]
_IA = _RNG.integers(0, 1000, (128, 48)).astype(np.int32)
_IB = _RNG.integers(0, 8, (128, 48)).astype(np.int32)
INTEGER = [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor),
           ("left_shift", np.left_shift), ("right_shift", np.right_shift)]


def _unary_kernel(jit, lang, fn):
    @jit
    def k(a):
        o = lang.ndarray(a.shape, dtype=a.dtype, buffer=lang.shared_hbm)
        lang.store(o, value=fn(lang.load(a)))
        return o
    return k


def _binary_kernel(jit, lang, fn):
    @jit
    def k(a, b):
        o = lang.ndarray(a.shape, dtype=a.dtype, buffer=lang.shared_hbm)
        lang.store(o, value=fn(lang.load(a), lang.load(b)))
        return o
    return k


FRONTS = {"current": (nki.jit, nl), "legacy": (legacy.jit, lnl)}


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("name,x,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_language_function_matches_numpy(front, name, x, ref):
    jit, lang = FRONTS[front]
    got = _unary_kernel(jit, lang, getattr(lang, name))(x)
    np.testing.assert_allclose(got, ref(x).astype(np.float32), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("name,x,y,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_language_function_matches_numpy(front, name, x, y, ref):
    jit, lang = FRONTS[front]
    got = _binary_kernel(jit, lang, getattr(lang, name))(x, y)
    np.testing.assert_allclose(got, ref(x, y).astype(np.float32), rtol=1e-6, atol=0)


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("name,ref", INTEGER, ids=[i[0] for i in INTEGER])
def test_integer_language_function_matches_numpy(front, name, ref):
    jit, lang = FRONTS[front]
    np.testing.assert_array_equal(_binary_kernel(jit, lang, getattr(lang, name))(_IA, _IB), ref(_IA, _IB))
    np.testing.assert_array_equal(_unary_kernel(jit, lang, lang.invert)(_IA), np.invert(_IA))


def test_abs_max_and_abs_min_keep_the_sign_on_neuroncore_v4():
    # nki.language.abs_max: "abs_max(-5, 3) returns -5"; abs_min(-5, 3) returns 3; NeuronCore-v4 only
    y = _X[::-1].copy()
    for fn, pick in ((nl.abs_max, np.greater), (nl.abs_min, np.less)):
        k = nki.jit(_binary_kernel(lambda f: f, nl, fn), platform_target="trn3")
        np.testing.assert_array_equal(k(_X, y), np.where(pick(np.abs(_X), np.abs(y)), _X, y))


# --- nki.isa instructions, values from each page's definition ---------------------------------------------
def _sb(t, dtype=None):
    s = nl.ndarray(t.shape, dtype=dtype or t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=t)
    return s


def _hbm(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


def test_nc_match_replace8_pairs_duplicate_values_in_reverse():
    # nki.isa.nc_match_replace8: vals processed i = 7 .. 0; the first matched position goes to the highest
    # dst_idx slot among duplicates (the page's example: data [1,2,3,4,8 x7], vals [3, 8 x7])
    @nki.jit(platform_target="trn2")
    def k(d, v):
        o = nl.ndarray(d.shape, dtype=nl.float32, buffer=nl.sbuf)
        idx = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_match_replace8(dst=o, data=_sb(d), vals=_sb(v), imm=-1.0, dst_idx=idx)
        return _hbm(o), _hbm(idx)
    d = np.array([[1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8]], np.float32)
    v = np.array([[3, 8, 8, 8, 8, 8, 8, 8]], np.float32)
    out, idx = k(d, v)
    np.testing.assert_array_equal(idx, [[2, 10, 9, 8, 7, 6, 5, 4]])
    np.testing.assert_array_equal(out, [[1, 2, -1, 4, -1, -1, -1, -1, -1, -1, -1]])


def test_nc_find_index8_ascending_duplicates_and_all_ones_for_absent_values():
    # nki.isa.nc_find_index8: first occurrence; duplicate vals take matching positions in ascending order;
    # an absent value gives 0xFFFFFFFF (uint32)
    @nki.jit(platform_target="trn2")
    def k(d, v):
        idx = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=idx, data=_sb(d), vals=_sb(v))
        return _hbm(idx)
    d = np.array([[5, 7, 9, 7, 7, 1, 2, 3, 4, 6]], np.float32)
    miss = 0xFFFFFFFF
    np.testing.assert_array_equal(k(d, np.array([[7, 7, 7, 5, 42, 3, 6, 100]], np.float32)),
                                  [[1, 3, 4, 0, miss, 7, 9, miss]])


def test_nonzero_with_count_writes_every_sixteenth_partition_only():
    # nki.isa.nonzero_with_count: partitions 0, 16, ..., 112 only; indices + index_offset, padding, count
    src = np.zeros((128, 8), np.float32)
    src[0] = [0, 1, 1, 0, 0, 1, 0, 0]
    src[16] = [3, 0, 0, 0, 0, 0, 0, -2]
    src[5] = 1.0                                      # not a partition GpSimd reads here

    @nki.jit(platform_target="trn2")
    def k(s):
        o = nl.ndarray((128, 9), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=o, value=7)
        nisa.nonzero_with_count(dst=o, src=_sb(s), index_offset=16, padding_val=-1)
        return _hbm(o)
    out = k(src)
    np.testing.assert_array_equal(out[0], [17, 18, 21, -1, -1, -1, -1, -1, 3])
    np.testing.assert_array_equal(out[16], [16, 23, -1, -1, -1, -1, -1, -1, 2])
    np.testing.assert_array_equal(out[32], [-1] * 8 + [0])
    assert np.all(out[5] == 7) and np.all(out[127] == 7)


def test_range_select_compares_the_free_index_plus_range_start_and_reduces():
    x = _RNG.standard_normal((4, 16)).astype(np.float32)
    b0 = np.array([[2], [0], [5], [10]], np.float32)
    b1 = np.array([[8], [3], [15], [12]], np.float32)

    @nki.jit(platform_target="trn2")
    def k(x, b0, b1):
        o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(dst=o, on_true_tile=_sb(x), comp_op0=nl.greater_equal, comp_op1=nl.less,
                          bound0=_sb(b0), bound1=_sb(b1), reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=r,
                          reduce_op=nl.maximum, range_start=1, on_false_value=-100.0)
        return _hbm(o), _hbm(r)
    out, red = k(x, b0, b1)
    index = 1.0 + np.arange(16, dtype=np.float32)[None, :]
    ref = np.where((index >= b0) & (index < b1), x, -100.0)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(red, ref.max(axis=1, keepdims=True))


def test_scalar_tensor_tensor_with_both_operands_reversed():
    x = _RNG.standard_normal((8, 16)).astype(np.float32)
    y = _RNG.standard_normal((8, 16)).astype(np.float32)
    s = _RNG.standard_normal((8, 1)).astype(np.float32)

    @nki.jit(platform_target="trn2")
    def k(x, y, s):
        o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=o, data=_sb(x), op0=nl.subtract, operand0=_sb(s), op1=nl.divide,
                                  operand1=_sb(y), reverse0=True, reverse1=True)
        return _hbm(o)
    np.testing.assert_allclose(k(x, y, s), y / (s - x), rtol=1e-6)


def test_exponential_subtracts_the_max_and_sums_on_neuroncore_v4():
    x = _RNG.standard_normal((4, 32)).astype(np.float32)
    m = x.max(axis=1, keepdims=True)

    @nki.jit(platform_target="trn3")
    def k(x, m):
        o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.exponential(dst=o, src=_sb(x), max_value=_sb(m), reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        return _hbm(o), _hbm(r)
    out, total = k(x, m)
    np.testing.assert_allclose(out, np.exp(x - m), rtol=1e-6)
    np.testing.assert_allclose(total, np.exp(x - m).sum(axis=1, keepdims=True), rtol=1e-5)


def test_nc_n_gather_gathers_within_each_partition():
    d = np.arange(4 * 32, dtype=np.float32).reshape(4, 32)
    ind = _RNG.integers(0, 32, (4, 10)).astype(np.uint32)

    @nki.jit(platform_target="trn2")
    def k(d, ind):
        o = nl.ndarray(ind.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=o, data=_sb(d), indices=_sb(ind))
        return _hbm(o)
    np.testing.assert_array_equal(k(d, ind), np.take_along_axis(d, ind.astype(np.int64), axis=1))


def test_sequence_bounds_of_the_pages_example():
    # nki.isa.sequence_bounds page: ids [0,1,1,2,2,2,0,3,3] -> starts [9,1,1,3,3,3,9,7,7],
    # (exclusive) ends [-1,3,3,6,6,6,-1,9,9]; padding (id 0) gets start n, end -1
    @nki.jit(platform_target="trn2")
    def k(s):
        o = nl.ndarray((1, 2, s.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
        nisa.sequence_bounds(dst=o, segment_ids=_sb(s))
        return _hbm(o)
    out = k(np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3]], np.float32))
    np.testing.assert_array_equal(out, [[[9, 1, 1, 3, 3, 3, 9, 7, 7], [-1, 3, 3, 6, 6, 6, -1, 9, 9]]])


# --- the remaining instructions and loops without a test of their own ----------------------------------
_SEQ = np.arange(1, 8 * 16 + 1, dtype=np.float32).reshape(8, 16)


def test_dropout_zeroes_elements_and_keeps_the_others_unscaled():
    # nki.isa.dropout: "probability of replacing elements with zeros" (no rescaling on the page)
    @nki.jit(platform_target="trn2")
    def k(a):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dropout(dst=o, data=_sb(a), prob=0.5)
        keep = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dropout(dst=keep, data=_sb(a), prob=0.0)
        return _hbm(o), _hbm(keep)
    a = _RNG.uniform(1.0, 2.0, (128, 256)).astype(np.float32)
    half, keep = k(a)
    assert np.all((half == 0) | (half == a))
    assert 0.45 < np.mean(half == 0) < 0.55
    np.testing.assert_array_equal(keep, a)


def test_dma_compute_adds_its_sources():
    @nki.jit(platform_target="trn2")
    def k(a, b):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_compute(dst=o, srcs=[a, b], reduce_op=nl.add)
        return o
    np.testing.assert_array_equal(k(_SEQ, 2 * _SEQ), 3 * _SEQ)


def test_rand2_is_uniform_in_its_range_on_neuroncore_v4():
    @nki.jit(platform_target="trn3")
    def k(a):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.rand2(dst=o, min=-2.0, max=3.0)
        return _hbm(o)
    v = k(np.zeros((128, 512), np.float32))
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(float(v.mean()) - 0.5) < 0.05 and len(np.unique(v)) > 60000


def test_fori_loop_and_while_loop_run_their_bodies():
    @nki.jit(platform_target="trn2")
    def k(a):
        t = _sb(a)
        acc = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)

        def add(i):
            nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
        nl.fori_loop(0, 5, add)                       # 5 times
        count = nisa.register_alloc()
        nisa.register_move(count, 3)

        def again(c):
            nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
            nxt = nisa.register_alloc()
            nisa.register_move(nxt, c.get() - 1)
            return nxt
        nl.while_loop(count, again)                   # 3 more times
        return _hbm(acc)
    np.testing.assert_array_equal(k(_SEQ), 8 * _SEQ)


@pytest.mark.parametrize("front", FRONTS)
def test_prod_and_expand_dims(front):
    jit, lang = FRONTS[front]
    x = _RNG.uniform(0.5, 1.5, (8, 16)).astype(np.float32)

    @jit
    def k(a):
        o = lang.ndarray((8, 1), dtype=lang.float32, buffer=lang.shared_hbm)
        lang.store(o, lang.prod(lang.load(a), axis=1, keepdims=True))
        e = lang.ndarray((8, 1, 16), dtype=lang.float32, buffer=lang.shared_hbm)
        lang.store(e, lang.expand_dims(lang.load(a), 1))
        return o, e
    p, e = k(x)
    np.testing.assert_allclose(p, x.prod(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(e, x[:, None, :])
