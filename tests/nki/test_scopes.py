"""AWS's tensor scope rule (``err_local_variable_used_out_of_scope``, AWS's NKI errors page): a tensor
created inside a for loop, or an if/else on a loop index, cannot be used after it. One failing kernel per case,
and the patterns AWS allows (the page's fixes, in-place accumulation, Python values, ``if`` on a value known
when the kernel is traced) checked against NumPy.
"""
import numpy as np
import pytest

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki import current as cnki
import torch_neuronx.nki.current.language as cnl
from torch_neuronx.nki import errors as E
from torch_neuronx.nki import scopes

F32 = np.float32
A = np.arange(128 * 8, dtype=F32).reshape(128, 8)
B = -2 * A


def _raises_scope(kernel, *args, name):
    with pytest.raises(E.err_local_variable_used_out_of_scope) as ei:
        kernel(*args)
    msg = str(ei.value)
    assert msg.startswith("[err_local_variable_used_out_of_scope] rule: ")
    assert f"tensor '{name}'" in msg and "[...] =" in msg
    return msg


# --- failing kernels ----------------------------------------------------------------------------------
@pytest.mark.parametrize("store_in_loop", [True, False], ids=["store-after-the-if", "store-after-the-loop"])
def test_tile_bound_in_if_else_on_the_loop_index_and_read_after_it(store_in_loop):
    """The page's first example (the store inside the loop, after the if) and the reproducer (the store after
    the loop): either way ``tmp`` is read outside the if/else that bound it."""
    @nki.jit
    def k(a, b):
        c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in range(4):
            if i < 2:
                tmp = nl.load(a)
            else:
                tmp = nl.load(b)
            if store_in_loop:
                nl.store(c, tmp)
        if not store_in_loop:
            nl.store(c, tmp)
        return c
    _raises_scope(k, A, B, name="tmp")


def _tile_from_the_last_affine_iteration(jit, lang, rows):
    """The same kernel in either front end: a tile created in an ``affine_range`` body, stored after the loop."""
    @jit
    def k(a):
        c = lang.ndarray((128, 8), dtype=a.dtype, buffer=lang.shared_hbm)
        for i in lang.affine_range(rows // 128):
            t = lang.load(a[i * 128:(i + 1) * 128, :])
        lang.store(c, t)
        return c
    return k


def test_tile_created_in_an_affine_range_body_and_stored_after_the_loop():
    k = _tile_from_the_last_affine_iteration(nki.jit, nl, 512)
    msg = _raises_scope(k, np.zeros((512, 8), F32), name="t")
    assert "[128, 8]" in msg


def test_name_rebound_to_a_new_tensor_in_a_sequential_loop_and_read_after_it():
    """The page's second example: ``data = data + i_tile`` binds a new tensor inside the loop."""
    @nki.jit
    def k(a):
        c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        data = nl.load(a)
        for i in nl.sequential_range(4):
            data = data + nl.full((128, 8), i, dtype=nl.float32)
        nl.store(c, value=data)
        return c
    _raises_scope(k, A, name="data")


def test_the_current_front_end_does_not_check_the_rule():
    """AWS states the rule for the legacy front end only (no errors page for NKI 0.6): the same kernel runs
    in the current front end and stores the last iteration's tile."""
    k = _tile_from_the_last_affine_iteration(cnki.jit, cnl, 256)
    x = np.arange(256 * 8, dtype=F32).reshape(256, 8)
    np.testing.assert_array_equal(k(x), x[128:])


# --- allowed patterns, values against NumPy ------------------------------------------------------------
def test_the_pages_fix_tile_created_before_the_if_and_written_with_ellipsis():
    @nki.jit
    def k(a, b):
        c = nl.ndarray((4, 128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        for i in range(4):
            tmp = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
            if i < 2:
                tmp[...] = nl.load(a)
            else:
                tmp[...] = nl.load(b)
            nl.store(c[i], tmp)
        return c
    np.testing.assert_array_equal(k(A, B), np.stack([A, A, B, B]))


def test_the_pages_fix_in_place_update_in_a_sequential_loop():
    @nki.jit
    def k(a):
        c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        data = nl.load(a)
        for i in nl.sequential_range(4):
            i_tile = nisa.iota(i, dtype=nl.uint32).broadcast_to(data.shape)
            data[...] = data + i_tile
        nl.store(c, value=data)
        return c
    np.testing.assert_allclose(k(A), A + 6, rtol=0, atol=0)


def test_accumulation_with_plus_equals_read_after_the_loop():
    @nki.jit
    def k(a):
        c = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            acc += nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(c, acc)
        return c
    x = np.random.default_rng(0).standard_normal((512, 8)).astype(F32)
    np.testing.assert_allclose(k(x), x.reshape(4, 128, 8).sum(0), rtol=1e-6, atol=1e-5)


def test_python_values_bound_in_a_loop_are_not_tensors():
    @nki.jit
    def k(a):
        c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in range(3):
            scale = float(i + 1)
        nl.store(c, nl.multiply(nl.load(a), scale))
        return c
    np.testing.assert_allclose(k(A), 3 * A, rtol=0, atol=0)


@pytest.mark.parametrize("flag", [True, False])
def test_if_on_a_value_known_at_trace_time_is_not_a_scope(flag):
    """AWS's flash attention kernel (nki-samples) creates its ``lse`` output and its logit-bias tile inside
    ``if`` blocks on kernel arguments and uses them after: such conditions are decided when the kernel is
    traced."""
    @nki.jit
    def k(a, b, use_a):
        if use_a:
            c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
        else:
            c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(b)
        nl.store(c, t)
        return c
    np.testing.assert_array_equal(k(A, B, flag), A if flag else B)


def test_a_tile_used_only_inside_its_loop_runs():
    @nki.jit
    def k(a):
        c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(c[i * 128:(i + 1) * 128, :], nl.exp(t))
        for i in nl.affine_range(4):        # the same name, bound again before its use in another loop
            t = nl.load(c[i * 128:(i + 1) * 128, :])
            nl.store(c[i * 128:(i + 1) * 128, :], t)
        return c
    x = np.random.default_rng(1).standard_normal((512, 8)).astype(F32)
    np.testing.assert_allclose(k(x), np.exp(x), rtol=1e-5)


def test_static_analysis_finds_no_candidate_in_a_straight_kernel():
    def k(a):
        c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            t = nl.load(a[i])
            nl.store(c[i], t)
        return c
    info = scopes.analyze(k)
    assert info is not None and info.candidates == frozenset()
