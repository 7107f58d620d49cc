"""The checks of a generative entry of a non-causal-LM family (image-text-to-text, seq2seq,
speech-seq2seq): the same two checks as the causal-LM table, from the family's own inputs.

``generate``
    Greedy ``generate`` (eager, dynamic cache) of ``new_tokens`` tokens from the family's inputs
    (image + prompt, encoder ids, audio features) on the CPU, then on a copy moved to the device:
    tokens equal and every step's logits within ``atol``.
``compiled``
    ``generate(cache_implementation="static")``: on the CPU with ``disable_compile=True``; on the
    device transformers compiles the decode step itself (``CompileConfig(backend="neuron")``). Passes
    when at least one graph was compiled and the tokens equal the CPU's (logits within ``atol``);
    "skip" when transformers declines to compile the model. A failure is judged again against the
    same generate compiled by Inductor on the CPU (:func:`against_cpu_inductor`): when the device
    equals CPU Inductor, the difference is PyTorch's compiler's, and the entry is listed apart as
    failing the check on the CPU ("cpu-fail"), with both differences in the reason.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from .checks import (CPU_FAIL, FAIL, SKIP, Check, Outcome, Report, compare_generation, error_reason,
                     judged_against_cpu_inductor, replicas, run_check)

#: The checks of a generative family, in order.
GENERATIVE_CHECKS: tuple[Check, ...] = ("generate", "compiled")


def _to(inputs: dict[str, Any], device: Any) -> dict[str, Any]:
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}


def generate(model: Any, inputs: dict[str, Any], new_tokens: int, **kwargs: Any) -> tuple[Any, Any]:
    """Greedy ``model.generate(**inputs)`` of exactly ``new_tokens`` tokens on the model's device.

    Returns:
        ``(sequences, logits)`` on the CPU: int64 ``[1, L]`` and float32 ``[new_tokens, vocab]``.
    """
    import torch
    from transformers import GenerationConfig

    device = next(model.parameters()).device
    pad = getattr(model.config, "pad_token_id", None)
    config = GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, num_beams=1,
                              output_logits=True, return_dict_in_generate=True,
                              pad_token_id=pad if isinstance(pad, int) else 0)
    if getattr(model.config, "is_encoder_decoder", False):  # v5 configs may no longer carry it
        start = getattr(model.config, "decoder_start_token_id", None)
        config.decoder_start_token_id = start if isinstance(start, int) else config.pad_token_id
    out = model.generate(**_to(inputs, device), generation_config=config, **kwargs)
    return out.sequences.cpu(), torch.stack([step[0].float().cpu() for step in out.logits])


#: File paths, with the line number that may follow (``/cache/ab/cab….main.cpp:80``).
_PATHS = re.compile(r"(/[^\s,:]+)+(:\d+)?")
#: The name of a generated C++ kernel in its own checks' messages: ``kernel`` when it is built alone (CPU
#: Inductor), ``kernel_<i>`` in the one library of a ``neuron`` graph (``torch_neuronx.compile.kernel_bundle``).
_KERNEL = re.compile(r"\bkernel_\d+\b")


def same_error(a: BaseException, b: BaseException) -> bool:
    """Same exception type and message once file paths with their line numbers (compile caches and
    generated files differ) are removed and a generated kernel's name ``kernel_<i>`` reads ``kernel``."""
    def plain(e: BaseException) -> str:
        return _KERNEL.sub("kernel", _PATHS.sub("<path>", str(e)))

    return type(a) is type(b) and plain(a) == plain(b)


def against_cpu_inductor(outcome: Outcome, got: tuple[Any, Any] | BaseException, fresh: Callable[[str], Any],
                         inputs: dict[str, Any], new_tokens: int, atol: float) -> Outcome:
    """A compiled check that failed against the CPU's eager static-cache run, judged again against
    PyTorch's own compiler on the CPU: the same static-cache generate compiled by
    ``torch.compile``'s default backend (Inductor) on the CPU. When the device's tokens and logits
    equal CPU Inductor's (within ``atol``) — or the device raised and CPU Inductor raises the same
    error (``got`` is the device's exception) — the failure is Inductor's on every device, not the
    device's: the outcome becomes "cpu-fail" with the evidence in its reason (listed apart, like any
    CPU failure). Otherwise ``outcome`` stands."""
    import torch
    from transformers import CompileConfig

    config = CompileConfig(fullgraph=False, dynamic=False)  # transformers' neuron settings, Inductor's backend
    # transformers compiles on the CPU only when asked this way
    config._compile_all_devices = True  # type: ignore[assignment]
    try:
        ref = generate(fresh("cpu"), inputs, new_tokens, cache_implementation="static", compile_config=config)
    except Exception as err:  # noqa: BLE001 - the original failure stands, with this one noted
        if isinstance(got, BaseException) and same_error(got, err):
            return Outcome(CPU_FAIL, f"CPU Inductor (torch.compile on the CPU) raises the same error: "
                                     f"{error_reason(err)}")
        return Outcome(FAIL, f"{outcome.reason}; CPU Inductor could not run it either ({error_reason(err)})",
                       outcome.max_diff)
    finally:
        torch._dynamo.reset()
    if isinstance(got, BaseException):
        return outcome
    same = compare_generation(ref, got, atol)
    return judged_against_cpu_inductor(outcome, same)


