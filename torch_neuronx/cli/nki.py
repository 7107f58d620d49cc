"""``torch-neuronx nki run FILE [inputs...] [--kernel NAME] [--grid G] [--platform P]``: simulate a kernel
file written for AWS's NKI packages (:mod:`torch_neuronx.nki.runner`).

:func:`add_parser` adds the ``nki`` sub-command to the ``torch-neuronx`` parser and :func:`run`
executes it (both called from :mod:`torch_neuronx.cli.main`).
"""
from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``nki run FILE ...`` to ``subparsers``; returns the new parser."""
    parser = subparsers.add_parser("nki", help="run an NKI kernel file on the simulator")
    sub = parser.add_subparsers(dest="nki_command", required=True)
    from ..nki.runner import add_arguments

    add_arguments(sub.add_parser("run", help="simulate a kernel and print its outputs and estimated latency"))
    return parser


def run(args: argparse.Namespace) -> int:
    """Executes ``nki run``; returns the exit status (1: an NKI rule rejected the kernel; 2: bad use)."""
    from ..nki.runner import execute

    return execute(args)


def take_extra_inputs(args: argparse.Namespace, extra: list[str]) -> str | None:
    """Inputs argparse left over after an option become kernel inputs; returns an error message for
    anything else (see :func:`torch_neuronx.nki.runner.take_extra_inputs`)."""
    from ..nki.runner import take_extra_inputs as take

    return take(args, extra)
