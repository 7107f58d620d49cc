"""The ``diffusers`` family: every transformer, UNet and VAE model class Diffusers exports
(``diffusers.models.transformers``, ``.unets``, ``.autoencoders``). An entry is named by its class.

Diffusers model classes have no config class to shrink generically (their ``__init__`` defaults are
the released sizes, up to billions of parameters), so each class needs a tiny spec: ``__init__``
keyword arguments and forward inputs (:data:`SPECS`, written for this table). A class without one
gets a generic spec derived from the class itself (:mod:`.diffusers_generic`); a class whose generic
spec does not run on the CPU is listed apart as failing on the CPU, with the CPU's error.

``forward``
    Eager forward on the CPU and on the device, same seeded inputs; the first output tensor
    (``sample``) within ``atol``.
``compiled``
    ``model.compile(backend="neuron")`` (what the examples do to the denoiser), forward on the device
    vs the CPU's eager output; a failure is judged again against the CPU compiled by Inductor
    (:func:`against_cpu_inductor`): equal to it, it is listed apart as failing on the CPU.
``train``
    ``loss = mean(out²)``, backward: loss and every gradient within ``atol`` (relative to
    max(1, |ref|)).

Randomness is removed before comparing (the device's random stream differs from the CPU's by
design): every ``nn.Dropout`` gets ``p = 0`` and label dropout (``dropout_prob``) is zeroed.
"""
from __future__ import annotations

import time
from typing import Any

from .checks import (FAIL, Check, Outcome, Report, compare_train, error_reason, parameter_grads,
                     judged_against_cpu_inductor, replicas, run_check)
from .encoder import compare_tensors

CHECKS: tuple[Check, ...] = ("forward", "compiled", "train")
#: The Diffusers sub-packages whose exported model classes are entries.
KINDS = ("transformers", "unets", "autoencoders")

#: An input: a shape (seeded ``randn``), ``("timestep", n)`` (``[n]`` float steps), ``("arange", shape)``
#: (int64 coordinates), ``("ones_long", shape)``, ``("tensor", nested_list)`` (``torch.tensor`` of it:
#: int64, float32 or bool by its items), ``("value", python_object)``.
InputSpec = Any

