"""The ``on`` fixture of the adaptive eager tests."""
from __future__ import annotations

import pytest

from torch_neuronx import adaptive


@pytest.fixture
def on():
    """Adaptive eager on with no recorded trace, compiling a trace when it ends the second time (the
    tests count compiles and hits from there); the previous state back afterwards."""
    previous, previous_after = adaptive.enabled(), adaptive.compile_after()
    adaptive.clear_cache()
    adaptive.set_enabled(True)
    adaptive.set_compile_after(2)
    adaptive.reset_adaptive_eager_metrics()
    yield
    adaptive.set_enabled(previous)
    adaptive.set_compile_after(previous_after)
    adaptive.install()  # the regular compiler, in case a test replaced it
