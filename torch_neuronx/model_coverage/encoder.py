"""The ``encoder`` family: every model class of transformers' masked-LM, sequence-classification and
image-classification mappings (``MODEL_FOR_MASKED_LM_MAPPING_NAMES``,
``MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES``, ``MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES``;
a mapping value that is a tuple of classes gives one entry per class). An entry is named by its class.

``forward``
    Eager forward of the tiny model (:mod:`.composite`) on the CPU and on the device, same inputs
    (8 token ids; for images two synthetic images through the model type's image processor, batch 2
    because BatchNorm heads refuse one value per channel in training): the logits within ``atol``.
``train``
    One training step with the head's own loss (masked LM: labels = the ids; classification:
    class labels; ``mean(logits²)`` for a head that computes no loss): loss within ``atol``
    relative to max(1, |loss|) and every gradient within ``atol`` × max(1, max |g_cpu|).
"""
from __future__ import annotations

import time
from typing import Any

from .checks import (FAIL, PASS, Check, Outcome, Report, compare_train, error_reason, parameter_grads, replicas,
                     run_check)

CHECKS: tuple[Check, ...] = ("forward", "train")
#: The head of each mapping, by the mapping's name.
HEADS: dict[str, str] = {
    "MODEL_FOR_MASKED_LM_MAPPING_NAMES": "masked-lm",
    "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES": "sequence-classification",
    "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES": "image-classification",
}


def entry_table() -> dict[str, tuple[str, str]]:
    """Class name -> ``(model_type, head)`` for every class of the three mappings."""
    from transformers.models.auto import modeling_auto

    out: dict[str, tuple[str, str]] = {}
    for mapping_name, head in HEADS.items():
        for model_type, value in sorted(getattr(modeling_auto, mapping_name).items()):
            for class_name in [value] if isinstance(value, str) else list(value):
                out.setdefault(class_name, (model_type, head))
    return out


def entries() -> list[str]:
    """Every class name of :func:`entry_table`, in mapping order (masked LM, sequence, image)."""
    return list(entry_table())


def encoder_inputs(model: Any, model_type: str, head: str, seed: int = 0) -> dict[str, Any]:
    """The CPU inputs of one entry (module docstring), without labels."""
    import torch

    from . import tiny as _tiny
    from .composite import vocab_size
    from .inputs import image_inputs, token_ids

    config = model.config
    if head == "image-classification":
        try:
            pixels = image_inputs(model_type, config, seed)["pixel_values"]
        except (LookupError, KeyError):  # no image processor registered: the config's own geometry
            size = _tiny.get_field(config, "image_size") or 32
            size = size[0] if isinstance(size, (list, tuple)) else size
            g = torch.Generator().manual_seed(seed)
            pixels = torch.randn(1, _tiny.get_field(config, "num_channels") or 3, size, size, generator=g)
        return {"pixel_values": torch.cat([pixels, 0.5 * pixels])}
    ids = token_ids(8, vocab_size(config), seed)
    eos = _tiny.get_field(config, "eos_token_id")
    if head == "sequence-classification" and getattr(config, "is_encoder_decoder", False) and isinstance(eos, int):
        ids[0, -1] = eos  # BART-style heads pool the last <eos>
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _logits(out: Any) -> Any:
    logits = getattr(out, "logits", None)
    if logits is None:
        logits = out[0] if isinstance(out, (tuple, list)) else out.to_tuple()[0]
    return logits


def forward_logits(model: Any, inputs: dict[str, Any]) -> Any:
    """The model's logits (float32, CPU) for ``inputs`` moved to its device, without gradients."""
    import torch

    device = next(model.parameters()).device
    with torch.no_grad():
        out = model(**{k: v.to(device) for k, v in inputs.items()})
    return _logits(out).float().cpu()


def compare_tensors(ref: Any, got: Any, atol: float) -> Outcome:
    """Pass when ``got`` has ``ref``'s shape, the same non-finite positions, and differs by ≤ ``atol``
    (absolute) elsewhere."""
    import torch

    if ref.shape != got.shape:
        return Outcome(FAIL, f"output shape {tuple(got.shape)} vs CPU {tuple(ref.shape)}")
    finite = torch.isfinite(ref) & torch.isfinite(got)
    if not torch.equal(torch.isfinite(ref), torch.isfinite(got)):
        return Outcome(FAIL, "non-finite outputs differ from the CPU's")
    diff = float((ref - got).abs()[finite].max()) if finite.any() else 0.0
    if diff > atol:
        return Outcome(FAIL, f"outputs differ from the CPU's by {diff:.2e} > {atol:g}", diff)
    return Outcome(PASS, "", diff)


def train_step(model: Any, inputs: dict[str, Any], head: str) -> tuple[float, dict[str, Any]]:
    """``(loss, {name: grad on CPU})`` of one forward/backward in train mode with the head's own loss."""
    import torch

    device = next(model.parameters()).device
    model.train()
    kw = {k: v.to(device) for k, v in inputs.items()}
    if head == "masked-lm":
        kw["labels"] = kw["input_ids"]
    else:
        batch = next(iter(kw.values())).shape[0]
        kw["labels"] = torch.tensor([1, 0][:batch], device=device)
    out = model(**kw)
    loss = getattr(out, "loss", None)
    if loss is None:  # heads without a loss of their own (DeiT / LeViT with a distillation teacher)
        loss = _logits(out).float().pow(2).mean()
    loss.backward()
    return float(loss.detach().cpu()), parameter_grads(model)


def check_entry(class_name: str, *, device: str = "neuron", atol: float = 1e-3,
                checks: tuple[Check, ...] = CHECKS, seed: int = 0) -> Report:
    """The checks of one class (module docstring) on ``device``.

    Raises:
        KeyError: ``class_name`` is in none of the three mappings. Never for a model's failure.
    """
    from .composite import tiny_composite_model

    model_type, head = entry_table()[class_name]
    start = time.perf_counter()
    report = Report(class_name, class_name)
    try:
        cpu_model = tiny_composite_model(model_type, class_name, seed)
        report.params = sum(p.numel() for p in cpu_model.parameters())
        inputs = encoder_inputs(cpu_model, model_type, head, seed)
    except Exception as err:  # noqa: BLE001 - reported, not raised
        report.outcomes = {c: Outcome("cpu-fail", f"building the tiny model or inputs: {error_reason(err)}")
                           for c in CHECKS}
        report.seconds = time.perf_counter() - start
        return report
    fresh = replicas(cpu_model)

    run_check(report, "forward", checks, lambda: forward_logits(fresh("cpu"), inputs),
              lambda: forward_logits(fresh(device), inputs), compare_tensors, atol)
    run_check(report, "train", checks, lambda: train_step(fresh("cpu"), inputs, head),
              lambda: train_step(fresh(device), inputs, head), compare_train, atol)
    report.seconds = time.perf_counter() - start
    return report
