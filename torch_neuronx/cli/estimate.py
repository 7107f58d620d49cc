"""``torch-neuronx estimate``: what a Hugging Face model's training or inference step would cost on Trainium.

    torch-neuronx estimate --model llama-3.3-70b --task decode --batch 1 --seq 12800 --tp 64 \\
        --platform trn2 --instance trn2.48xlarge --compile
    torch-neuronx estimate --model path/to/config.json --task train --batch 1 --seq 4096 --tp 8 --fsdp 4 --json

Shape-only (fake tensors, PyTorch's fake process group at the real world size: nothing is allocated and no
Trainium is needed). Prints the summary table, or with ``--json`` one JSON object. Every number is an
ESTIMATE (``torch_neuronx.estimate``).
"""
from __future__ import annotations

import argparse
import json
import sys

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds the ``estimate`` subcommand to the ``torch-neuronx`` parser's subparsers."""
    p = sub.add_parser("estimate", help="estimate time, memory, compiles and cost of a model step on Trainium",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True,
                   help="a preset (llama-3.3-70b, llama-3.1-8b, qwen3-32b, bert-base-uncased, ...), a config.json, "
                        "or a folder holding one")
    p.add_argument("--task", required=True, choices=("train", "prefill", "decode"))
    p.add_argument("--batch", type=int, default=1, help="sequences per step (per micro-batch in training)")
    p.add_argument("--seq", type=int, default=None,
                   help="tokens per sequence (prefill bucket, training length; default 2048; vision: the image)")
    p.add_argument("--kv-len", type=int, default=None, help="KV-cache length of a decode step (default --seq)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree")
    p.add_argument("--fsdp", type=int, default=1, help="FSDP2 (fully sharded data parallel) degree")
    p.add_argument("--dp", type=int, default=1, help="data-parallel replicas (gradient sync costed over them)")
    p.add_argument("--pp", type=int, default=1, help="pipeline stages (1F1B; one stage is simulated)")
    p.add_argument("--microbatches", type=int, default=None, help="micro-batches per step with --pp")
    p.add_argument("--grad-accum", type=int, default=1, help="accumulated micro-batches per step")
    p.add_argument("--platform", default="trn2", help="trn1, trn2, trn3 or inf2 (default trn2)")
    p.add_argument("--lnc", type=int, default=None, help="logical NeuronCore config (default: the platform's)")
    p.add_argument("--instance", default=None, help="EC2 instance type (default: the platform's largest)")
    p.add_argument("--instances", type=int, default=1, help="number of instances")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp32", "fp16"), help="parameter dtype")
    p.add_argument("--autocast", action="store_true", help="bf16 autocast around the forward")
    p.add_argument("--compile", action="store_true",
                   help="headline estimate as torch.compile graphs (the eager estimate is shown too)")
    p.add_argument("--sequence-parallel", action="store_true", help="shard norms over the sequence (needs --tp)")
    p.add_argument("--zero1", action="store_true", help="ZeRO-1: optimizer sharded over --dp replicas")
    p.add_argument("--recompute", default="none", choices=("none", "attention", "full"),
                   help="activation recomputation in training")
    p.add_argument("--layers", type=int, default=None, help="override the number of layers")
    p.add_argument("--price-per-hour", type=float, default=None,
                   help="USD per instance-hour (default: AWS's on-demand price where published; none for trn2)")
    p.add_argument("--trace", default=None, help="write a chrome trace (open in ui.perfetto.dev)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    return p


def run(args: argparse.Namespace) -> int:
    """Runs the estimate of ``args``; prints it; returns the exit status (2 for a bad setup)."""
    from ..estimate.workloads import Setup, run_estimate

    seq = args.seq if args.seq is not None else (args.kv_len or 2048)
    setup = Setup(model=args.model, task=args.task, batch=args.batch, seq=seq, kv_len=args.kv_len, tp=args.tp,
                  fsdp=args.fsdp, dp=args.dp, pp=args.pp, microbatches=args.microbatches, grad_accum=args.grad_accum,
                  platform=args.platform, lnc=args.lnc, instance=args.instance, instances=args.instances,
                  dtype=args.dtype, autocast=args.autocast, compiled=args.compile,
                  price_per_hour=args.price_per_hour, sequence_parallel=args.sequence_parallel, zero1=args.zero1,
                  recompute=args.recompute, layers=args.layers, trace=args.trace)
    try:
        report = run_estimate(setup)
    except ValueError as err:
        print(f"torch-neuronx estimate: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        print(report.summary())
        if args.trace:
            print(f"  chrome trace (estimate) written to {args.trace}")
    return 0
