"""``TORCH_NEURONX_LOG_LEVEL`` / ``TORCH_NEURONX_LOG_FILE``: the ``torch_neuronx`` logger's level and
handler, bad values warned (never raised), and the records reaching the console of a process."""
from __future__ import annotations

import logging

import pytest

from torch_neuronx import _logging


@pytest.fixture
def logger():
    """The ``torch_neuronx`` logger, restored (level, propagation, handlers) after the test."""
    log = logging.getLogger("torch_neuronx")
    saved = (log.level, log.propagate, list(log.handlers))
    yield log
    for h in list(log.handlers):
        if h not in saved[2]:
            log.removeHandler(h)
            h.close()
    log.setLevel(saved[0])
    log.propagate = saved[1]


def _own(log: logging.Logger) -> list[logging.Handler]:
    return [h for h in log.handlers if isinstance(h, _logging._OwnHandler)]


@pytest.mark.parametrize("value,level", [
    ("0", logging.ERROR), ("1", logging.WARNING), ("2", logging.INFO), ("3", logging.DEBUG),
    (" 3 ", logging.DEBUG), ("info", logging.INFO), ("WARN", logging.WARNING), ("Debug", logging.DEBUG),
])
def test_level_values(logger, value, level):
    _logging.configure({"TORCH_NEURONX_LOG_LEVEL": value})
    assert logger.level == level
    assert len(_own(logger)) == 1 and logger.propagate is False
    _logging.configure({"TORCH_NEURONX_LOG_LEVEL": "0"})      # configuring again replaces the handler
    assert len(_own(logger)) == 1 and logger.level == logging.ERROR


def test_unset_leaves_the_logger_to_the_application(logger):
    before = (logger.level, logger.propagate, list(logger.handlers))
    _logging.configure({})
    _logging.configure({"TORCH_NEURONX_LOG_LEVEL": "  "})
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


@pytest.mark.parametrize("value", ["loud", "4", "-1", "verbose"])
def test_bad_level_warns_with_the_allowed_values(logger, value):
    before = (logger.level, list(logger.handlers))
    with pytest.warns(_logging.LogLevelWarning,
                      match=rf"TORCH_NEURONX_LOG_LEVEL='{value}' is not a log level: use 0 \(errors\), 1 "
                            r"\(warnings\), 2 \(info\) or 3 \(debug\)"):
        _logging.configure({"TORCH_NEURONX_LOG_LEVEL": value})
    assert (logger.level, list(logger.handlers)) == before


def test_log_file_receives_the_records(logger, tmp_path):
    path = tmp_path / "neuron.log"
    _logging.configure({"TORCH_NEURONX_LOG_LEVEL": "2", "TORCH_NEURONX_LOG_FILE": str(path)})
    logging.getLogger("torch_neuronx.compile.aten_compile").info("graph %d compiled", 7)
    logging.getLogger("torch_neuronx.compile.backend").debug("not at INFO")
    for h in _own(logger):
        h.flush()
    assert path.read_text().splitlines() == [
        "[torch_neuronx] INFO torch_neuronx.compile.aten_compile: graph 7 compiled"]


def test_unopenable_log_file_falls_back_to_the_console(logger, tmp_path):
    with pytest.warns(_logging.LogLevelWarning, match="TORCH_NEURONX_LOG_FILE=.* cannot be opened"):
        _logging.configure({"TORCH_NEURONX_LOG_LEVEL": "1", "TORCH_NEURONX_LOG_FILE": str(tmp_path / "no" / "x.log")})
    assert [type(h) for h in _own(logger)] == [_logging._StreamHandler]


def test_debug_level_reaches_stderr_and_a_bad_value_does_not_break_import_torch(py):
    r = py("import torch; print(torch.neuron.device_count())",
           env={"TORCH_NEURONX_LOG_LEVEL": "3", "NEURON_RT_NUM_CORES": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1"]
    assert ("[torch_neuronx] DEBUG torch_neuronx._state: topology: trn2 (Trainium2), 1 chip, LNC=2, 1 of 4 "
            "logical NeuronCores visible (NEURON_RT_NUM_CORES=1)") in r.stderr, r.stderr

    r = py("import torch; print(torch.neuron.device_count())", env={"TORCH_NEURONX_LOG_LEVEL": "loud"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["4"]
    assert "LogLevelWarning: TORCH_NEURONX_LOG_LEVEL='loud' is not a log level" in r.stderr, r.stderr
