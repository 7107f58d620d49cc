"""Tensor parallel x FSDP supervised fine-tuning on `neuron` with TRL's ``SFTTrainer``.

Launch one process per NeuronCore with torchrun. ``from_pretrained(...,
distributed_config=DistributedConfig(tp_size=..., fsdp_size=...))`` makes transformers start
the process group (backend "neuron"), build the (fsdp, tp) device mesh, shard the model on meta
and load each rank's slice of the weights. ``SFTTrainer`` trains with TRL's defaults (bf16
autocast, gradient checkpointing, batches padded to a multiple of 128 on neuron), and
``save_pretrained`` gathers a standard safetensors checkpoint that loads anywhere, plain CPU
included.

Usage::

    torchrun --nproc-per-node 4 examples/sft_tp_fsdp.py --tp 2 --fsdp 2 --out /tmp/sft-tp-fsdp
    torchrun --nproc-per-node 2 examples/sft_tp_fsdp.py --tp 2 --fsdp 1
    torchrun --nproc-per-node 4 examples/sft_tp_fsdp.py --model Qwen/Qwen2.5-0.5B --dataset trl-lib/Capybara

    # then, anywhere:
    AutoModelForCausalLM.from_pretrained("/tmp/sft-tp-fsdp")

``--tp`` times ``--fsdp`` must equal the number of processes, and ``--tp`` must divide the
model's attention and key/value heads.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import torch

LAUNCH = "torchrun --nproc-per-node 4 examples/sft_tp_fsdp.py --tp 2 --fsdp 2"
EVAL_PROMPT = "The number 7 is"


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="checkpoint folder or Hub id (default: a tiny offline Llama)")
    p.add_argument("--dataset", help="a .json/.jsonl file or a Hub dataset id (default: the tiny dataset)")
    p.add_argument("--tp", type=int, default=2, help="tensor-parallel degree")
    p.add_argument("--fsdp", type=int, default=2, help="FSDP (sharded data-parallel) degree")
    p.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "torch-neuronx-sft-tp-fsdp"),
                   help="where the trained checkpoint is saved (save_pretrained, safetensors)")
    p.add_argument("--max-steps", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=2, help="per FSDP rank")
    p.add_argument("--learning-rate", type=float, default=None,
                   help="default: 1e-3 for the tiny model, 2e-5 (TRL's default) otherwise")
    p.add_argument("--max-length", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--record", help="rank 0 writes a JSON record (batch shapes, losses) and, next to it "
                                 "(.logits.pt), the fp32 logits of a fixed prompt from the trained model")
    p.add_argument("--assets-dir", default=os.path.join(tempfile.gettempdir(), "torch-neuronx-tiny-llm"),
                   help="where the tiny model and dataset are written when --model/--dataset are not given")
    args = p.parse_args(argv)
    if args.model and (os.path.isabs(args.model) or args.model.startswith(".")) and not os.path.isdir(args.model):
        p.error(f"--model {args.model}: no such folder (give a checkpoint folder or a Hub id)")
    if "WORLD_SIZE" not in os.environ or "LOCAL_RANK" not in os.environ:
        p.error(f"run this script under torchrun, one process per NeuronCore, e.g.\n  {LAUNCH}")
    world = int(os.environ["WORLD_SIZE"])
    if args.tp < 1 or args.fsdp < 1 or args.tp * args.fsdp != world:
        p.error(f"--tp {args.tp} x --fsdp {args.fsdp} = {args.tp * args.fsdp} must equal the number of "
                f"processes ({world}); e.g. torchrun --nproc-per-node {args.tp * args.fsdp} ...")
    return args


def main(argv=None) -> int:
    """Sets up the process group, loads the sharded model, trains, evaluates, saves."""
    args = parse_args(argv)
    import torch.distributed as dist
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, DistributedConfig
    from trl import SFTConfig, SFTTrainer

    from torch_neuronx.distributed import check_tp_degree

    from sft import ShapeLog, StepLog, load_texts

    # One process per NeuronCore: bind it, then start the group (transformers would start it too,
    # but rank 0 first writes the tiny assets the other ranks read).
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.neuron.set_device(local_rank)
    device = torch.device("neuron", local_rank)
    dist.init_process_group("neuron")
    rank = dist.get_rank()

    tiny = args.model is None
    model_path, data_file = args.model, args.dataset
    if tiny or data_file is None:
        from tiny_llm import write_tiny_assets
        if rank == 0:
            write_tiny_assets(args.assets_dir)
        dist.barrier(device_ids=[local_rank])
        tiny_model, tiny_data = write_tiny_assets(args.assets_dir)  # already there: just the paths
        model_path = model_path or tiny_model
        data_file = data_file or tiny_data

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    check_tp_degree(AutoConfig.from_pretrained(model_path), args.tp)  # clear error before sharding
    model = AutoModelForCausalLM.from_pretrained(
        model_path, dtype=torch.float32,
        distributed_config=DistributedConfig(tp_size=args.tp, fsdp_size=args.fsdp, tp_plan="auto"),
    )

    config = SFTConfig(
        output_dir=os.path.join(args.out, "trainer"),
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate or (1e-3 if tiny else 2e-5),
        max_length=args.max_length,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=args.seed,
        dataloader_num_workers=0,
    )
    step_log = StepLog()
    trainer = SFTTrainer(model=model, args=config, train_dataset=load_texts(data_file),
                         processing_class=tokenizer, callbacks=[step_log])
    trainer.data_collator = shape_log = ShapeLog(trainer.data_collator)
    if rank == 0:
        print(f"world {dist.get_world_size()} = tp {args.tp} x fsdp {args.fsdp}, backend "
              f"{dist.get_backend()}, device {device}, pad_to_multiple_of {config.pad_to_multiple_of}, "
              f"bf16 {config.bf16}, gradient_checkpointing {config.gradient_checkpointing}", flush=True)
    trainer.train()
    if rank == 0:
        print(f"trained {len(step_log.losses)} steps; loss {step_log.losses[0]:.4f} -> "
              f"{step_log.losses[-1]:.4f}", flush=True)

    # Logits of a fixed prompt in fp32 (accelerate's bf16 autocast wrapper removed), gathered.
    model = trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False).eval()
    ids = tokenizer(EVAL_PROMPT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=ids.to(device)).logits
    if hasattr(logits, "full_tensor"):
        logits = logits.full_tensor()
    logits = logits.float().cpu()

    model.save_pretrained(args.out)  # every rank takes part; a standard checkpoint is written
    if rank == 0:
        tokenizer.save_pretrained(args.out)
        print(f"saved a standard checkpoint to {args.out}", flush=True)
        if args.record:
            logits_file = os.path.splitext(args.record)[0] + ".logits.pt"
            torch.save({"input_ids": ids, "logits": logits}, logits_file)
            with open(args.record, "w") as f:
                json.dump({"world_size": dist.get_world_size(), "tp": args.tp, "fsdp": args.fsdp,
                           "device": str(device), "backend": dist.get_backend(),
                           "pad_to_multiple_of": config.pad_to_multiple_of, "bf16": config.bf16,
                           "gradient_checkpointing": config.gradient_checkpointing,
                           "batch_shapes": shape_log.shapes, "losses": step_log.losses,
                           "out": args.out, "eval_logits": logits_file}, f, indent=1)
    dist.barrier(device_ids=[local_rank])
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
