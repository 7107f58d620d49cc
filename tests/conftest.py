"""Shared helpers for the device tests."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from tests.processes import INHERITED

# TRL reads the device name for telemetry unless CI is set.
os.environ.setdefault("CI", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def run_python(code: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter (so environment variables read at
    ``import torch`` take effect) and returns the completed process. The child gets none of our
    ``NEURON_*`` / ``TORCH_NEURONX_*`` variables but the execution mode (``INHERITED``)."""
    full_env = {k: v for k, v in os.environ.items()
                if k in INHERITED or not k.startswith(("NEURON_", "TORCH_NEURONX_"))}
    full_env.pop("LOCAL_RANK", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env, capture_output=True, text=True, timeout=timeout,
    )


@pytest.fixture
def py():
    return run_python


@pytest.fixture(autouse=True)
def _reset_current_device():
    yield
    if torch.neuron.device_count():
        torch.neuron.set_device(0)
