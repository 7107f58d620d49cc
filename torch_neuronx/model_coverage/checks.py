"""The checks of one architecture: CPU reference, then the same on ``neuron``.

For a ``model_type`` of transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``,
:func:`check_architecture` builds the tiny model (:mod:`.tiny`) once on the CPU and runs:

``generate``
    Greedy ``generate`` (dynamic cache, eager) of ``new_tokens`` tokens from a fixed prompt on
    the CPU, then on a copy moved to ``neuron``: tokens must be equal and every step's logits
    within ``atol`` (default 1e-3, absolute).
``compiled``
    Greedy ``generate(cache_implementation="static")``. On the CPU with
    ``disable_compile=True`` (the eager static-cache reference); on ``neuron`` transformers
    compiles the decode step itself with ``CompileConfig(backend="neuron", dynamic=False)``
    (its ``_default_compile_config``). Passes when the backend saw at least one graph and the
    tokens equal the CPU reference (logits within ``atol``). If transformers declines to compile
    the model (its own rule, e.g. Llama 4), the check is "skip". A pass that needed more than one
    graph keeps a note as its reason: the graph count and the first recompile's guard (e.g.
    sliding-window caches specialise on the cache length, so every decode step recompiles under
    transformers' ``dynamic=False`` config for neuron).
``train``
    One training step: ``loss = model(input_ids, labels=input_ids).loss``, ``backward``, one
    ``torch.optim.SGD`` step; loss within ``atol`` relative to max(1, |loss|) of the CPU loss and
    every gradient within ``atol`` × max(1, max |g_cpu|).

Each check's result is a :class:`Outcome` whose :data:`Status` is ``"pass"``, ``"fail"`` (neuron
differs or raises), ``"cpu-fail"`` (the CPU reference itself raises: not counted against the
device) or ``"skip"``.

A new check is a name in :data:`Check` / :data:`CHECKS` with its label in :data:`CHECK_LABELS`,
and a ``run(name, reference, candidate, compare)`` call in :func:`check_architecture`; the
report and the command pick it up from :data:`CHECKS`.
"""
from __future__ import annotations

import copy
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypedDict, get_args

#: A check's result: passes on ``neuron``, fails there, fails on the CPU itself, or not run.
Status = Literal["pass", "fail", "cpu-fail", "skip"]
PASS: Final = "pass"
FAIL: Final = "fail"
CPU_FAIL: Final = "cpu-fail"
SKIP: Final = "skip"
STATUSES: tuple[Status, ...] = get_args(Status)

#: Every check of every family, in the order they run and are reported: ``generate`` (eager greedy
#: generate) or ``forward`` (eager forward outputs), then ``compiled``, then ``train``.
Check = Literal["generate", "forward", "compiled", "train"]
ALL_CHECKS: tuple[Check, ...] = get_args(Check)
#: The checks of one causal-LM architecture (this module), in the order they run and are reported.
CHECKS: tuple[Check, ...] = ("generate", "compiled", "train")
#: How the summary line and the table name each check (a family may name ``compiled`` its own way).
CHECK_LABELS: dict[Check, str] = {
    "generate": "generate", "forward": "forward", "compiled": "compiled static-cache generate",
    "train": "train step",
}


class OutcomeDict(TypedDict):
    """:class:`Outcome` as JSON (the worker protocol)."""

    status: Status
    reason: str
    max_diff: float | None


class ReportDict(TypedDict):
    """:class:`Report` as JSON (the worker protocol)."""

    model_type: str
    model_class: str
    params: int
    outcomes: dict[str, OutcomeDict]
    seconds: float


@dataclass
class Outcome:
    """One check's result.

    Attributes:
        status: a :data:`Status`.
        reason: one line: the error (fail, cpu-fail), why it was skipped, or a note on a pass
            (e.g. its recompiles); empty on a plain pass.
        max_diff: largest logits difference (absolute) or gradient difference (relative to
            max(1, max |g_cpu|)) seen, or None when nothing was compared.

    Raises:
        ValueError: for a status that is not a :data:`Status`.
    """

    status: Status
    reason: str = ""
    max_diff: float | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Outcome status must be one of {STATUSES}, got {self.status!r}")


def judged_against_cpu_inductor(outcome: Outcome, same: Outcome) -> Outcome:
    """The verdict of a compiled check that failed against CPU eager (``outcome``), given ``same``:
    the device's result compared with CPU Inductor's. Equal: listed apart as Inductor's own difference
    (``CPU_FAIL``, both distances in the reason); otherwise the original failure stands."""
    if same.status != PASS:
        return outcome
    return Outcome(CPU_FAIL, f"CPU Inductor (torch.compile on the CPU) gives the same result: {outcome.reason} "
                             f"against CPU eager, and the device equals CPU Inductor within {same.max_diff:.1e}",
                   outcome.max_diff)


