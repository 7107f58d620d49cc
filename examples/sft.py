"""Supervised fine-tuning on `neuron` with TRL's standard ``SFTTrainer``.

Nothing neuron-specific is configured: accelerate picks the `neuron` device, ``SFTConfig`` keeps
``pad_to_multiple_of="auto"`` (TRL makes it 128 on neuron, so every batch has a static-friendly
length), ``bf16=True`` trains under bf16 autocast and ``gradient_checkpointing=True`` recomputes
activations in the backward.

Usage::

    python examples/sft.py                               # tiny offline Llama + tiny dataset
    python examples/sft.py --lora --out /tmp/sft-lora    # train and save a PEFT LoRA adapter
    python examples/sft.py --compile                     # TrainingArguments(torch_compile=True): backend "neuron"
    python examples/sft.py --model Qwen/Qwen2.5-0.5B --dataset trl-lib/Capybara --max-steps 100
    python examples/sft.py --record /tmp/sft.json        # also record batch lengths and losses as JSON

``--dataset`` is a ``.json``/``.jsonl`` file (a ``text`` or ``messages`` column) or a Hub dataset id.
With ``--lora`` the adapter is saved to ``--out`` (``adapter_config.json`` +
``adapter_model.safetensors``); load it on any device with
``PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), out)``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import torch
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import SFTConfig, SFTTrainer

EVAL_PROMPT = "The number 7 is"


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="checkpoint folder or Hub id (default: a tiny offline Llama)")
    p.add_argument("--dataset", help="a .json/.jsonl file or a Hub dataset id (default: the tiny dataset)")
    p.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "torch-neuronx-sft"),
                   help="output folder (trainer state; the adapter or model at the end)")
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=None,
                   help="default: 1e-3 for the tiny model, 2e-5 (TRL's default) otherwise; "
                        "LoRA uses 10x that")
    p.add_argument("--max-length", type=int, default=1024)
    p.add_argument("--lora", action="store_true", help="train a PEFT LoRA adapter instead of all weights")
    p.add_argument("--lora-r", type=int, default=8)
    p.add_argument("--compile", action="store_true", help="torch_compile=True (transformers picks backend 'neuron')")
    p.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction, default=True,
                   help="recompute activations in the backward (TRL's default: on)")
    p.add_argument("--attn-implementation", default=None,
                   help="transformers attention kernel, e.g. sdpa (its default) or eager")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--record", help="write a JSON record: each batch's shape, the loss of each step, and "
                                 "the fp32 logits of a fixed prompt after training (next to it, .pt)")
    p.add_argument("--assets-dir", default=os.path.join(tempfile.gettempdir(), "torch-neuronx-tiny-llm"),
                   help="where the tiny model and dataset are written when --model/--dataset are not given")
    args = p.parse_args(argv)
    if args.model and (os.path.isabs(args.model) or args.model.startswith(".")) and not os.path.isdir(args.model):
        p.error(f"--model {args.model}: no such folder (give a checkpoint folder or a Hub id)")
    if args.max_steps < 1 or args.batch_size < 1:
        p.error("--max-steps and --batch-size must be at least 1")
    return args


def load_texts(dataset: str):
    """A training split from a local JSON/JSONL file or a Hub dataset id."""
    if dataset.endswith((".json", ".jsonl")):
        if not os.path.exists(dataset):
            raise FileNotFoundError(f"--dataset {dataset}: no such file")
        return load_dataset("json", data_files=dataset, split="train")
    return load_dataset(dataset, split="train")


class StepLog(TrainerCallback):
    """Keeps the training loss of every logged step (use with ``logging_steps=1``)."""

    def __init__(self):
        self.losses: list[float] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.losses.append(float(logs["loss"]))


class ShapeLog:
    """Wraps a data collator and keeps the ``input_ids`` shape of every batch it builds."""

    def __init__(self, collator):
        self.collator = collator
        self.shapes: list[list[int]] = []

    def __call__(self, examples):
        batch = self.collator(examples)
        self.shapes.append(list(batch["input_ids"].shape))
        return batch


@torch.no_grad()
def eval_logits(trainer: SFTTrainer, tokenizer, prompt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, logits)`` of ``prompt`` from the trained model in fp32 (eval mode, without the
    bf16 autocast wrapper accelerate put around forward), both on CPU."""
    model = trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
    logits = model(input_ids=ids.to(device)).logits.float().cpu()
    model.train(was_training)
    return ids, logits


def main(argv=None) -> int:
    """Loads the model and data, trains with ``SFTTrainer``, saves the result to ``--out``."""
    args = parse_args(argv)
    tiny = args.model is None
    model_path, data_file = args.model, args.dataset
    if tiny or data_file is None:
        from tiny_llm import write_tiny_assets
        tiny_model, tiny_data = write_tiny_assets(args.assets_dir)
        model_path = model_path or tiny_model
        data_file = data_file or tiny_data
    lr = args.learning_rate or (1e-3 if tiny else 2e-5)
    if args.lora and args.learning_rate is None:
        lr *= 10

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32,
                                                 attn_implementation=args.attn_implementation)
    peft_config = None
    if args.lora:
        from peft import LoraConfig
        peft_config = LoraConfig(r=args.lora_r, lora_alpha=2 * args.lora_r, lora_dropout=0.0,
                                 target_modules="all-linear", task_type="CAUSAL_LM")

    config = SFTConfig(
        output_dir=args.out,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        learning_rate=lr,
        max_length=args.max_length,
        bf16=True,
        gradient_checkpointing=args.gradient_checkpointing,
        torch_compile=args.compile,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=args.seed,
        dataloader_num_workers=0,
        # pad_to_multiple_of stays "auto": 128 on neuron
    )
    step_log = StepLog()
    trainer = SFTTrainer(model=model, args=config, train_dataset=load_texts(data_file),
                         processing_class=tokenizer, peft_config=peft_config, callbacks=[step_log])
    if args.record:
        trainer.data_collator = shape_log = ShapeLog(trainer.data_collator)
    print(f"device {trainer.args.device}, pad_to_multiple_of {trainer.args.pad_to_multiple_of}, "
          f"bf16 {trainer.args.bf16}, gradient_checkpointing {trainer.args.gradient_checkpointing}, "
          f"torch_compile {trainer.args.torch_compile} (backend {trainer.args.torch_compile_backend})")
    if args.lora:
        trainer.model.print_trainable_parameters()

    result = trainer.train()
    print(f"trained {result.global_step} steps in {result.metrics['train_runtime']:.1f} s; "
          f"loss {step_log.losses[0]:.4f} -> {step_log.losses[-1]:.4f}")

    trainer.save_model(args.out)  # the adapter with --lora, else the full model
    tokenizer.save_pretrained(args.out)
    print(f"saved {'adapter' if args.lora else 'model'} to {args.out}")

    if args.record:
        ids, logits = eval_logits(trainer, tokenizer, EVAL_PROMPT)
        logits_file = os.path.splitext(args.record)[0] + ".logits.pt"
        torch.save({"input_ids": ids, "logits": logits}, logits_file)
        record = {
            "device": str(trainer.args.device),
            "model": model_path,
            "pad_to_multiple_of": trainer.args.pad_to_multiple_of,
            "bf16": trainer.args.bf16,
            "gradient_checkpointing": trainer.args.gradient_checkpointing,
            "torch_compile": trainer.args.torch_compile,
            "torch_compile_backend": trainer.args.torch_compile_backend,
            "lora": args.lora,
            "batch_shapes": shape_log.shapes,
            "losses": step_log.losses,
            "out": args.out,
            "eval_logits": logits_file,
        }
        with open(args.record, "w") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
