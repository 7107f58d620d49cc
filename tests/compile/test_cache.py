"""The disk cache format, integrity checks, layout, keys and the `torch-neuronx cache` CLI
(no compilation: fast)."""
from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap
import time

import pytest

from torch_neuronx.compile import cache, get_dynamo_metrics, reset_dynamo_metrics


def test_entry_roundtrip_and_integrity():
    blob = cache.encode_entry({"key": "k", "kind": "forward"}, b"artifact-bytes")
    assert blob.startswith(b"TNXIND1")  # says what it holds: a pickled Inductor graph
    header, artifact = cache.decode_entry(blob)
    assert header["kind"] == "forward" and artifact == b"artifact-bytes"
    with pytest.raises(cache.CorruptEntry, match="truncated"):
        cache.decode_entry(blob[:-3])
    with pytest.raises(cache.CorruptEntry, match="truncated"):
        cache.decode_entry(blob[:10])
    flipped = bytearray(blob)
    flipped[-1] ^= 0xFF
    with pytest.raises(cache.CorruptEntry, match="checksum"):
        cache.decode_entry(bytes(flipped))
    with pytest.raises(cache.CorruptEntry, match="magic"):
        cache.decode_entry(b"X" * 100)
    with pytest.raises(cache.CorruptEntry, match="magic"):  # an entry of the first format
        cache.decode_entry(b"TNXNEFF1" + blob[len(cache.MAGIC):])


def test_two_level_sharded_layout_and_atomic_write(tmp_path):
    key = cache.cache_key({"graph": "g", "inputs": [[2, 3]]})
    assert len(key) == 64
    path = cache.entry_path(key, tmp_path)
    assert path == tmp_path / key[:2] / key[2:4] / f"{key}.inductor"
    cache.write_entry(path, {"key": key}, b"x" * 1000)
    assert cache.read_entry(path)[1] == b"x" * 1000
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


def test_key_is_canonical_and_identical_across_processes():
    parts = {"graph": "a = b + c", "inputs": [[[4, 8], [8, 1], "torch.float32"]], "kind": "forward"}
    code = textwrap.dedent(f"""
        from torch_neuronx.compile.cache import cache_key
        print(cache_key({parts!r}))
    """)
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == cache.cache_key(dict(reversed(list(parts.items()))))
    assert cache.cache_key({**parts, "kind": "backward"}) != cache.cache_key(parts)


def test_get_or_compile_memory_disk_corrupt_and_disabled(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path))
    reset_dynamo_metrics()
    calls = []

    def compile_fn():
        calls.append(1)
        return "value", b"artifact"

    c = cache.CompileCache()
    key = cache.cache_key({"g": 1})
    assert c.get_or_compile(key, compile_fn, bytes.decode,
                            cache.EntryDescription(kind="forward", name="'f' (x.py:1)")).source == "compiled"
    assert c.get_or_compile(key, compile_fn, bytes.decode, {}).source == "memory"
    c.clear_memory()
    hit = c.get_or_compile(key, compile_fn, bytes.decode, {})
    assert (hit.source, hit.value) == ("disk", "artifact")
    path = cache.entry_path(key)
    path.write_bytes(path.read_bytes()[:-5])  # truncate
    c.clear_memory()
    with pytest.warns(cache.CacheCorruptWarning, match="corrupt .*truncated.*recompiling"):
        assert c.get_or_compile(key, compile_fn, bytes.decode, {}).source == "compiled"
    assert cache.read_entry(path)[1] == b"artifact"  # rewritten
    monkeypatch.setenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", "1")
    assert c.get_or_compile(key, compile_fn, bytes.decode, {}).source == "compiled"
    m = get_dynamo_metrics()
    assert len(calls) == 3
    assert (m["graphs_compiled"], m["cache_hits_memory"], m["cache_hits_disk"]) == (3, 1, 1)
    assert len(m["cache_corrupt"]) == 1 and m["cache_corrupt"][0]["path"] == str(path)


def test_lock_timeout_is_read_and_a_held_lock_is_waited_for_that_long(tmp_path, monkeypatch):
    from filelock import FileLock

    monkeypatch.delenv("TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT", raising=False)
    assert cache.lock_timeout() == cache.LOCK_TIMEOUT_S == 3600.0
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT", "0.3")
    assert cache.lock_timeout() == 0.3
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path))
    key = cache.cache_key({"locked": 1})
    path = cache.entry_path(key)
    path.parent.mkdir(parents=True)
    other = FileLock(str(path) + ".lock")   # another process compiling the same graph
    other.acquire()
    try:
        t0 = time.monotonic()
        with pytest.warns(cache.CacheLockTimeoutWarning, match="TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT"):
            found = cache.CompileCache().get_or_compile(key, lambda: ("value", b"bytes"), bytes.decode,
                                                        header={"kind": "forward"})
        waited = time.monotonic() - t0
    finally:
        other.release()
    assert 0.3 <= waited < 60                      # waited the variable's time, not the default hour
    assert (found.source, found.value) == ("compiled", "value")
    assert cache.read_entry(path)[1] == b"bytes"   # compiled without the lock, entry written whole


