"""Sharding a transformers model for a shape-only estimate: tensor, sequence and fully-sharded data parallel.

* **Tensor parallel** (``tp``): the model's own plan (``config.base_model_tp_plan``: ``colwise`` / ``rowwise``
  projections; other entries, e.g. Qwen3's q/k norms, stay replicated) applied with PyTorch's
  ``parallelize_module``, plus a vocabulary-parallel embedding and a column-parallel ``lm_head`` (logits
  gathered, or, in training, left vocabulary-sharded for PyTorch's ``loss_parallel``, as NxD's parallel
  cross-entropy does). Where ``tp`` exceeds the key/value heads and is a multiple of them, the key/value
  heads are replicated up to ``tp`` (NxD's ``kv_replicator``; NxD Inference's GQA replication), so each
  rank holds one.
* **Sequence parallel** (``sequence_parallel``): norms run on sequence shards (PyTorch's
  ``SequenceParallel``); attention and MLP inputs are all-gathered and their outputs reduce-scattered
  (Megatron / NxD sequence parallelism, torchtitan's plan).
* **FSDP** (``fsdp``): FSDP2 ``fully_shard`` of every decoder layer and the root over the ``fsdp`` mesh
  dimension.

The rank layout is ``[fsdp, tp]`` with ``tp`` the fastest dimension: a tensor-parallel group is contiguous
ranks (one instance when it fits), as torchrun and NxD place them.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import torch

from .models import ModelKind, model_kind

if TYPE_CHECKING:
    from torch.distributed.tensor.parallel import ParallelStyle
    from transformers import PreTrainedConfig, PreTrainedModel

    from .shapes import ShapeOnly

__all__ = ["build_model", "tp_plan", "decoder_layers"]


def decoder_layers(model: torch.nn.Module, config: PreTrainedConfig) -> torch.nn.ModuleList | None:
    """The ``ModuleList`` of the model's transformer blocks (the first with ``num_hidden_layers`` entries)."""
    n = getattr(config, "num_hidden_layers", None)
    for m in model.modules():
        if isinstance(m, torch.nn.ModuleList) and len(m) == n:
            return m
    return None


def tp_plan(model: PreTrainedModel, config: PreTrainedConfig, sequence_parallel: bool,
            task: str) -> tuple[dict[str, ParallelStyle], list[str]]:
    """(``parallelize_module`` plan, notes) for a causal LM (see the module docstring).

    Raises:
        ValueError: the model publishes no tensor-parallel plan.
    """
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
    )

    base = dict(getattr(config, "base_model_tp_plan", None) or {})
    if not base:
        raise ValueError(f"{type(config).__name__} has no base_model_tp_plan: transformers publishes no tensor-"
                         "parallel plan for this architecture, so --tp > 1 cannot shard it")
    prefix = model.base_model_prefix
    plan: dict[str, ParallelStyle] = {}
    notes = []
    skipped = sorted({v for v in base.values() if v not in ("colwise", "rowwise")})
    for pattern, style in base.items():
        if style == "colwise":
            plan[f"{prefix}.{pattern}"] = ColwiseParallel()
        elif style == "rowwise":
            plan[f"{prefix}.{pattern}"] = RowwiseParallel(output_layouts=Shard(1), use_local_output=False) \
                if sequence_parallel else RowwiseParallel()
    if skipped:
        notes.append(f"tensor-parallel plan entries {skipped} left replicated")
    # With sequence parallelism the residual stream stays a DTensor sharded on the sequence: transformers
    # derives positions and masks from the embeddings' (global) shape. In training the embedding is sharded
    # on the hidden dimension: DTensor's backward of a vocabulary-sharded embedding materialises a gradient
    # of the full vocabulary on every rank (NxD's ParallelEmbedding does not).
    embedding_style = ColwiseParallel if task == "train" else RowwiseParallel
    plan[f"{prefix}.embed_tokens"] = embedding_style(input_layouts=Replicate(), output_layouts=Shard(1),
                                                     use_local_output=False) if sequence_parallel \
        else embedding_style(input_layouts=Replicate(), output_layouts=Replicate())
    if task == "train":
        notes.append("embedding sharded on the hidden dimension (a vocabulary-sharded one gets a full-vocabulary "
                     "gradient from DTensor)")
    if sequence_parallel:
        plan[f"{prefix}.layers.*.input_layernorm"] = SequenceParallel()
        plan[f"{prefix}.layers.*.post_attention_layernorm"] = SequenceParallel()
        plan[f"{prefix}.layers.*.self_attn"] = PrepareModuleInput(
            input_kwarg_layouts={"hidden_states": Shard(1)}, desired_input_kwarg_layouts={"hidden_states": Replicate()})
        plan[f"{prefix}.layers.*.mlp"] = PrepareModuleInput(input_layouts=(Shard(1),),
                                                            desired_input_layouts=(Replicate(),))
        plan[f"{prefix}.norm"] = SequenceParallel(use_local_output=task != "train")
    if task == "train":
        plan["lm_head"] = ColwiseParallel(input_layouts=Shard(1) if sequence_parallel else Replicate(),
                                          output_layouts=Shard(-1), use_local_output=False)
    else:
        plan["lm_head"] = ColwiseParallel(input_layouts=Replicate(), output_layouts=Replicate())
    return plan, notes


