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


def test_first_host_fallback_of_each_op_is_logged_once_at_info(py):
    r = py("""
        import torch
        x = torch.ones(3, dtype=torch.float64, device='neuron')
        for _ in range(3):
            y = x * 2                       # aten::mul.Tensor: fp64 work, a host fallback on Trainium
        z = (x + 1).sum()                   # two more fallback ops, each logged once
        w = torch.ones(3, device='neuron') * 2   # fp32: not a fallback, not logged
        print(y.cpu().tolist(), float(z.cpu()), w.cpu().tolist())
    """, env={"TORCH_NEURONX_LOG_LEVEL": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[2.0, 2.0, 2.0] 6.0 [2.0, 2.0, 2.0]"
    first = [line for line in r.stderr.splitlines() if "ran as a host fallback" in line]
    ops = [line.split("torch_neuronx.ops.tracking: ")[1].split(" ")[0] for line in first]
    assert all(line.startswith("[torch_neuronx] INFO torch_neuronx.ops.tracking: ") for line in first), first
    assert len(ops) == len(set(ops)), first          # once per op
    assert {"aten::mul.Tensor", "aten::add.Tensor"} <= set(ops), first
    assert any(op.startswith("aten::sum") for op in ops), first
    assert "get_fallback_ops()" in first[0]
    # the summary at exit still counts every run
    assert "aten::mul.Tensor x3" in r.stderr, r.stderr


# a child preamble: every record of the torch_neuronx logger kept as (level, logger, message) in `records`
_KEEP_RECORDS = """
        import logging, torch
        records = []
        class Keep(logging.Handler):
            def emit(self, record):
                records.append((record.levelname, record.name, record.getMessage()))
        logging.getLogger('torch_neuronx').addHandler(Keep())"""


def test_host_fallback_records_follow_the_application_logging_setup(py):
    r = py(_KEEP_RECORDS + """
        (torch.ones(2, dtype=torch.float64, device='neuron') * 3).cpu()   # INFO not enabled: dropped
        print(len([r for r in records if 'host fallback' in r[2]]))
        logging.getLogger('torch_neuronx').setLevel(logging.INFO)
        (torch.ones(2, dtype=torch.complex64, device='neuron') - 1).cpu()
        print([r[:2] for r in records if 'aten::sub.Tensor ran as a host fallback' in r[2]])
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["0", "[('INFO', 'torch_neuronx.ops.tracking')]"]


def test_out_of_memory_is_logged_as_an_error_record(py):
    r = py(_KEEP_RECORDS + """
        try:
            torch.empty(100 << 20, dtype=torch.uint8, device='neuron')
        except torch.OutOfMemoryError as e:
            raised = str(e)
        (level, name, message), = records
        print(level, name)
        print(message.startswith('neuron:0 out of memory. Tried to allocate 100.00 MiB'), message in raised)
        x = torch.ones(3 << 20, device='neuron')
        try:
            torch.cat([x] * 6)                     # an OOM inside an op's CPU kernel: logged too
        except torch.OutOfMemoryError:
            pass
        print(len(records), records[-1][:2])
    """, env={"TORCH_NEURONX_HBM_PER_CORE": "64MiB"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().split("\n") == [
        "ERROR torch_neuronx.device.memory", "True True", "2 ('ERROR', 'torch_neuronx.device.memory')"]
