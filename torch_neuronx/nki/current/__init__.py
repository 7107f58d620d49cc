"""The current NKI front end: AWS's ``nki`` package (NKI 0.6, Neuron SDK 2.32), served as ``import nki``.

``nki.isa`` instructions take their destination first (``nisa.nc_matmul(dst, stationary, moving)``)
and map one-to-one onto the instruction layer (:mod:`torch_neuronx.nki.instructions`) that the legacy
front end (``neuronxcc.nki`` = :mod:`torch_neuronx.nki`) shares. Modules: :mod:`.language`
(``nki.language``), :mod:`.isa` (``nki.isa``), :mod:`.collectives` (``nki.collectives``); ``nki.compiler``
and ``nki.typing`` are the shared :mod:`torch_neuronx.nki.compiler` / :mod:`torch_neuronx.nki.typing`.

Use it without AWS's package through the import hook (``torch_neuronx.nki.install_import_hook()``), or
directly::

    from torch_neuronx.nki import current as nki
    import torch_neuronx.nki.current.language as nl
    import torch_neuronx.nki.current.isa as nisa
"""
from __future__ import annotations

from .. import compiler, typing
from ..benchmark import benchmark, profile
from ..launch import baremetal, execute, jit_current as jit, simulate
from ..typing import tensor
from . import collectives, dtype, isa, language

__all__ = ["jit", "simulate", "execute", "benchmark", "baremetal", "profile", "language", "isa", "collectives",
           "compiler", "typing", "tensor", "dtype"]
