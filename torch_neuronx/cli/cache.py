"""``torch-neuronx cache list|verify|clear``: the disk cache of backend ``"neuron"``
(:mod:`torch_neuronx.compile.cache`).

:func:`add_parser` adds the ``cache`` sub-command to the ``torch-neuronx`` parser and
:func:`run` executes it (both called from :mod:`torch_neuronx.cli.main`). Entries of an older
cache format (``*.neff``) are reported by ``list``, skipped by ``verify`` and deleted by
``clear``.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``cache {list,verify,clear} [--dir DIR]`` to ``subparsers`` (from
    ``ArgumentParser.add_subparsers``); returns the new parser."""
    parser = subparsers.add_parser(
        "cache", help="list, verify or clear the torch.compile(backend='neuron') cache")
    parser.add_argument("action", choices=["list", "verify", "clear"],
                        help="list: entries, sizes, ages; verify: check every entry's checksum; "
                             "clear: delete everything")
    parser.add_argument("--dir", default=None,
                        help="cache folder (default: TORCH_NEURONX_NEFF_CACHE_DIR or the per-user default)")
    parser.add_argument("--remove-bad", action="store_true",
                        help="with verify: delete the entries that fail the check")
    return parser


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def run(args: argparse.Namespace) -> int:
    """Executes the ``cache`` sub-command; prints to stdout; returns the exit status
    (``verify``: 1 when an entry is bad, else 0)."""
    from ..compile import cache

    root = Path(args.dir).expanduser().absolute() if args.dir else cache.cache_dir()
    if args.action == "list":
        entries = cache.list_entries(root)
        print(f"cache folder: {root}")
        if entries:
            print(f"{'key':18} {'kind':10} {'size':>10} {'age':>8}  function")
        for e in entries:
            print(f"{e.key[:16]:18} {e.kind or '?':10} {_size(e.size_bytes):>10} {_age(e.age_s):>8}  "
                  f"{e.name or '? (unreadable entry)'}")
        total = sum(e.size_bytes for e in entries)
        kernels = cache.dir_bytes(root / "inductor")
        print(f"{len(entries)} entries, {_size(total)}; Inductor kernels {_size(kernels)}")
        legacy = cache.legacy_entries(root)
        if legacy:
            print(f"{len(legacy)} entries of an older cache format (never read; "
                  "`torch-neuronx cache clear` deletes them)")
        return 0
    if args.action == "verify":
        bad = cache.verify_entries(root, remove=args.remove_bad)
        n = len(cache.list_entries(root)) + (len(bad) if args.remove_bad else 0)
        for path, reason in bad:
            print(f"BAD {path}: {reason}" + (" (removed)" if args.remove_bad else ""))
        print(f"{n} entries checked, {len(bad)} bad")
        return 1 if bad and not args.remove_bad else 0
    n = cache.clear(root)
    print(f"removed {n} entries and the Inductor kernels from {root}")
    return 0
