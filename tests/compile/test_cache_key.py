"""The cache key follows the code: a hash of compile/'s sources and the C++ extension goes into
every key, so an entry written by other code is a miss (and is recompiled) while unchanged code
hits; the package version comes from the distribution metadata."""
from __future__ import annotations

import ast
import importlib.metadata
import shutil
import subprocess
import sys
import textwrap

import torch

import torch_neuronx
import torch_neuronx.compile as tnc
from torch_neuronx.compile import cache, cache_key


def test_code_hash_covers_every_compile_source_and_the_extension(tmp_path):
    sources = sorted(cache_key.COMPILE_DIR.glob("*.py"))
    assert {p.name for p in sources} >= {"backend.py", "aten_compile.py", "inductor_device.py",
                                         "decompositions.py", "cache_key.py"}
    extension = cache_key.extension_path()
    assert extension.samefile(torch_neuronx._C.__file__)
    assert cache_key.code_hash() == cache_key.hash_code(sources, extension)
    assert cache_key.versions()["code"] == cache_key.code_hash()

    # a copy of the package's compile sources and a stand-in extension
    copy_dir = tmp_path / "compile"
    copy_dir.mkdir()
    for p in sources:
        shutil.copy(p, copy_dir / p.name)
    copies = sorted(copy_dir.glob("*.py"))
    fake_ext = tmp_path / "_C.so"
    fake_ext.write_bytes(b"\x7fELF extension v1")
    before = cache_key.hash_code(copies, fake_ext)
    assert before == cache_key.hash_code(sources, fake_ext)  # file names and bytes, not folders

    for name in ("decompositions.py", "inductor_device.py", "aten_compile.py"):
        edited = copy_dir / name
        original = edited.read_bytes()
        edited.write_bytes(original + b"\n# one more line\n")
        assert cache_key.hash_code(copies, fake_ext) != before, name
        edited.write_bytes(original)
    assert cache_key.hash_code(copies, fake_ext) == before
    fake_ext.write_bytes(b"\x7fELF extension v2")  # a rebuilt C++ extension
    assert cache_key.hash_code(copies, fake_ext) != before
    (copy_dir / "new_pass.py").write_text("X = 1\n")  # a new module
    assert cache_key.hash_code(sorted(copy_dir.glob("*.py")), fake_ext) != cache_key.hash_code(copies, fake_ext)


def _package_imports(path) -> set[str]:
    """Names ``path`` (a module of torch_neuronx/compile/) imports from the package outside
    compile/ (``from .. import x`` → ``torch_neuronx.x``, ``from ..y import z`` →
    ``torch_neuronx.y.z``, ``import torch_neuronx.y`` → ``torch_neuronx.y``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level >= 2:
            base = "torch_neuronx" + (f".{node.module}" if node.module else "")
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("torch_neuronx"):
            if not node.module.startswith("torch_neuronx.compile"):
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names
                         if a.name.startswith("torch_neuronx") and not a.name.startswith("torch_neuronx.compile"))
    return found


def test_every_package_import_of_compile_enters_the_key():
    imports = {p.name: _package_imports(p) for p in cache_key.COMPILE_DIR.glob("*.py")}
    assert "torch_neuronx._version.__version__" in imports["cache_key.py"]  # the scan sees such imports
    unlisted = {mod: sorted(n for n in names if n not in cache_key.PACKAGE_DEPENDENCIES)
                for mod, names in imports.items()}
    unlisted = {mod: names for mod, names in unlisted.items() if names}
    assert not unlisted, (
        f"compile/ imports {unlisted} from the package: hash it in cache_key.code_hash or list it "
        "in cache_key.PACKAGE_DEPENDENCIES with how it enters the key")


def _affine(x):
    return (x * 3 - 1).tanh().sum(-1)


def test_entry_of_changed_code_is_a_miss_and_unchanged_code_hits(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path))
    x = torch.linspace(-1, 1, 12).view(3, 4)
    expected = _affine(x)

    def fresh_run():
        """A compile as in a new process: no compiled frame, no memory level."""
        torch._dynamo.reset()
        cache.GLOBAL_CACHE.clear_memory()
        tnc.reset_dynamo_metrics()
        out = torch.compile(_affine, backend="neuron")(x.to("neuron"))
        torch.testing.assert_close(out.cpu(), expected)
        m = tnc.get_dynamo_metrics()
        return m["graphs_compiled"], m["cache_hits_disk"], m["cache_hits_memory"]

    assert fresh_run() == (1, 0, 0)          # written
    assert fresh_run() == (0, 1, 0)          # unchanged code: served from disk
    (written,) = cache.list_entries(tmp_path)

    edited = "f" * 64                        # as if a compile source or _C had changed
    monkeypatch.setattr(cache_key, "code_hash", lambda: edited)
    assert fresh_run() == (1, 0, 0)          # the old entry is not served: recompiled
    keys = {e.key for e in cache.list_entries(tmp_path)}
    assert len(keys) == 2 and written.key in keys
    assert fresh_run() == (0, 1, 0)          # and the new code's entry is served in turn


def test_version_is_the_distribution_metadata():
    assert torch_neuronx.__version__ == importlib.metadata.version("torch-neuronx")
    assert cache_key.versions()["torch_neuronx"] == torch_neuronx.__version__
    # diffusers finds the package by its import name and reads the same metadata
    from diffusers.utils import is_torch_neuronx_available

    assert is_torch_neuronx_available()
    assert importlib.metadata.version("torch_neuronx") == torch_neuronx.__version__


def test_version_without_metadata_is_explicitly_unknown():
    code = textwrap.dedent("""
        import importlib.metadata as md
        real = md.version
        def version(name):
            if name.replace("_", "-") == "torch-neuronx":
                raise md.PackageNotFoundError(name)
            return real(name)
        md.version = version
        import torch, torch_neuronx
        print(torch_neuronx.__version__, torch.ones(2, device="neuron").sum().item())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["0+unknown", "2.0"]


def test_inductor_fx_graph_cache_keys_neuron_graphs_by_this_code():
    # Plain Inductor caches neuron graphs in its own FX graph cache: its key must hash the code
    # that generates neuron wrappers, or a changed torch_neuronx would load old wrappers.
    from torch._inductor.codecache import FxGraphHashDetails
    from torch._inductor.codegen.common import get_custom_backend_config_for_device

    from torch_neuronx.compile import codegen_config, inductor_device

    inductor_device.register()
    assert get_custom_backend_config_for_device("neuron") is codegen_config
    assert codegen_config.save_config_portable() == {"code": cache_key.code_hash()}
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    details = FxGraphHashDetails(gm, [torch.ones(2)], {}, {})
    assert details.custom_backend_codegen_configs["neuron"] == {"code": cache_key.code_hash()}