#: Class name -> (``__init__`` keyword arguments, forward inputs).
SPECS: dict[str, tuple[dict[str, Any], dict[str, InputSpec]]] = {
    "UNet2DModel": (
        {"sample_size": 16, "in_channels": 3, "out_channels": 3, "layers_per_block": 1,
         "block_out_channels": (16, 32), "down_block_types": ("DownBlock2D", "AttnDownBlock2D"),
         "up_block_types": ("AttnUpBlock2D", "UpBlock2D"), "norm_num_groups": 8, "attention_head_dim": 8},
        {"sample": (1, 3, 16, 16), "timestep": ("timestep", 1)}),
    "UNet2DConditionModel": (
        {"sample_size": 16, "in_channels": 4, "out_channels": 4, "layers_per_block": 1,
         "block_out_channels": (16, 32), "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"),
         "up_block_types": ("UpBlock2D", "CrossAttnUpBlock2D"), "cross_attention_dim": 32, "norm_num_groups": 8,
         "attention_head_dim": 8},
        {"sample": (1, 4, 16, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 8, 32)}),
    "AutoencoderKL": (
        {"in_channels": 3, "out_channels": 3, "down_block_types": ("DownEncoderBlock2D",) * 2,
         "up_block_types": ("UpDecoderBlock2D",) * 2, "block_out_channels": (16, 32), "latent_channels": 4,
         "norm_num_groups": 8, "layers_per_block": 1},
        {"sample": (1, 3, 16, 16)}),
    "AutoencoderTiny": (
        {"in_channels": 3, "out_channels": 3, "encoder_block_out_channels": (16, 16),
         "decoder_block_out_channels": (16, 16), "num_encoder_blocks": (1, 1), "num_decoder_blocks": (1, 1),
         "latent_channels": 4},
        {"sample": (1, 3, 16, 16)}),
    "AutoencoderKLFlux2": (
        {"sample_size": 32, "in_channels": 3, "out_channels": 3, "down_block_types": ("DownEncoderBlock2D",) * 2,
         "up_block_types": ("UpDecoderBlock2D",) * 2, "block_out_channels": (8, 16), "layers_per_block": 1,
         "latent_channels": 4, "norm_num_groups": 4},
        {"sample": (1, 3, 16, 16)}),
    "AutoencoderKLQwenImage": (
        {"base_dim": 8, "z_dim": 4, "dim_mult": [1, 2], "num_res_blocks": 1, "temperal_downsample": [False]},
        {"sample": (1, 3, 1, 16, 16)}),
    "AutoencoderKLQwenImage21": (  # RGBA; 5 levels = the pipeline's 16x spatial compression
        {"base_dim": 8, "decoder_base_dim": 8, "z_dim": 4, "dim_mult": [1, 1, 1, 1, 1], "num_res_blocks": 1,
         "temperal_downsample": [False] * 4, "latents_mean": [0.0] * 4, "latents_std": [1.0] * 4},
        {"sample": (1, 4, 1, 32, 32)}),
    "AutoencoderKLWan": (
        {"base_dim": 8, "z_dim": 4, "dim_mult": [1, 2], "num_res_blocks": 1, "temperal_downsample": [False]},
        {"sample": (1, 3, 1, 16, 16)}),
    "VQModel": (
        {"block_out_channels": (8, 16), "norm_num_groups": 8, "in_channels": 3, "out_channels": 3,
         "down_block_types": ("DownEncoderBlock2D",) * 2, "up_block_types": ("UpDecoderBlock2D",) * 2,
         "latent_channels": 4, "num_vq_embeddings": 32},
        {"sample": (1, 3, 16, 16)}),
    "FluxTransformer2DModel": (
        {"patch_size": 1, "in_channels": 4, "num_layers": 1, "num_single_layers": 1, "attention_head_dim": 16,
         "num_attention_heads": 2, "joint_attention_dim": 32, "pooled_projection_dim": 32,
         "axes_dims_rope": [4, 4, 8]},
        {"hidden_states": (1, 16, 4), "encoder_hidden_states": (1, 8, 32), "pooled_projections": (1, 32),
         "img_ids": (16, 3), "txt_ids": (8, 3), "timestep": ("timestep", 1)}),
    "Flux2Transformer2DModel": (
        {"patch_size": 1, "in_channels": 4, "num_layers": 1, "num_single_layers": 1, "attention_head_dim": 16,
         "num_attention_heads": 2, "joint_attention_dim": 32, "timestep_guidance_channels": 256,
         "axes_dims_rope": [4, 4, 4, 4]},
        {"hidden_states": (1, 16, 4), "encoder_hidden_states": (1, 8, 32), "img_ids": ("arange", (1, 16, 4)),
         "txt_ids": ("arange", (1, 8, 4)), "timestep": ("timestep", 1), "guidance": ("timestep", 1)}),
    "QwenImageTransformer2DModel": (
        {"patch_size": 2, "in_channels": 16, "out_channels": 4, "num_layers": 2, "attention_head_dim": 16,
         "num_attention_heads": 2, "joint_attention_dim": 16, "axes_dims_rope": (8, 4, 4)},
        {"hidden_states": (1, 16, 16), "encoder_hidden_states": (1, 8, 16),
         "encoder_hidden_states_mask": ("ones_long", (1, 8)), "timestep": ("timestep", 1),
         "img_shapes": ("value", [(1, 4, 4)])}),
    # The seed's Qwen-Image-2.1 and H3 (examples/qwen_image21.py, examples/h3.py sizes). Qwen-Image-2.1: 8 text
    # rows then the target image's 4 slots of 2x2 latent tokens (a 4x4 image, 16 rows of ``hidden_states``).
    "QwenImage21Transformer2DModel": (
        {"patch_size": 1, "in_channels": 4, "out_channels": 4, "num_layers": 2, "attention_head_dim": 16,
         "num_attention_heads": 2, "context_in_dim": 16, "mlp_ratio": 2, "axes_dims_rope": (4, 6, 6)},
        {"hidden_states": (1, 16, 4), "encoder_hidden_states": (1, 8, 16), "timestep": ("tensor", [0.5]),
         "img_shapes": ("value", [[(1, 4, 4)]]), "img_mask": ("tensor", [[False] * 8 + [True] * 4])}),
    # H3: one packed sequence of 8 video rows (2x4x1 patches of 1x2x2), 6 text rows and 4 audio rows.
    "MiniMaxH3Transformer3DModel": (
        {"num_attention_heads": 2, "attention_head_dim": 16, "hidden_size": 24, "num_layers": 2,
         "num_refiner_layers": 2, "ffn_dim": 32, "in_channels": 4, "audio_in_channels": 8, "patch_size": (1, 2, 2),
         "text_dim": 16, "freq_dim": 8, "time_embed_hidden_dim": 24, "time_embed_dim": 16, "rope_freq_dim": 2},
        {"hidden_states": (1, 8, 16), "audio_hidden_states": (1, 4, 8), "encoder_hidden_states": (1, 6, 16),
         "timestep": ("tensor", [0.5, 0.0]), "timestep_indices": ("tensor", [0] * 8 + [1] * 6 + [0] * 4),
         "token_tags": ("tensor", [0] * 8 + [1] * 6 + [2] * 4),
         "position_ids": ("tensor", [[t, h, w] for t in range(2) for h in range(4) for w in range(1)]
                          + [[i, 0, 0] for i in range(6)] + [[i, 0, 0] for i in range(4)]),
         "video_indices": ("tensor", list(range(8))), "text_indices": ("tensor", list(range(8, 14))),
         "audio_indices": ("tensor", list(range(14, 18)))}),
    "AutoencoderKLMiniMaxH3": (
        {"in_channels": 3, "out_channels": 3, "latent_channels": 4, "block_out_channels": (8, 16),
         "layers_per_block": 1, "spatial_downsample_factors": (2, 2), "temporal_downsample_factors": (2, 2),
         "norm_num_groups": 8,
         "decoder_num_layers": 2, "decoder_num_attention_heads": 2, "decoder_attention_head_dim": 8,
         "decoder_num_register_tokens": 2, "decoder_ffn_mult": 2, "clip_length": 17, "token_drop": 3,
         "latents_mean": (0.0,) * 4, "latents_std": (1.0,) * 4},
        {"sample": (1, 3, 21, 16, 16), "sample_posterior": ("value", False)}),  # two 17-frame clips, overlapping
    "AutoencoderKLMiniMaxH3Audio": (
        {"encoder_dim": 4, "encoder_rates": (2, 2), "latent_dim": 32, "latent_channels": 8, "num_attention_heads": 2,
         "decoder_dim": 16, "decoder_rates": (2, 2), "decoder_kernel_sizes": (4, 4), "resblock_kernel_sizes": (3, 7),
         "resblock_dilation_sizes": ((1, 3), (1, 3)), "sampling_rate": 32000, "latents_mean": [0.0] * 8,
         "latents_std": [1.0] * 8},
        {"sample": (1, 1, 256), "sample_posterior": ("value", False)}),
    "SD3Transformer2DModel": (
        {"sample_size": 8, "patch_size": 2, "in_channels": 4, "num_layers": 1, "attention_head_dim": 8,
         "num_attention_heads": 2, "joint_attention_dim": 32, "caption_projection_dim": 16,
         "pooled_projection_dim": 16, "out_channels": 4},
        {"hidden_states": (1, 4, 8, 8), "encoder_hidden_states": (1, 8, 32), "pooled_projections": (1, 16),
         "timestep": ("timestep", 1)}),
    "PixArtTransformer2DModel": (
        {"sample_size": 8, "num_layers": 1, "patch_size": 2, "attention_head_dim": 8, "num_attention_heads": 2,
         "in_channels": 4, "out_channels": 8, "cross_attention_dim": 16, "caption_channels": 16,
         "norm_num_groups": 8, "use_additional_conditions": False},
        {"hidden_states": (1, 4, 8, 8), "encoder_hidden_states": (1, 8, 16), "timestep": ("timestep", 1),
         "added_cond_kwargs": ("value", {"aspect_ratio": None, "resolution": None})}),
    "DiTTransformer2DModel": (
        {"sample_size": 8, "num_layers": 1, "patch_size": 2, "attention_head_dim": 8, "num_attention_heads": 2,
         "in_channels": 4, "out_channels": 8, "num_embeds_ada_norm": 8, "norm_num_groups": 8},
        {"hidden_states": (1, 4, 8, 8), "timestep": ("timestep", 1), "class_labels": ("ones_long", (1,))}),
}


