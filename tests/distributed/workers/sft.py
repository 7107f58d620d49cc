"""transformers DistributedConfig(tp_size=2, fsdp_size=2, tp_plan="auto") + TRL SFTTrainer on
4 ranks over backend "neuron".

Usage (under torchrun): -m tests.distributed.workers.sft CHECKPOINT_DIR OUT_DIR

1. ``from_pretrained(CHECKPOINT_DIR, distributed_config=...)``: transformers initialises the
   process group with backend "neuron", builds the (fsdp=2, tp=2) mesh, shards on meta and
   loads each rank's slice. Prints ``LOADED <peak bytes on this core> <full model bytes>``.
2. ``SFTTrainer`` trains 3 steps with TRL's defaults (bf16 autocast; the collator pads to
   its neuron multiple, 128); prints ``PAD <multiple> <padded length>`` and ``TRAIN <first
   loss> <last loss> <steps> <precision>``, then ``DIVERGED <n>``: the number of parameters
   whose full value differs between ranks (TP-replicated copies must stay identical).
3. Logits of a fixed prompt from the distributed model (fp32 forward, accelerate's autocast
   wrapper removed): rank 0 writes OUT_DIR/logits.pt.
4. ``save_pretrained(OUT_DIR/saved)`` writes a standard checkpoint; prints ``SAVED``.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, DistributedConfig
from trl import SFTConfig, SFTTrainer

from .common import say

CKPT, OUT = sys.argv[1], sys.argv[2]


tokenizer = AutoTokenizer.from_pretrained(CKPT)
model = AutoModelForCausalLM.from_pretrained(
    CKPT, dtype=torch.float32,
    distributed_config=DistributedConfig(tp_size=2, fsdp_size=2, tp_plan="auto"),
)
device = torch.device("neuron", torch.neuron.current_device())
full_bytes = sum(p.numel() * p.element_size() for p in
                 AutoModelForCausalLM.from_config(model.config, dtype=torch.float32).parameters())
assert dist.get_backend() == "neuron", dist.get_backend()
say("LOADED", torch.neuron.max_memory_allocated(device), full_bytes, next(model.parameters()).device)

texts = [f"The number {i} is {'even' if i % 2 == 0 else 'odd'} and its square is {i * i}." for i in range(32)]
args = SFTConfig(
    output_dir=os.path.join(OUT, "trainer"), max_steps=3, per_device_train_batch_size=2,
    learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to=[], max_length=64,
    dataloader_num_workers=0, seed=0,
)
trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_dict({"text": texts}),
                     processing_class=tokenizer)
sample = trainer.data_collator([trainer.train_dataset[0], trainer.train_dataset[1]])
say("PAD", trainer.args.pad_to_multiple_of, sample["input_ids"].shape[-1])
trainer.train()
losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
say("TRAIN", losses[0], losses[-1], len(losses), "bf16" if trainer.args.bf16 else "fp32")

bad = []
for name, p in model.named_parameters():
    full = p.full_tensor() if hasattr(p, "full_tensor") else p
    copies = [torch.empty_like(full) for _ in range(dist.get_world_size())]
    dist.all_gather(copies, full.detach().contiguous())
    diff = max((c - copies[0]).abs().max().item() for c in copies)
    if diff > 0:
        bad.append((name, diff, getattr(p, "placements", None)))
say("DIVERGED", len(bad), bad[:4])

# TRL trains in bf16 by default: accelerate wrapped forward in autocast. The fp32
# forward (accelerate's unwrap) is what a plain CPU process reproduces.
model = trainer.accelerator.unwrap_model(model, keep_fp32_wrapper=False)
model.eval()
prompt = tokenizer("The number 7 is", return_tensors="pt")["input_ids"].to(device)
with torch.no_grad():
    logits = model(input_ids=prompt).logits
if hasattr(logits, "full_tensor"):
    logits = logits.full_tensor()
if dist.get_rank() == 0:
    torch.save({"prompt": prompt.cpu(), "logits": logits.float().cpu()}, os.path.join(OUT, "logits.pt"))
model.save_pretrained(os.path.join(OUT, "saved"))
tokenizer.save_pretrained(os.path.join(OUT, "saved"))
dist.barrier(device_ids=[device.index])
say("SAVED")
dist.destroy_process_group()
