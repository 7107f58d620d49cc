"""``torch_neuronx._import_hooks.after_import``: the callback runs once, after the module's code,
with the module; at once for an imported module; a failing callback warns and the import works;
the module keeps its own loader."""
from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from torch_neuronx import _import_hooks


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("tnx_hook_probe")]:
        del sys.modules[name]


def write(folder, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body))
    importlib.invalidate_caches()


def test_callback_runs_after_the_module_code(module_dir):
    write(module_dir, "tnx_hook_probe_a", "VALUE = 41\n")
    seen = []
    _import_hooks.after_import("tnx_hook_probe_a", lambda m: seen.append(m.VALUE + 1))
    assert seen == [] and _import_hooks.pending().get("tnx_hook_probe_a") == 1
    import tnx_hook_probe_a

    assert seen == [42]
    assert "tnx_hook_probe_a" not in _import_hooks.pending()
    assert type(tnx_hook_probe_a.__loader__).__name__ == "SourceFileLoader"
    assert tnx_hook_probe_a.__spec__.loader is tnx_hook_probe_a.__loader__
    importlib.reload(tnx_hook_probe_a)  # the real loader reloads it, the callback does not run again
    assert seen == [42]


def test_callback_runs_at_once_for_an_imported_module():
    seen = []
    _import_hooks.after_import("json", lambda m: seen.append(m.__name__))
    assert seen == ["json"]


def test_failing_callback_warns_and_the_import_succeeds(module_dir):
    write(module_dir, "tnx_hook_probe_b", "VALUE = 1\n")

    def broken(module):
        raise RuntimeError("boom")

    _import_hooks.after_import("tnx_hook_probe_b", broken)
    with pytest.warns(_import_hooks.ImportHookWarning, match="broken.*tnx_hook_probe_b.*RuntimeError: boom"):
        import tnx_hook_probe_b
    assert tnx_hook_probe_b.VALUE == 1
