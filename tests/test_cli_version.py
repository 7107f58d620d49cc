"""``torch-neuronx --version``: prints the package's and torch's versions and exits 0, as a user of any
command-line tool expects (it was an argparse usage error)."""
import pytest
import torch

from torch_neuronx._version import __version__
from torch_neuronx.cli.main import main


def test_version_prints_the_package_and_torch_versions(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"torch-neuronx {__version__} (torch {torch.__version__})"
