"""The records backend "neuron" logs on the ``torch_neuronx`` logger (``TORCH_NEURONX_LOG_LEVEL``):
a graph compiled, loaded from the compile cache, recompiled for a new shape, and the ops that ran as
host fallbacks."""
from __future__ import annotations

import logging
import warnings

import pytest
import torch

from torch_neuronx.ops import tracking


@pytest.fixture
def records(caplog):
    """The records of the ``torch_neuronx`` logger at DEBUG, whatever ``TORCH_NEURONX_LOG_LEVEL``
    configured (a configured logger does not propagate, so caplog's handler is attached to it)."""
    logger = logging.getLogger("torch_neuronx")
    level, propagate = logger.level, logger.propagate
    logger.addHandler(caplog.handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False            # caplog's handler also sits on the root logger: count each record once
    caplog.handler.setLevel(logging.DEBUG)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _messages(caplog, name: str, level: int = logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name and r.levelno == level]


def test_compile_cache_hit_and_recompile_are_logged(records):
    def scaled_sine(x):
        return torch.sin(x * 3.25) + 1.5

    x = torch.randn(4, 6, device="neuron")
    compiled = torch.compile(scaled_sine, backend="neuron", dynamic=False)
    torch.testing.assert_close(compiled(x).cpu(), scaled_sine(x.cpu()))
    first = _messages(records, "torch_neuronx.compile.aten_compile")
    assert len(first) == 1, first
    assert first[0].startswith("inference graph of 'scaled_sine'") and " compiled in " in first[0], first

    records.clear()
    torch._dynamo.reset()            # a new Dynamo state: the graph comes from the compile cache
    torch.testing.assert_close(torch.compile(scaled_sine, backend="neuron", dynamic=False)(x).cpu(),
                               scaled_sine(x.cpu()))
    again = _messages(records, "torch_neuronx.compile.aten_compile")
    assert len(again) == 1 and "loaded from the compile cache (memory)" in again[0], again
    assert first[0].rsplit("(cache key ", 1)[1] == again[0].rsplit("(cache key ", 1)[1]

    records.clear()
    y = torch.randn(4, 7, device="neuron")
    torch.testing.assert_close(compiled(y).cpu(), scaled_sine(y.cpu()))
    recompiles = _messages(records, "torch_neuronx.compile.metrics")
    assert len(recompiles) == 1, recompiles
    assert recompiles[0].startswith("recompiling 'scaled_sine'"), recompiles
    assert "[1] 6 -> 7" in recompiles[0], recompiles       # the changed dimension, before -> after
    debug = _messages(records, "torch_neuronx.compile.backend", logging.DEBUG)
    assert any("Dynamo graph of 'scaled_sine'" in m and "(4, 7)" in m for m in debug), debug


def test_host_fallback_ops_are_summarised(records):
    tracking.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # the once-per-process fp64 warning, if this process has not had it
        a = torch.arange(6, dtype=torch.float64, device="neuron")
        (a * 2).sum()
    logged = tracking.log_fallback_summary()
    assert logged == tracking.get_fallback_ops() and "aten::mul.Tensor" in logged, logged
    # the summary record (an op's first host-fallback run in this process also logs a record of its own)
    (message,) = [m for m in _messages(records, "torch_neuronx.ops.tracking") if "with their counts" in m]
    assert f"aten::mul.Tensor x{logged['aten::mul.Tensor']}" in message, message

    records.clear()
    logging.getLogger("torch_neuronx").setLevel(logging.WARNING)   # INFO off: nothing logged
    assert tracking.log_fallback_summary() == {} and not records.records
