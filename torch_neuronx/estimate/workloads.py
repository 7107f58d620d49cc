"""The common workloads, shape-only: a training step, a prefill, a decode step of a transformers model.

:func:`run_estimate` is what ``torch-neuronx estimate`` runs: it builds the model of a :class:`Setup` on fake
``neuron`` tensors at the real parallel degrees (:mod:`.shapes`, :mod:`.parallel`), runs one step of the
task under :func:`~.session.estimate`, and returns the report. How a step is composed:

* **prefill** (TTFT): one forward of ``[batch, seq]`` (the context-encoding bucket) keeping the last token's
  logits; encoders and vision models run their forward (latency).
* **decode** (TPOT): one token per sequence against a static KV cache of ``kv_len`` positions (the
  token-generation bucket), the cache allocated up front and counted as ``kv_cache``.
* **train**: one micro-batch forward + backward, repeated ``grad_accum`` times; with pipeline parallelism
  (``pp`` stages, ``microbatches`` per step) one stage of ``layers / pp`` layers runs ``microbatches + pp - 1``
  micro-batch slots (the 1F1B schedule's fill and drain) plus the activation send/receive to the next stage;
  then the optimizer (AdamW; with ``zero1`` on a 1/``dp`` flat fp32 shard, as ZeRO-1 does) and the
  data-parallel gradient synchronisation over ``dp`` replicas (reduce-scatter + all-gather with ZeRO-1,
  all-reduce without), which are not simulated as ranks but costed by :mod:`.collectives` over the ranks
  they would span. ``recompute="attention"`` recomputes attention in the backward (NxD's selective
  checkpointing), ``"full"`` every layer (transformers' gradient checkpointing).
"""
from __future__ import annotations

import contextlib
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from . import attention
from .calibration import ModelConstants
from .models import load_config, model_kind
from .parallel import build_model
from .report import EstimateReport
from .session import EstimateSession
from .shapes import ShapeOnly
from .topology import Placement, resolve_instance

__all__ = ["Setup", "run_estimate", "DTYPES"]

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}
Task = Literal["train", "prefill", "decode"]


@dataclass
class Setup:
    """What to estimate (the CLI's arguments).

    Attributes:
        model: preset name, ``config.json`` path or folder (:mod:`.models`), or a transformers config.
        task: ``"train"``, ``"prefill"`` or ``"decode"``.
        batch: sequences per step (per micro-batch for training); seq: tokens per sequence (prefill bucket,
            training length; for vision models the image size sets it); kv_len: KV-cache length of decode
            (default ``seq``).
        tp, fsdp, dp, pp: tensor, fully-sharded data, data (replicas) and pipeline parallel degrees.
        microbatches: micro-batches per step with ``pp`` > 1; grad_accum: accumulated micro-batches otherwise.
        platform, lnc, instance, instances: the hardware. dtype: parameter dtype (``bf16``, ``fp32``,
            ``fp16``); autocast: bf16 autocast around the forward (mixed precision with fp32 parameters).
        compiled: headline estimate as compiled graphs (``--compile``); both are always computed.
        price_per_hour: USD per instance-hour (overrides the table). sequence_parallel, zero1, recompute:
            see the module docstring. layers: override the number of layers (``pp`` divides them itself).
        trace: chrome-trace path. constants: fitted constants to use (fitting, tests).
    """

    model: object
    task: Task
    batch: int
    seq: int
    kv_len: int | None = None
    tp: int = 1
    fsdp: int = 1
    dp: int = 1
    pp: int = 1
    microbatches: int | None = None
    grad_accum: int = 1
    platform: str = "trn2"
    lnc: int | None = None
    instance: str | None = None
    instances: int = 1
    dtype: str = "bf16"
    autocast: bool = False
    compiled: bool = False
    price_per_hour: float | None = None
    sequence_parallel: bool = False
    zero1: bool = False
    recompute: Literal["none", "attention", "full"] = "none"
    layers: int | None = None
    trace: str | None = None
    constants: ModelConstants | None = None
    notes: list = field(default_factory=list)


