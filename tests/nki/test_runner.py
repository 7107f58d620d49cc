"""``torch-neuronx nki run FILE``: a kernel file written with AWS's imports runs unchanged."""
import sys

import numpy as np
import pytest

import torch_neuronx.nki as tnki
from torch_neuronx.cli.main import main as cli_main
from torch_neuronx.nki import runner

KERNEL_FILE = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def double(a):
    o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=o, src=t)
    return o
'''


@pytest.fixture
def kernel_file(tmp_path):
    p = tmp_path / "double_kernel.py"
    p.write_text(KERNEL_FILE)
    hooked = tnki.import_hook_installed()
    yield p
    sys.modules.pop("double_kernel", None)
    if not hooked:
        tnki.uninstall_import_hook()      # the runner switches the hook on for the process


def test_run_file_on_an_npy_input(kernel_file, tmp_path):
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.save(tmp_path / "a.npy", a)
    res = runner.run_file(str(kernel_file), inputs=[str(tmp_path / "a.npy")])
    assert res.kernel == "double"
    np.testing.assert_array_equal(res.outputs[0], 2 * a)
    assert res.estimate is not None and res.estimate.latency_us > 0


def test_cli_takes_inputs_before_or_after_options(kernel_file, tmp_path, capsys):
    a = np.ones((4, 4), np.float32)
    np.save(tmp_path / "a.npy", a)
    out_dir = tmp_path / "out"
    assert cli_main(["nki", "run", str(kernel_file), "--kernel", "double", str(tmp_path / "a.npy"),
                     "--save", str(out_dir)]) == 0
    saved = sorted(out_dir.glob("*.npy"))
    assert any(np.array_equal(np.load(f), 2 * a) for f in saved), [f.name for f in saved]
    assert "estimated latency" in capsys.readouterr().out


def test_cli_rejects_an_unknown_option(kernel_file):
    with pytest.raises(SystemExit) as ei:
        cli_main(["nki", "run", str(kernel_file), "4x4", "--no-such-option"])
    assert ei.value.code == 2


@pytest.mark.parametrize("grid, message", [("x", "--grid 'x' is not a launch grid"),
                                           ("2,x", "--grid '2,x' is not a launch grid"),
                                           ("-1", "launch grid dimension -1 is negative")])
def test_cli_names_a_bad_grid(kernel_file, capsys, grid, message):
    # "--grid x" printed int()'s "invalid literal for int() with base 10: 'x'"; "--grid -1" ran no
    # program instance and blamed the kernel ("returned no output tensor")
    assert cli_main(["nki", "run", str(kernel_file), "4x4", "--grid", grid]) == 2
    assert message in capsys.readouterr().err
