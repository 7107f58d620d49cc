"""Entry point of the ``torch-neuronx`` command."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Runs ``torch-neuronx <command>``; returns the process exit status."""
    parser = argparse.ArgumentParser(
        prog="torch-neuronx",
        description="TorchNeuron on a software NeuronCore: the `neuron` PyTorch device anywhere.",
    )
    import torch

    from .._version import __version__

    parser.add_argument("--version", action="version",
                        version=f"torch-neuronx {__version__} (torch {torch.__version__})")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="platform, chips, LNC, visible cores, HBM per core, memory in use")
    from . import cache as _cache_cli

    _cache_cli.add_parser(sub)
    from . import compat as _compat_cli

    _compat_cli.add_parser(sub)
    from . import estimate as _estimate_cli

    _estimate_cli.add_parser(sub)
    from . import nki as _nki_cli

    _nki_cli.add_parser(sub)
    demo = sub.add_parser("demo", help="MiniLM embeddings + a Llama trained from scratch on neuron")
    demo.add_argument("--device", default="neuron", help="device to run on (default: neuron)")
    demo.add_argument("--steps", type=int, default=None, help="training steps (default: the demo's)")
    demo.add_argument("--quick", action="store_true", help="a tiny run (seconds) for smoke tests")
    demo.add_argument("--out", default=None, help="folder for the saved model (default: a temp dir)")
    args, extra = parser.parse_known_args(argv)
    if extra:
        # `nki run FILE --kernel k 128x512`: inputs written after an option
        problem = _nki_cli.take_extra_inputs(args, extra) if args.command == "nki" else \
            f"unrecognized arguments: {' '.join(extra)}"
        if problem:
            parser.error(problem)
    if args.command == "demo" and args.steps is not None and args.steps < 1:
        parser.error(f"demo --steps must be at least 1, got {args.steps}")

    from ..runtime.topology import TopologyError

    try:
        if args.command == "info":
            from .info import info_text

            print(info_text())
        elif args.command == "demo":
            from .demo import run_demo

            run_demo(device=args.device, steps=args.steps, quick=args.quick, out_dir=args.out)
        elif args.command == "cache":
            return _cache_cli.run(args)
        elif args.command == "compat":
            return _compat_cli.run(args)
        elif args.command == "estimate":
            return _estimate_cli.run(args)
        elif args.command == "nki":
            return _nki_cli.run(args)
    except TopologyError as err:
        print(f"torch-neuronx: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
