"""The opt-in import hook: off by default; when on, ``nki*`` is the current front end and
``neuronxcc.nki*`` the legacy one, so kernel files written for AWS's packages run unchanged."""
import sys

import numpy as np
import pytest

import torch_neuronx.nki as tnki


def test_hook_is_not_installed_on_import():
    assert not tnki.import_hook_installed()
    assert "nki" not in sys.modules or not sys.modules["nki"].__name__.startswith("torch_neuronx")


@pytest.fixture
def hook():
    tnki.install_import_hook()
    try:
        yield
    finally:
        tnki.uninstall_import_hook()
    assert "nki" not in sys.modules and "neuronxcc" not in sys.modules and not tnki.import_hook_installed()


def test_nki_is_the_current_front_end(hook):
    import nki
    import nki.isa as nisa
    import nki.language as nl
    from nki.isa import constants as isa_constants
    assert nki is tnki.current and nl is tnki.current.language and nisa is tnki.current.isa
    assert isa_constants.engine.vector is nisa.engine.vector

    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        e = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t)
        nisa.dma_copy(dst=o, src=e)
        return o
    a = np.linspace(-2, 2, 128 * 8, dtype=np.float32).reshape(128, 8)
    np.testing.assert_allclose(k(a), np.exp(a), rtol=1e-6)


def test_neuronxcc_nki_is_the_legacy_front_end(hook):
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl
    import neuronxcc.nki.typing as nt
    assert nki is tnki and nl is tnki.language and nisa is tnki.isa and nt is tnki.typing

    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(o, value=nisa.activation(nl.exp, nl.load(a)))
        return o
    a = np.zeros((128, 64), np.float32)
    np.testing.assert_array_equal(k(a), np.ones_like(a))


def test_a_module_the_package_lacks_is_not_invented(hook):
    with pytest.raises(ModuleNotFoundError, match="nki.no_such_module"):
        import nki.no_such_module  # noqa: F401


def test_nki_dtype_is_a_module_of_the_nl_dtypes(hook):
    # nki-library annotates `dtype: nki.dtype = nl.bfloat16` and its tests `import nki.dtype as nt`
    import nki
    import nki.dtype as nt
    import nki.language as nl
    assert nki.dtype is nt and nt.float8_e4m3 is nl.float8_e4m3 and nt.bfloat16 is nl.bfloat16
    assert np.zeros(3, dtype=nt.float8_e4m3).dtype == nl.float8_e4m3
