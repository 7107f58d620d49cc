"""The ``diffusers`` family: every transformer, UNet and VAE model class Diffusers exports
(``diffusers.models.transformers``, ``.unets``, ``.autoencoders``). An entry is named by its class.

Diffusers model classes have no config class to shrink generically (their ``__init__`` defaults are
the released sizes, up to billions of parameters), so each class needs a tiny spec: ``__init__``
keyword arguments and forward inputs (:data:`~.diffusers_specs.SPECS`, written for this table). A class without one
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
from .diffusers_specs import SPECS, InputSpec
from .encoder import compare_tensors

CHECKS: tuple[Check, ...] = ("forward", "compiled", "train")
#: The Diffusers sub-packages whose exported model classes are entries.
KINDS = ("transformers", "unets", "autoencoders")


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

    def make(s: InputSpec) -> Any:
        if isinstance(s, tuple) and s and isinstance(s[0], str):
            kind, arg = s
            if kind == "timestep":
                return torch.full((arg,), 500.0)
            if kind == "arange":
                return torch.arange(int(torch.tensor(arg).prod())).reshape(arg) % 7
            if kind == "ones_long":
                return torch.ones(arg, dtype=torch.long)
            if kind == "tensor":
                return torch.tensor(arg)
            if kind == "list":
                return [make(x) for x in arg]
            if kind == "generator":
                return SeededGenerator(int(arg))
            return arg
        return torch.randn(s, generator=g)

    return {name: make(s) for name, s in spec.items()}


class SeededGenerator:
    """A forward input standing for a CPU ``torch.Generator`` seeded with ``seed`` (spec input
    ``("generator", seed)``): each forward gets a new generator in that state (:func:`forward`), so a
    model that draws noise inside its forward from a ``generator`` argument (Diffusers' consistency
    decoder) draws the same noise on the CPU and on the device. A CPU generator because Diffusers'
    ``randn_tensor`` draws ``neuron`` noise on the CPU and moves it."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def new(self) -> Any:
        """A ``torch.Generator("cpu")`` seeded with ``seed``."""
        import torch

        return torch.Generator("cpu").manual_seed(self.seed)


def _to(x: Any, device: Any) -> Any:
    if isinstance(x, SeededGenerator):
        return x.new()
    if hasattr(x, "to") and hasattr(x, "dtype"):
        return x.to(device)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    if isinstance(x, list):
        return [_to(v, device) for v in x]
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