def entries() -> list[str]:
    """Every exported Diffusers model class defined under one of :data:`KINDS`, sorted by name."""
    import inspect

    import diffusers
    from diffusers.models.modeling_utils import ModelMixin

    out = []
    for name in sorted(dir(diffusers)):
        try:
            obj = getattr(diffusers, name)
        except Exception:  # noqa: BLE001 - an export whose optional dependency is missing
            continue
        if inspect.isclass(obj) and issubclass(obj, ModelMixin):
            parts = obj.__module__.split(".")
            if len(parts) > 2 and parts[1] == "models" and parts[2] in KINDS:
                out.append(name)
    return out


def make_inputs(spec: dict[str, InputSpec], seed: int = 0) -> dict[str, Any]:
    """The CPU forward inputs of an :data:`InputSpec` dict (float32, seeded CPU generator)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    out: dict[str, Any] = {}
    for name, s in spec.items():
        if isinstance(s, tuple) and s and isinstance(s[0], str):
            kind, arg = s
            if kind == "timestep":
                out[name] = torch.full((arg,), 500.0)
            elif kind == "arange":
                out[name] = torch.arange(int(torch.tensor(arg).prod())).reshape(arg) % 7
            elif kind == "ones_long":
                out[name] = torch.ones(arg, dtype=torch.long)
            elif kind == "tensor":
                out[name] = torch.tensor(arg)
            else:
                out[name] = arg
        else:
            out[name] = torch.randn(s, generator=g)
    return out


def _to(x: Any, device: Any) -> Any:
    if hasattr(x, "to") and hasattr(x, "dtype"):
        return x.to(device)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    return x


def _first_tensor(out: Any) -> Any:
    import torch

    if isinstance(out, torch.Tensor):
        return out
    for key in ("sample", "last_hidden_state"):
        value = getattr(out, key, None)
        if isinstance(value, torch.Tensor):
            return value
    if isinstance(out, (tuple, list)):
        return next(t for t in (_first_tensor(v) for v in out) if t is not None)
    if hasattr(out, "to_tuple"):
        return _first_tensor(out.to_tuple())
    return None


def tiny_diffusers_model(class_name: str, seed: int = 0, init: dict[str, Any] | None = None) -> Any:
    """The tiny ``class_name`` built from ``init``, by default its :data:`SPECS` entry, else the first
    of :func:`~.diffusers_generic.generic_specs`; float32 on the CPU, eval mode, randomness removed.

    Raises:
        AttributeError: Diffusers exports no ``class_name``; anything its constructor raises.
    """
    import diffusers
    import torch

    from .diffusers_generic import generic_specs

    cls = getattr(diffusers, class_name)
    if init is None:
        init = SPECS[class_name][0] if class_name in SPECS else next(generic_specs(cls))
    torch.manual_seed(seed)
    return without_randomness(cls(**init).eval())


def without_randomness(model: Any) -> Any:
    """``model`` with every ``nn.Dropout`` at ``p = 0`` and label dropout (``dropout_prob``) zeroed."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if isinstance(getattr(module, "dropout_prob", None), float):
            module.dropout_prob = 0.0
    return model