@pytest.mark.parametrize("value", ["soon", "-1", "inf", "nan"])
def test_bad_lock_timeout_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT", value)
    with pytest.raises(cache.NeuronCompileError, match="TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT=.*number >= 0"):
        cache.lock_timeout()



@pytest.mark.parametrize("where", ["a_file", "a_file/below"])
def test_an_unusable_cache_dir_names_the_variable(tmp_path, monkeypatch, where):
    # a file (or a path under one) as the folder failed inside the entry lock with a bare
    # FileExistsError / NotADirectoryError ('.../24/34') and advice about fallback execution only
    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path / where))
    monkeypatch.delenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", raising=False)
    calls = []
    with pytest.raises(cache.NeuronCompileError,
                       match="TORCH_NEURONX_NEFF_CACHE_DIR=.* cannot be used as the compile cache folder.*"
                             "TORCH_NEURONX_NEFF_DISABLE_CACHE=1"):
        cache.CompileCache().get_or_compile(cache.cache_key({"g": where}), lambda: calls.append(1) or ("v", b"a"),
                                            bytes.decode, {})
    assert calls == []                                  # refused before compiling
    monkeypatch.setenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", "1")
    assert cache.CompileCache().get_or_compile(cache.cache_key({"g": where}), lambda: ("v", b"a"),
                                               bytes.decode, {}).value == "v"

def test_default_dir_is_per_user(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCH_NEURONX_NEFF_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "torch_neuronx" / "neff-cache"
    assert cache.inductor_dir() == cache.cache_dir() / "inductor"


def test_list_entries_is_typed(tmp_path):
    key = cache.cache_key({"typed": 1})
    path = cache.entry_path(key, tmp_path)
    cache.write_entry(path, {"key": key, "kind": "backward", "name": "'f' (x.py:1)"}, b"z" * 7)
    (entry,) = cache.list_entries(tmp_path)
    assert isinstance(entry, cache.CacheEntry)
    assert (entry.key, entry.path, entry.kind, entry.name) == (key, path, "backward", "'f' (x.py:1)")
    assert entry.size_bytes == path.stat().st_size and 0 <= entry.age_s < 600
    path.write_bytes(b"garbage")
    (unreadable,) = cache.list_entries(tmp_path)
    assert (unreadable.kind, unreadable.name, unreadable.size_bytes) == (None, None, 7)
    with pytest.raises(AttributeError):  # frozen
        unreadable.kind = "forward"


def test_cli_list_verify_clear(tmp_path, capsys):
    from torch_neuronx.cli import cache as cli

    for i in range(3):
        key = cache.cache_key({"i": i})
        cache.write_entry(cache.entry_path(key, tmp_path), {"key": key, "kind": "forward",
                                                            "name": f"'f{i}' (x.py:1)"}, b"y" * 10)
    bad = cache.entry_path(cache.cache_key({"i": 0}), tmp_path)
    bad.write_bytes(bad.read_bytes()[:-1])
    # an entry of the first format (suffix .neff, magic TNXNEFF1): never read, never a crash
    legacy = tmp_path / "ab" / "cd" / ("abcd" + "0" * 60 + ".neff")
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(b"TNXNEFF1" + b"\0" * 60)
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers(dest="command"))

    assert cli.run(parser.parse_args(["cache", "list", "--dir", str(tmp_path)])) == 0
    out = capsys.readouterr().out
    assert "3 entries" in out and "'f1' (x.py:1)" in out and "forward" in out
    assert "1 entries of an older cache format" in out
    assert cli.run(parser.parse_args(["cache", "verify", "--dir", str(tmp_path)])) == 1
    out = capsys.readouterr().out
    assert "3 entries checked, 1 bad" in out and "truncated" in out and str(bad) in out
    assert cache.legacy_entries(tmp_path) == [legacy]
    assert cli.run(parser.parse_args(["cache", "clear", "--dir", str(tmp_path)])) == 0
    assert "removed 4 entries" in capsys.readouterr().out
    assert cache.list_entries(tmp_path) == [] and not legacy.exists()
