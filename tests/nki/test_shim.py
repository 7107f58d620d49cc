"""The opt-in `import nki` shim: off by default, resolves AWS module names to this package when on."""
import sys

import numpy as np

import torch_neuronx.nki as tnki


def test_shim_is_not_installed_on_import():
    assert not tnki.nki_shim_installed()
    assert "nki" not in sys.modules or not sys.modules["nki"].__name__.startswith("torch_neuronx")


def test_shim_makes_aws_module_names_work():
    tnki.install_nki_shim()
    try:
        import nki
        import nki.language as nl
        import nki.isa as nisa
        assert nki is tnki and nl is tnki.language and nisa is tnki.isa

        @nki.jit
        def k(a):
            o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(o, value=nisa.activation(nl.exp, nl.load(a)))
            return o
        a = np.zeros((128, 64), np.float32)
        np.testing.assert_array_equal(k(a), np.ones_like(a))
    finally:
        tnki.uninstall_nki_shim()
    assert "nki" not in sys.modules and not tnki.nki_shim_installed()