@dataclass
class Report:
    """All checks of one architecture.

    Attributes:
        model_type: the transformers ``model_type`` (e.g. ``"llama"``).
        model_class: the model class checked (e.g. ``"LlamaForCausalLM"``); empty if it could not
            be built.
        params: parameters of the tiny model.
        outcomes: one :class:`Outcome` per check name of :data:`CHECKS`.
        seconds: wall time of the whole row (s).
    """

    model_type: str
    model_class: str = ""
    params: int = 0
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> ReportDict:
        """The report as JSON-serialisable data (:meth:`from_dict` reads it back)."""
        return ReportDict(model_type=self.model_type, model_class=self.model_class, params=self.params,
                          outcomes={k: OutcomeDict(status=v.status, reason=v.reason, max_diff=v.max_diff)
                                    for k, v in self.outcomes.items()},
                          seconds=self.seconds)

    @classmethod
    def from_dict(cls, d: ReportDict) -> Report:
        """The report :meth:`to_dict` wrote."""
        return cls(model_type=d["model_type"], model_class=d.get("model_class", ""), params=d.get("params", 0),
                   outcomes={k: Outcome(**v) for k, v in d.get("outcomes", {}).items()},
                   seconds=d.get("seconds", 0.0))


def error_reason(err: BaseException) -> str:
    """One line naming the error and where in the library it was raised."""
    msg = " ".join(str(err).split())[:220]
    frames = traceback.extract_tb(err.__traceback__)
    where = ""
    for frame in reversed(frames):
        if "/torch_neuronx/model_coverage/" not in frame.filename:
            where = f" [{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}]"
            break
    return f"{type(err).__name__}: {msg}{where}"


def _generation_config(model, new_tokens: int):
    from transformers import GenerationConfig

    pad = getattr(model.config, "pad_token_id", None)
    return GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, num_beams=1,
                            output_logits=True, return_dict_in_generate=True,
                            pad_token_id=pad if isinstance(pad, int) else 0)


def _generate(model, input_ids, new_tokens: int, **kwargs):
    """(tokens [1, prompt+new] int64 on CPU, logits [new, vocab] float32 on CPU)."""
    import torch

    device = next(model.parameters()).device
    ids = input_ids.to(device)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=_generation_config(
        model, new_tokens), **kwargs)
    logits = torch.stack([step[0].float().cpu() for step in out.logits])
    return out.sequences.cpu(), logits


def compare_generation(ref: tuple[Any, Any], got: tuple[Any, Any], atol: float) -> Outcome:
    """Compares ``(tokens, logits)`` of a generate run with the CPU's: tokens equal, the same non-finite
    logits, finite logits within ``atol`` (absolute)."""
    import torch

    (ref_tokens, ref_logits), (tokens, logits) = ref, got
    finite = torch.isfinite(ref_logits) & torch.isfinite(logits)
    diff = float((ref_logits - logits).abs()[finite].max()) if finite.any() else 0.0
    if not torch.equal(torch.isfinite(ref_logits), torch.isfinite(logits)):
        return Outcome(FAIL, "non-finite logits differ from the CPU's", diff)
    if not torch.equal(ref_tokens, tokens):
        first = int((ref_tokens != tokens).nonzero()[0, 1]) if ref_tokens.shape == tokens.shape else -1
        return Outcome(FAIL, f"tokens differ from the CPU's at position {first} (logits max diff {diff:.2e})", diff)
    if diff > atol:
        return Outcome(FAIL, f"logits differ from the CPU's by {diff:.2e} > {atol:g}", diff)
    return Outcome(PASS, "", diff)


def parameter_grads(model: Any) -> dict[str, Any]:
    """``{parameter name: its gradient as a float32 CPU tensor}`` for every parameter with a gradient."""
    return {n: p.grad.detach().float().cpu() for n, p in model.named_parameters() if p.grad is not None}