def check_generative(model_type: str, build: Callable[[], Any], make_inputs: Callable[[Any], dict[str, Any]], *,
                     device: str = "neuron", new_tokens: int = 4, atol: float = 1e-3,
                     checks: tuple[Check, ...] = GENERATIVE_CHECKS) -> Report:
    """Runs :data:`GENERATIVE_CHECKS` (module docstring) for one entry and returns its :class:`Report`.

    Args:
        model_type: the row's name.
        build: returns the tiny CPU model (its failure is a "cpu-fail" of every check).
        make_inputs: the CPU inputs of that model (its failure is a "cpu-fail" of every check).
        device: the device under test; new_tokens: tokens generated per run; atol: logits tolerance.
        checks: the subset of :data:`GENERATIVE_CHECKS` to run.
    """
    import torch

    start = time.perf_counter()
    report = Report(model_type)
    try:
        cpu_model = build()
        report.model_class = type(cpu_model).__name__
        report.params = sum(p.numel() for p in cpu_model.parameters())
        inputs = make_inputs(cpu_model)
    except Exception as err:  # noqa: BLE001 - reported, not raised
        what = "building the tiny model" if not report.model_class else "building the inputs"
        report.outcomes = {c: Outcome("cpu-fail", f"{what}: {error_reason(err)}") for c in GENERATIVE_CHECKS}
        report.seconds = time.perf_counter() - start
        return report
    fresh = replicas(cpu_model)

    run_check(report, "generate", checks, lambda: generate(fresh("cpu"), inputs, new_tokens),
              lambda: generate(fresh(device), inputs, new_tokens), compare_generation, atol)

    compiled_out: list[Any] = []

    def compiled_candidate() -> Any:
        from ..compile import get_dynamo_metrics

        before = get_dynamo_metrics()["graphs"]
        try:
            got = generate(fresh(device), inputs, new_tokens, cache_implementation="static")
        except Exception as err:
            compiled_out.append(err)  # judged again against CPU Inductor below
            raise
        finally:
            graphs = get_dynamo_metrics()["graphs"] - before
            torch._dynamo.reset()
        if graphs == 0:
            return Outcome(SKIP, "transformers ran the static cache eagerly (it does not compile this model)")
        compiled_out.append(got)
        return got

    run_check(report, "compiled", checks,
              lambda: generate(fresh("cpu"), inputs, new_tokens, cache_implementation="static",
                               disable_compile=True),
              compiled_candidate, compare_generation, atol)
    outcome = report.outcomes.get("compiled")
    if outcome is not None and outcome.status == FAIL and compiled_out:
        report.outcomes["compiled"] = against_cpu_inductor(outcome, compiled_out[0], fresh, inputs, new_tokens, atol)
    report.seconds = time.perf_counter() - start
    return report




class MappingFamily:
    """A generative family over one transformers auto mapping (``mapping``: a name in
    ``transformers.models.auto.modeling_auto`` such as ``MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES``): its
    entries are the mapping's model types, each checked by :func:`check_generative` on the mapping's
    class, tiny from its own config class (:func:`~.composite.tiny_composite_model`), with inputs from
    ``make_inputs(model, model_type, seed)``."""

    def __init__(self, mapping: str, make_inputs: Callable[[Any, str, int], dict[str, Any]]) -> None:
        self.mapping = mapping
        self.make_inputs = make_inputs

    def classes(self) -> dict[str, str]:
        """The mapping itself: model type -> class name.

        Raises:
            AttributeError: transformers has no mapping of that name.
        """
        from transformers.models.auto import modeling_auto

        return dict(getattr(modeling_auto, self.mapping))

    def entries(self) -> list[str]:
        """Every model type of the mapping, sorted."""
        return sorted(self.classes())

    def check_entry(self, model_type: str, *, device: str = "neuron", new_tokens: int = 4, atol: float = 1e-3,
                    checks: tuple[Check, ...] = GENERATIVE_CHECKS, seed: int = 0) -> Report:
        """The :func:`check_generative` checks of one model type (a key of the mapping) on ``device``.

        Raises:
            KeyError: ``model_type`` is not in the mapping. Never for a model's failure (see :class:`Report`).
        """
        from .composite import tiny_composite_model

        class_name = self.classes()[model_type]
        return check_generative(model_type, lambda: tiny_composite_model(model_type, class_name, seed),
                                lambda model: self.make_inputs(model, model_type, seed),
                                device=device, new_tokens=new_tokens, atol=atol, checks=checks)