def _check(setup: Setup, config) -> None:
    if setup.task not in ("train", "prefill", "decode"):
        raise ValueError(f"--task {setup.task!r}: use train, prefill or decode")
    for name in ("batch", "seq", "tp", "fsdp", "dp", "pp", "grad_accum", "instances", "kv_len", "microbatches",
                 "layers"):
        value = getattr(setup, name)
        if value is None and name in ("kv_len", "microbatches", "layers"):      # optional: the default applies
            continue
        flag = f"--{name.replace('_', '-')}"
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{flag} {value!r}: must be a whole number (an int), not {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{flag} {value}: must be at least 1")
    if setup.microbatches is not None and setup.pp == 1:
        raise ValueError(f"--microbatches {setup.microbatches} is the pipeline schedule's (with --pp > 1); "
                         "to accumulate micro-batches without pipeline stages use --grad-accum")
    if setup.kv_len is not None and setup.task != "decode":
        raise ValueError(f"--kv-len {setup.kv_len} is the KV-cache length of a decode step (--task decode); "
                         f"--task {setup.task} takes its length from --seq")
    if setup.dtype not in DTYPES:
        raise ValueError(f"--dtype {setup.dtype!r}: use one of {', '.join(DTYPES)}")
    if setup.recompute not in ("none", "attention", "full"):
        raise ValueError(f"--recompute {setup.recompute!r}: use none, attention or full")
    if setup.pp > 1 and setup.task != "train":
        raise ValueError("--pp is for training (pipeline-parallel inference is not modelled)")
    if setup.zero1 and setup.dp == 1:
        raise ValueError("--zero1 shards the optimizer over data-parallel replicas: it needs --dp > 1")
    if setup.task == "decode" and model_kind(config) != "causal_lm":
        raise ValueError(f"--task decode needs a causal language model; {config.model_type} is not one")
    layers = setup.layers or config.num_hidden_layers
    if setup.pp > 1 and layers % setup.pp:
        raise ValueError(f"--pp {setup.pp} does not divide the model's {layers} layers")
    from ..runtime.platforms import get_platform

    platform = get_platform(setup.platform)
    lnc = platform.chip.default_lnc if setup.lnc is None else setup.lnc
    if lnc not in platform.chip.lnc_choices:
        raise ValueError(f"--lnc {lnc} is not available on {platform.name}: use one of "
                         f"{', '.join(map(str, platform.chip.lnc_choices))}")
    placement = Placement(platform, lnc, resolve_instance(platform, setup.instance, setup.instances), setup.instances)
    world = setup.tp * setup.fsdp * setup.dp * setup.pp
    if world > placement.total_cores:
        raise ValueError(
            f"tp {setup.tp} x fsdp {setup.fsdp} x dp {setup.dp} x pp {setup.pp} = {world} ranks, but "
            f"{setup.instances} x {placement.instance.name} at LNC={lnc} has {placement.total_cores} logical "
            f"NeuronCores: raise --instances (one instance has {placement.cores_per_instance}) or lower a degree")


def _inputs(kind: str, config, batch: int, seq: int, dtype: torch.dtype) -> dict:
    if kind == "vision":
        size = config.image_size
        return {"pixel_values": torch.randn(batch, config.num_channels, size, size, dtype=dtype, device="neuron")}
    return {"input_ids": torch.randint(0, config.vocab_size, (batch, seq), device="neuron")}


def _positions(batch: int, start: int, length: int) -> dict:
    pos = torch.arange(start, start + length, device="neuron")
    return {"position_ids": pos.unsqueeze(0).expand(batch, length)}


def run_estimate(setup: Setup) -> EstimateReport:
    """Estimates ``setup`` shape-only and returns the :class:`~.report.EstimateReport`.

    Raises:
        ValueError: a bad setup (the message names the argument and the fix).
    """
    config: Any = setup.model if not isinstance(setup.model, (str, bytes)) and hasattr(setup.model, "model_type") \
        else load_config(str(setup.model))
    _check(setup, config)
    config = config.__class__.from_dict(config.to_dict()) if hasattr(config, "to_dict") else config
    notes = list(setup.notes)
    layers = setup.layers or config.num_hidden_layers
    if setup.pp > 1:
        layers //= setup.pp
        notes.append(f"pipeline stage of {layers} layers (plus embedding and lm_head: the last stage's work)")
    if layers != config.num_hidden_layers:
        config.num_hidden_layers = layers
    kind = model_kind(config)
    param_dtype = DTYPES[setup.dtype]
    world = setup.tp * setup.fsdp
    stride = world * setup.pp                                # ranks between data-parallel replicas
    with ShapeOnly(world_size=world) as so:
        model, build_notes, kind, built_config = build_model(
            so, config, dtype=param_dtype, tp=setup.tp, fsdp=setup.fsdp,
            sequence_parallel=setup.sequence_parallel, kind=kind, task=setup.task)
        notes += build_notes
        if setup.recompute == "attention":
            model.config._attn_implementation = attention.RECOMPUTED_SDPA
        if setup.recompute == "full":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False,
                                                                               "preserve_rng_state": False})
        seq = setup.seq
        if kind == "vision":
            seq = (config.image_size // config.patch_size) ** 2 + 1
        session = EstimateSession(setup.platform, setup.lnc, setup.instance, setup.instances, setup.price_per_hour,
                                  modules=[model], compiled=setup.compiled, constants=setup.constants,
                                  trace=setup.trace, module_names=True)
        session.task = setup.task
        session.notes += notes
        if setup.task == "train":
            _train(session, so, model, built_config, kind, setup, seq, stride)
        elif setup.task == "prefill":
            _prefill(session, model, built_config, kind, setup, seq)
        else:
            _decode(session, model, built_config, setup)
    if session.report is None:          # each task records inside ``with session``, which sets it on exit
        raise RuntimeError(f"the {setup.task!r} estimate recorded no step (torch_neuronx.estimate.workloads)")
    return session.report


def _prefill(session, model, config, kind, setup, seq) -> None:
    model.eval()
    inputs = _inputs(kind, config, setup.batch, seq, DTYPES[setup.dtype])
    session.tokens_per_step = setup.batch * seq * setup.dp
    with session, torch.no_grad():
        with session.segment("prefill" if kind == "causal_lm" else "forward", graphs=1):
            if kind == "causal_lm":
                model(**inputs, **_positions(setup.batch, 0, seq), use_cache=False, logits_to_keep=1)
            else:
                model(**inputs)


def _decode(session, model, config, setup) -> None:
    from transformers import StaticCache

    model.eval()
    kv_len = setup.kv_len or setup.seq
    heads = config.num_key_value_heads // setup.tp
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    session.tokens_per_step = setup.batch * setup.dp
    cache = StaticCache(config=config, max_cache_len=kv_len)
    ids = torch.randint(0, config.vocab_size, (setup.batch, 1), device="neuron")
    with session, torch.no_grad():
        with session.paused():
            cache.early_initialization(setup.batch, heads, head_dim, DTYPES[setup.dtype], torch.device("neuron"))
        session.tag(cache, "kv_cache")
        session.notes.append(f"decode against a static KV cache of {kv_len} positions x batch {setup.batch}")
        with session.segment("decode step", graphs=1):
            model(input_ids=ids, past_key_values=cache, use_cache=True, **_positions(setup.batch, kv_len - 1, 1))


def _zero1_optimizer(session, model, dp: int) -> None:
    """AdamW on this rank's 1/dp shard of the flat fp32 master weights (ZeRO-1)."""
    local = sum((p.to_local() if hasattr(p, "to_local") else p).numel() for p in model.parameters())
    shard = math.ceil(local / dp)
    with session.paused():
        master = torch.empty(shard, dtype=torch.float32, device="neuron")
        master.grad = torch.empty(shard, dtype=torch.float32, device="neuron")
    session.tag([master, master.grad], "optimizer_state")
    opt = torch.optim.AdamW([master], lr=1e-5, foreach=True)
    opt.step()
    session.tag([master, master.grad], "optimizer_state")


def _train(session, so, model, config, kind, setup, seq, stride) -> None:
    model.train()
    dtype = DTYPES[setup.dtype]
    inputs = _inputs(kind, config, setup.batch, seq, dtype)
    if kind == "causal_lm":
        inputs["labels"] = inputs["input_ids"]
        inputs.update(_positions(setup.batch, 0, seq))
    elif kind == "vision":
        inputs["labels"] = torch.randint(0, config.num_labels, (setup.batch,), device="neuron")
    else:
        inputs["labels"] = inputs["input_ids"]
        inputs["next_sentence_label"] = torch.randint(0, 2, (setup.batch,), device="neuron")
    if setup.pp > 1:
        micro = setup.microbatches or setup.grad_accum
        repeat, note = micro + setup.pp - 1, f"1F1B: {micro} micro-batches + {setup.pp - 1} fill/drain slots"
    else:
        micro = setup.grad_accum
        repeat, note = micro, f"{micro} accumulated micro-batch(es)"
    session.tokens_per_step = setup.batch * seq * micro * setup.dp * setup.fsdp
    autocast = torch.autocast("neuron", dtype=torch.bfloat16) if setup.autocast else contextlib.nullcontext()
    loss_parallel: contextlib.AbstractContextManager = contextlib.nullcontext()
    if setup.tp > 1:
        from torch.distributed.tensor.parallel import loss_parallel as _loss_parallel

        loss_parallel = _loss_parallel()
    opt = None if setup.zero1 else torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=False)
    with session:
        with session.segment("micro-batch (forward + backward)", repeat=repeat, graphs=2, note=note):
            with loss_parallel:
                with autocast:
                    loss = model(**inputs).loss
                loss.backward()
            if setup.pp > 1:
                width = config.hidden_size * 2 * setup.batch * seq // (setup.tp if setup.sequence_parallel else 1)
                for _ in range(2):        # activations to the next stage, gradients back
                    session.add_collective("send", width, [0, setup.tp * setup.fsdp], "pipeline", "bfloat16")
        with session.segment("optimizer step", repeat=1, graphs=1,
                             note="ZeRO-1: AdamW on a 1/dp fp32 shard" if setup.zero1 else "AdamW"):
            if opt is None:
                _zero1_optimizer(session, model, setup.dp)
            else:
                opt.step()
                opt.zero_grad(set_to_none=False)
        if setup.dp > 1:
            # gradients and parameters have the parameters' dtype (fp32 master weights with --autocast)
            nbytes = sum((p.to_local() if hasattr(p, "to_local") else p).numel() * p.element_size()
                         for p in model.parameters())
            ranks = [k * stride for k in range(setup.dp)]
            with session.segment("data-parallel gradient sync", repeat=1, graphs=0,
                                 note=f"{setup.dp} replicas, {'ZeRO-1' if setup.zero1 else 'all-reduce'}"):
                if setup.zero1:
                    session.add_collective("reduce_scatter", nbytes, ranks, "data parallel")
                    session.add_collective("all_gather", nbytes, ranks, "data parallel")
                else:
                    session.add_collective("all_reduce", nbytes, ranks, "data parallel")
