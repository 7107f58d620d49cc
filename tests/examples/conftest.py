"""The tiny Llama assets of ``examples/tiny_llm.py`` shared by the example tests of a session (the
TRL and generation examples read them; none writes into them)."""
from __future__ import annotations

from pathlib import Path

import pytest

from .examples_run import write_assets


@pytest.fixture(scope="session")
def assets(tmp_path_factory) -> Path:
    """The examples' default tiny assets (Llama hidden 128, 2 layers; 64 texts)."""
    path = tmp_path_factory.mktemp("tiny-llm")
    write_assets(path)
    return path


@pytest.fixture(scope="session")
def small_assets(tmp_path_factory) -> Path:
    """A smaller Llama (hidden 64, 1 layer) for the compiled runs: cold compiles stay short."""
    path = tmp_path_factory.mktemp("tiny-llm-small")
    write_assets(path, hidden_size=64, num_layers=1)
    return path
