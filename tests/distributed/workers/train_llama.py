"""A tiny Llama trained for a few steps on 4 ranks with DDP, FSDP1, FSDP2
(``fully_shard``) and DTensor tensor parallelism (``parallelize_module``,
colwise q/k/v/gate/up, rowwise o/down), over backend "neuron".

Every rank builds the same model from one seed. Data-parallel modes give each
rank one sample of a 4-sample batch; TP gives every rank the whole batch. Rank
0 also trains the same model on CPU in this process on the whole batch (the
single-process reference). Each step prints ``LOSS <mode> <step> <loss>
<reference>``; the global loss is the mean of the ranks' losses.

Usage (under torchrun): -m tests.distributed.workers.train_llama MODE [MODE ...]   (ddp, fsdp1, fsdp2, tp)
"""
from __future__ import annotations

import functools
import os
import sys

import torch
import torch.distributed as dist

from .common import init, say

DEV = init()
RANK, WORLD = dist.get_rank(), dist.get_world_size()
STEPS, SEQ, LR = 3, 16, 1e-2

from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaDecoderLayer  # noqa: E402

CONFIG = LlamaConfig(
    vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
    tie_word_embeddings=False, attn_implementation="sdpa",
)
BATCH = torch.randint(0, CONFIG.vocab_size, (WORLD, SEQ), generator=torch.Generator().manual_seed(1))


def fresh_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return LlamaForCausalLM(CONFIG).float()


def reference_losses() -> list[float]:
    model = fresh_model()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        loss = model(input_ids=BATCH, labels=BATCH).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


def wrap(mode: str, model: torch.nn.Module) -> torch.nn.Module:
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model.to(DEV))
    if mode == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        # A CPU module, as users pass it: FSDP1 moves it with `param.data = param.to(device)`
        # (allowed because neuron overrides _has_compatible_shallow_copy_type).
        return FSDP(model, device_id=DEV, auto_wrap_policy=ModuleWrapPolicy({LlamaDecoderLayer}),
                    use_orig_params=True)
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("neuron", (WORLD,))
    model = model.to(DEV)
    if mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        return fully_shard(model, mesh=mesh)
    if mode == "tp":
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        plan = {
            "self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(),
            "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel(),
        }
        for layer in model.model.layers:
            parallelize_module(layer, mesh, plan)
        return model
    raise ValueError(mode)


def train(mode: str) -> list[float]:
    model = wrap(mode, fresh_model())
    # TP leaves embeddings/norms/lm_head as plain tensors: foreach AdamW cannot mix
    # them with DTensors in one group (PyTorch's rule on every device).
    opt = torch.optim.AdamW(model.parameters(), lr=LR, foreach=mode != "tp")
    batch = BATCH if mode == "tp" else BATCH[RANK:RANK + 1]
    batch = batch.to(DEV)
    losses = []
    for _ in range(STEPS):
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        assert loss.device == DEV, loss.device
        global_loss = loss.detach().clone()
        dist.all_reduce(global_loss, op=dist.ReduceOp.AVG)
        losses.append(global_loss.item())
    return losses


def main() -> None:
    modes = sys.argv[1:]
    ref = reference_losses() if RANK == 0 else None
    for mode in modes:
        losses = train(mode)
        if RANK == 0:
            for step, (got, want) in enumerate(zip(losses, ref)):
                say("LOSS", mode, step, f"{got:.8f}", f"{want:.8f}")
    # Per-core memory stays per process: this rank's allocator only accounts its own core.
    for i in range(torch.neuron.device_count()):
        used = torch.neuron.max_memory_allocated(i)
        assert (used > 0) == (i == DEV.index), f"rank {RANK}: neuron:{i} peak {used} B (drives {DEV})"
    say("MEMORY", DEV, torch.neuron.max_memory_allocated(DEV))
    dist.barrier(device_ids=[DEV.index])
    dist.destroy_process_group()


main()