def replicas(cpu_model: Any, rebuild: Callable[[], Any] | None = None) -> Callable[[str], Any]:
    """A factory of copies of ``cpu_model``: ``fresh(device)`` is a deep copy holding the weights
    ``cpu_model`` had when ``replicas`` was called (a check that trained or changed the model leaves
    them untouched), moved to ``device`` and in eval mode. A model that cannot be deep-copied (the
    legacy ``torch.nn.utils.weight_norm`` keeps a computed, non-leaf ``weight``) is built again by
    ``rebuild()`` when given, then given the same weights.

    Raises:
        RuntimeError: (from ``fresh``) the deep copy failed and there is no ``rebuild``.
    """
    pristine = copy.deepcopy(cpu_model.state_dict())

    def fresh(device: str) -> Any:
        try:
            model = copy.deepcopy(cpu_model)
        except RuntimeError:
            if rebuild is None:
                raise
            model = rebuild()
        model.load_state_dict(pristine)
        # (transformers types PreTrainedModel.to through functools.wraps, which loses the method's self.)
        return model.to(device).eval()

    return fresh


def _train_step(model, input_ids):
    """(loss float, {name: grad on CPU}) after one SGD step of ``model`` in train mode."""
    import torch

    device = next(model.parameters()).device
    model.train()
    ids = input_ids.to(device)
    loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss
    loss.backward()
    grads = parameter_grads(model)
    torch.optim.SGD(model.parameters(), lr=1e-2).step()
    return float(loss.detach().cpu()), grads


def compare_train(ref: tuple[float, dict[str, Any]], got: tuple[float, dict[str, Any]], atol: float) -> Outcome:
    """Compares ``(loss, {name: grad})`` of a training step with the CPU's: loss within ``atol`` × max(1, |loss|),
    the same gradients present, each within ``atol`` × max(1, max |g_cpu|)."""
    (ref_loss, ref_grads), (loss, grads) = ref, got
    if abs(ref_loss - loss) > atol * max(1.0, abs(ref_loss)):
        return Outcome(FAIL, f"loss {loss:.6g} vs CPU {ref_loss:.6g}", abs(ref_loss - loss))
    if set(ref_grads) != set(grads):
        missing = sorted(set(ref_grads) ^ set(grads))[:3]
        return Outcome(FAIL, f"gradients present on one device only: {missing}")
    worst, worst_name = 0.0, ""
    for name, g in ref_grads.items():
        scale = max(1.0, float(g.abs().max())) if g.numel() else 1.0
        d = float((g - grads[name]).abs().max()) / scale if g.numel() else 0.0
        if d != d:  # NaN
            return Outcome(FAIL, f"gradient of {name} is NaN on one device")
        if d > worst:
            worst, worst_name = d, name
    if worst > atol:
        return Outcome(FAIL, f"gradient of {worst_name} differs by {worst:.2e} (relative) > {atol:g}", worst)
    return Outcome(PASS, "", worst)


def run_check(report: Report, name: Check, requested: tuple[Check, ...], reference: Callable[[], Any],
              candidate: Callable[[], Any], compare: Callable[[Any, Any, float], Outcome], atol: float) -> None:
    """Runs one check into ``report.outcomes[name]``: "skip" when ``name`` is not in ``requested``;
    ``reference()`` on the CPU ("cpu-fail" if it raises); ``candidate()`` on the device ("fail" if it
    raises); then ``compare(ref, got, atol)`` — unless ``candidate`` returned an :class:`Outcome`
    itself (e.g. a skip it decided)."""
    if name not in requested:
        report.outcomes[name] = Outcome(SKIP, "not requested")
        return
    try:
        ref = reference()
    except Exception as err:  # noqa: BLE001 - reported, not raised
        report.outcomes[name] = Outcome(CPU_FAIL, error_reason(err))
        return
    try:
        got = candidate()
    except Exception as err:  # noqa: BLE001
        report.outcomes[name] = Outcome(FAIL, error_reason(err))
        return
    report.outcomes[name] = got if isinstance(got, Outcome) else compare(ref, got, atol)


def validate_options(**options: Any) -> None:
    """Raises ValueError for keyword arguments :func:`check_architecture` does not take or would
    reject (sizes < 1, a negative ``atol``, unknown checks) — the caller's mistakes, which must not
    be reported as a model's failure."""
    import inspect

    accepted = set(inspect.signature(check_architecture).parameters) - {"model_type", "device"}
    wrong = sorted(set(options) - accepted)
    if wrong:
        raise ValueError(f"unknown options {wrong}; check_architecture takes {sorted(accepted)}")
    for key in ("new_tokens", "compiled_tokens", "prompt_len"):
        if key in options and not (isinstance(options[key], int) and options[key] >= 1):
            raise ValueError(f"{key} must be an integer ≥ 1, got {options[key]!r}")
    if "atol" in options and not options["atol"] >= 0:
        raise ValueError(f"atol must be ≥ 0, got {options['atol']!r}")
    unknown = [c for c in options.get("checks", ()) if c not in CHECKS]
    if unknown:
        raise ValueError(f"unknown checks {unknown}; choose from {CHECKS}")


