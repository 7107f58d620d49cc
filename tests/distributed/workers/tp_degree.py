"""transformers ``from_pretrained(path, distributed_config=DistributedConfig(tp_size=N))`` of a
tiny Llama with 8 attention and 8 key/value heads, then one forward.

``python -m torch.distributed.run --nproc-per-node N -m tests.distributed.workers.tp_degree <path>``
(rank 0 writes the checkpoint to ``<path>`` first). Prints ``LOADED`` after the load, then
``FORWARD <logits shape>`` or ``ERROR <type>: <first line of the message>``, then the same
for ``torch.compile(model, backend="neuron")`` (``COMPILED`` / ``COMPILED_ERROR``).
"""
from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from transformers import DistributedConfig, LlamaConfig, LlamaForCausalLM

from .common import init, say

path = sys.argv[1]
init()
if dist.get_rank() == 0 and not os.path.exists(os.path.join(path, "config.json")):
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=1,
                                 num_attention_heads=8, num_key_value_heads=8, head_dim=8,
                                 max_position_embeddings=64)).save_pretrained(path)
dist.barrier()
model = LlamaForCausalLM.from_pretrained(path, distributed_config=DistributedConfig(tp_size=dist.get_world_size()))
say("LOADED")
ids = torch.arange(5, device=model.device)[None]
try:
    out = model(ids)
    say("FORWARD", tuple(out.logits.shape))
except ValueError as e:
    say("ERROR", f"{type(e).__name__}: {str(e).splitlines()[0]}")
try:  # compiled: checked through the wrapper, before anything is traced
    out = torch.compile(model, backend="neuron")(ids)
    say("COMPILED", tuple(out.logits.shape))
except ValueError as e:
    say("COMPILED_ERROR", f"{type(e).__name__}: {str(e).splitlines()[0]}")
dist.destroy_process_group()