def build_model(so: ShapeOnly, config: PreTrainedConfig, dtype: torch.dtype = torch.bfloat16, tp: int = 1,
                fsdp: int = 1, sequence_parallel: bool = False, kind: ModelKind | None = None,
                task: str = "forward") -> tuple[PreTrainedModel, list[str], ModelKind, PreTrainedConfig]:
    """A transformers model of ``config`` on fake ``neuron`` tensors inside the :class:`~.shapes.ShapeOnly`
    ``so``, sharded ``tp`` x ``fsdp``.

    Returns:
        (model, notes: what was changed to shard it, kind, the config the model was built from).

    Args:
        so: the active shape-only context (its world size must be ``tp * fsdp``).
        config: a transformers config (not modified; a copy is).
        dtype: parameter dtype.
        tp, fsdp: tensor-parallel and fully-sharded data-parallel degrees.
        sequence_parallel: shard norms over the sequence (needs ``tp`` > 1).
        kind: ``"causal_lm"``, ``"encoder"`` or ``"vision"`` (default from the config).
        task: ``"train"`` (a training head: pre-training heads for encoders, classification for vision),
            otherwise the base model (encoders, vision) or the causal LM.

    Raises:
        ValueError: the degrees do not match the world size, tensor parallelism of a non-causal-LM, a
            ``tp`` that does not divide the heads (``TensorParallelDegreeError``, naming the divisors).
    """
    from transformers import (
        AutoModel,
        AutoModelForCausalLM,
        AutoModelForImageClassification,
        AutoModelForPreTraining,
    )

    if tp < 1 or fsdp < 1:
        raise ValueError(f"--tp {tp} / --fsdp {fsdp}: degrees must be >= 1")
    if tp * fsdp != so.world_size:
        raise ValueError(f"tp {tp} x fsdp {fsdp} = {tp * fsdp} ranks, but the shape-only world has {so.world_size}")
    if sequence_parallel and tp == 1:
        raise ValueError("--sequence-parallel shards over the tensor-parallel group: it needs --tp > 1")
    config = copy.deepcopy(config)
    notes: list[str] = []
    kind = kind or model_kind(config)
    if tp > 1:
        if kind != "causal_lm":
            raise ValueError(f"--tp {tp}: tensor parallelism is supported for causal language models; "
                             f"{config.model_type} is a{'n' if kind == 'encoder' else ''} {kind} model")
        from ..distributed.tp_degree import check_tp_degree

        heads = config.num_attention_heads
        kv = getattr(config, "num_key_value_heads", None) or heads
        if tp > kv and tp % kv == 0 and heads % tp == 0:
            config.num_key_value_heads = tp
            notes.append(f"key/value heads replicated {kv} -> {tp} (one per tensor-parallel rank, as NxD does)")
        check_tp_degree(config, tp)
    from . import attention

    attention.register()
    config._attn_implementation = attention.SDPA       # SDPA without a materialised mask (see attention.py)
    cls: type
    if kind == "causal_lm":
        cls = AutoModelForCausalLM
    elif kind == "vision":
        cls = AutoModelForImageClassification if task == "train" else AutoModel
    else:
        cls = AutoModelForPreTraining if task == "train" else AutoModel
    with so.real():
        with torch.device("meta"):
            model = cls.from_config(config, dtype=dtype)
        if tp > 1 or fsdp > 1:
            mesh = so.mesh((fsdp, tp), ("fsdp", "tp"))
        if tp > 1:
            from torch.distributed.tensor.parallel import parallelize_module

            plan, plan_notes = tp_plan(model, config, sequence_parallel, task)
            notes += plan_notes
            parallelize_module(model, mesh["tp"], plan)
        if fsdp > 1:
            from torch.distributed.fsdp import fully_shard

            layers = decoder_layers(model, config)
            if layers is None:
                raise ValueError(f"--fsdp {fsdp}: no list of {config.num_hidden_layers} layers found in "
                                 f"{type(model).__name__} to shard")
            for layer in layers:
                fully_shard(layer, mesh=mesh["fsdp"])
            fully_shard(model, mesh=mesh["fsdp"])
    model.to_empty(device="neuron")
    return model, notes, kind, config