def generic_model_and_inputs(class_name: str, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """The first of :func:`~.diffusers_generic.generic_specs` whose tiny model runs on the CPU with one
    of its :func:`~.diffusers_generic.generic_inputs`: that CPU model and those inputs.

    Raises:
        The first variant's error (building it or running it) when none runs.
    """
    import diffusers

    from .diffusers_generic import generic_inputs, generic_specs

    first: Exception | None = None
    for init in generic_specs(getattr(diffusers, class_name)):
        try:
            model = tiny_diffusers_model(class_name, seed, init)
            return model, generic_inputs(model, init, seed)
        except Exception as err:  # noqa: BLE001 - the next variant
            first = first or err
    assert first is not None  # generic_specs raises when it yields nothing
    raise first


def forward(model: Any, inputs: dict[str, Any], grad: bool = False) -> Any:
    """The first output tensor of ``model(**inputs)`` with the inputs moved to the model's device.

    Raises:
        TypeError: the forward returned no tensor (Diffusers' ``MotionAdapter`` holds modules only).
    """
    import torch

    device = next(model.parameters()).device
    with torch.set_grad_enabled(grad):
        out = _first_tensor(model(**_to(inputs, device)))
    if out is None:
        raise TypeError(f"{type(model).__name__}.forward returned no tensor (a container of modules, not a model)")
    return out


def against_cpu_inductor(outcome: Outcome, got: Any, fresh: Any, inputs: dict[str, Any], atol: float) -> Outcome:
    """A compiled forward that failed against the CPU's eager output (``outcome``), judged again against
    the same forward compiled by ``torch.compile``'s default backend (Inductor) on the CPU: when the
    device's output ``got`` equals CPU Inductor's within ``atol``, the difference is Inductor's lowering
    on every device, and the outcome becomes "cpu-fail" with both differences in its reason (listed
    apart, as the generative families do); otherwise ``outcome`` stands."""
    import torch

    model = fresh("cpu")
    model.compile()
    try:
        ref = forward(model, inputs).float()
    except Exception as err:  # noqa: BLE001 - the original failure stands, with this one noted
        return Outcome(FAIL, f"{outcome.reason}; CPU Inductor could not run it either ({error_reason(err)})",
                       outcome.max_diff)
    finally:
        torch._dynamo.reset()
    same = compare_tensors(ref, got, atol)
    return judged_against_cpu_inductor(outcome, same)


def _train(model: Any, inputs: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    model.train()
    loss = forward(model, inputs, grad=True).float().pow(2).mean()
    loss.backward()
    return float(loss.detach().cpu()), parameter_grads(model)


def check_entry(class_name: str, *, device: str = "neuron", atol: float = 1e-3,
                checks: tuple[Check, ...] = CHECKS, seed: int = 0) -> Report:
    """The checks of one Diffusers model class (module docstring) on ``device``.

    Raises:
        Never for a model's failure; a class without a spec gets "skip" outcomes saying so.
    """
    import torch

    start = time.perf_counter()
    report = Report(class_name, class_name)
    what = "building the tiny model" if class_name in SPECS else "building and running the tiny model"
    try:
        if class_name in SPECS:
            cpu_model = tiny_diffusers_model(class_name, seed)
            what = "building the inputs"
            inputs = make_inputs(SPECS[class_name][1], seed)
        else:
            cpu_model, inputs = generic_model_and_inputs(class_name, seed)
        report.params = sum(p.numel() for p in cpu_model.parameters())
    except Exception as err:  # noqa: BLE001 - reported, not raised
        spec = "" if class_name in SPECS else " (generic tiny spec)"
        report.outcomes = {c: Outcome("cpu-fail", f"{what}{spec}: {error_reason(err)}") for c in CHECKS}
        report.seconds = time.perf_counter() - start
        return report
    # (Built again from its config when it cannot be deep-copied: legacy weight norm, MiniMax-H3's audio VAE.)
    fresh = replicas(cpu_model, lambda: without_randomness(type(cpu_model).from_config(cpu_model.config).eval()))

    def reference() -> Any:
        return forward(fresh("cpu"), inputs).float()

    compiled_out: list[Any] = []

    def compiled() -> Any:
        model = fresh(device)
        model.compile(backend="neuron")
        try:
            compiled_out.append(forward(model, inputs).float().cpu())
            return compiled_out[-1]
        finally:
            torch._dynamo.reset()

    run_check(report, "forward", checks, reference, lambda: forward(fresh(device), inputs).float().cpu(),
              compare_tensors, atol)
    run_check(report, "compiled", checks, reference, compiled, compare_tensors, atol)
    if report.outcomes["compiled"].status == FAIL and compiled_out:
        report.outcomes["compiled"] = against_cpu_inductor(report.outcomes["compiled"], compiled_out[-1], fresh,
                                                           inputs, atol)
    run_check(report, "train", checks, lambda: _train(fresh("cpu"), inputs), lambda: _train(fresh(device), inputs),
              compare_train, atol)
    report.seconds = time.perf_counter() - start
    return report