def check_architecture(model_type: str, *, device: str = "neuron", new_tokens: int = 8, prompt_len: int = 8,
                       atol: float = 1e-3, checks: tuple[Check, ...] = CHECKS, seed: int = 0,
                       compiled_tokens: int = 3) -> Report:
    """Runs the checks of one architecture (module docstring) and returns its :class:`Report`.

    Args:
        model_type: a key of ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``, e.g. ``"llama"``.
        device: the device under test, e.g. ``"neuron"`` or ``"neuron:1"``.
        new_tokens: tokens generated per eager run; prompt_len: prompt tokens (ids drawn from [3, vocab)).
        compiled_tokens: tokens of the static-cache runs (default 3: the prefill, then two decode steps —
            the first compiles, the second must reuse its graph; models whose cache changes a Python
            value per step (transformers' sliding-window static cache under its ``dynamic=False`` config
            for neuron, which CPU Inductor recompiles the same way) and models without a KV cache
            recompile at every step, so each token more is a compile more).
        atol: tolerance on logits (absolute) and on loss / gradients (relative to max(1, |ref|)).
        checks: the subset of :data:`CHECKS` to run (others are reported "skip").
        seed: seeds the weights and the prompt.

    Raises:
        ValueError: a size < 1, a negative ``atol`` or an unknown check (the caller's mistake).
        Never for a model's failure: each failure is an :class:`Outcome` with its reason.
    """
    import torch

    validate_options(new_tokens=new_tokens, compiled_tokens=compiled_tokens, prompt_len=prompt_len, atol=atol,
                     checks=checks)
    start = time.perf_counter()
    report = Report(model_type)
    try:
        from .tiny import tiny_model

        cpu_model = tiny_model(model_type, seed=seed)
        report.model_class = type(cpu_model).__name__
        report.params = sum(p.numel() for p in cpu_model.parameters())
    except Exception as err:  # noqa: BLE001 - reported, not raised
        reason = f"building the tiny model: {error_reason(err)}"
        report.outcomes = {c: Outcome(CPU_FAIL, reason) for c in CHECKS}
        report.seconds = time.perf_counter() - start
        return report

    vocab = getattr(cpu_model.config, "vocab_size", None)
    vocab = vocab if isinstance(vocab, int) and vocab > 4 else 256
    gen = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(3, max(4, min(vocab, 256)), (1, prompt_len), generator=gen)
    pristine = copy.deepcopy(cpu_model.state_dict())

    def on_device():
        model = copy.deepcopy(cpu_model)
        model.load_state_dict(pristine)
        # (transformers types PreTrainedModel.to through functools.wraps, which loses the method's self.)
        return model.to(device)  # type: ignore[arg-type]

    def run(name: Check, reference, candidate, compare):
        run_check(report, name, checks, reference, candidate, compare, atol)

    run("generate",
        lambda: _generate(cpu_model, input_ids, new_tokens),
        lambda: _generate(on_device().eval(), input_ids, new_tokens),
        compare_generation)

    def compiled_reference():
        cpu_model.load_state_dict(pristine)
        return _generate(cpu_model, input_ids, compiled_tokens, cache_implementation="static", disable_compile=True)

    recompile_note = ""

    def compiled_candidate():
        from ..compile import get_dynamo_metrics

        model = on_device().eval()
        before = get_dynamo_metrics()
        try:
            got = _generate(model, input_ids, compiled_tokens, cache_implementation="static")
        finally:
            torch._dynamo.reset()
        after = get_dynamo_metrics()
        graphs = after["graphs"] - before["graphs"]
        if graphs == 0:
            return Outcome(SKIP, "transformers ran the static cache eagerly (it does not compile this model)")
        recompiles = after["recompiles"][len(before["recompiles"]):]
        if recompiles:
            nonlocal recompile_note
            recompile_note = (f"{graphs} graphs for {compiled_tokens - 1} decode steps; first recompile guard: "
                              f"{' '.join(recompiles[0]['guard'].split())[:160]}")
        return got

    run("compiled", compiled_reference, compiled_candidate, compare_generation)
    if recompile_note and report.outcomes["compiled"].status == PASS:
        report.outcomes["compiled"].reason = recompile_note  # a pass that recompiled: worth knowing

    def train_reference():
        model = copy.deepcopy(cpu_model)
        model.load_state_dict(pristine)
        return _train_step(model, input_ids)

    run("train", train_reference, lambda: _train_step(on_device(), input_ids), compare_train)
    report.seconds = time.perf_counter() - start
    return report
