"""The estimator's fitted constants and its labelled assumptions.

Everything else the estimator uses is a hardware number of the platform table
(``torch_neuronx/runtime/platforms.py``), each with its AWS source. What the table cannot give is here:

* **Three fitted constants**, each fitted on exactly one named published measurement (``bench/estimate.py
  --fit`` re-derives them; ``bench/RESULTS.md`` lists the measurements declared for fitting and the
  out-of-sample set they are scored on):

  - ``eta_tensor``: the sustained fraction of the Tensor Engine's peak that compiled matmuls reach;
  - ``eta_hbm``: the sustained fraction of HBM bandwidth that streamed weights and activations reach;
  - ``alpha_cc_s``: seconds per step of a collective algorithm inside an instance (AWS publishes "about
    1-2 us" per Ring/KangaRing hop, ``InterconnectSpec.intra_node_hop_latency_s``: the prior the fit is
    compared with).

* **Labelled assumptions**, numbers no public source gives: the launch overhead of one eager op (AWS
  publishes none for TorchNeuron's eager mode), and the collective algorithm choice.

The NKI simulator's DMA efficiency (``DmaSpec.efficiency``) is not one of these: it belongs to the NKI
kernel cost model, fitted separately on AWS's NKI matmul tutorial; NKI kernels under the estimator are
costed by that model.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["FittedConstant", "Assumption", "ModelConstants", "FITTED", "ASSUMPTIONS", "default_constants"]


@dataclass(frozen=True)
class FittedConstant:
    """One fitted constant.

    Attributes:
        name: the field of :class:`ModelConstants` it sets.
        value: the fitted value (unit in ``unit``).
        unit: ``"fraction"`` or ``"s"``.
        meaning: what it scales.
        fitted_on: id of the one measurement it was fitted on (``bench/estimate_measurements.json``).
        published: that measurement's published value, as published.
    """

    name: str
    value: float
    unit: str
    meaning: str
    fitted_on: str
    published: str


@dataclass(frozen=True)
class Assumption:
    """A number the estimator needs that no public source gives.

    Attributes:
        name: the field of :class:`ModelConstants` it sets (or a name of a modelling choice).
        value: the assumed value (unit in ``unit``), or None for a choice.
        unit: unit of ``value``.
        why: the reasoning, stated in every report.
    """

    name: str
    value: float | None
    unit: str
    why: str


FITTED: tuple[FittedConstant, ...] = (
    FittedConstant(
        "eta_tensor", 0.5156, "fraction",
        "sustained fraction of the Tensor Engine peak (tile-quantised cycles at the published clock) "
        "reached by compiled matmuls and attention",
        "nxd-llama3.1-70b-pretrain-trn1-32nodes", "7.94 seq/s"),
    FittedConstant(
        "eta_hbm", 0.7672, "fraction",
        "sustained fraction of the per-core HBM bandwidth reached by streamed tensors",
        "optimum-qwen3-32b-trn2-tp4-itl", "ITL 32.08 ms"),
    FittedConstant(
        "alpha_cc_s", 1.338e-6, "s",
        "latency of one step of a collective algorithm inside an instance (Ring / KangaRing hop)",
        "nxdi-llama3.3-70b-trn2-tp64-tpot", "TPOT 19.6 ms"),
)

ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption(
        "eager_op_launch_s", 50e-6, "s",
        "launch overhead of one eager op: AWS publishes none for TorchNeuron's eager mode; assumed one order "
        "of magnitude below the 437 us AWS measured between synchronous model invocations on trn2 "
        "(RuntimeSpec.sync_launch_overhead_s), since an eager op needs no Python serving loop"),
    Assumption(
        "collective_algorithm", None, "",
        "inside an instance every collective runs as a Ring (KangaRing, half the hops, when the group holds "
        "every logical core of each chip it spans and a chip has 2 or more); across instances hierarchically: "
        "intra-instance reduce-scatter, inter-instance recursive doubling-halving over EFA at AWS's ~15 us per "
        "hop, intra-instance all-gather. Bandwidth terms are nccom-test's bus-bandwidth factors"),
)


@dataclass(frozen=True)
class ModelConstants:
    """The numbers of the estimator that are not platform facts (see the module docstring).

    Attributes:
        eta_tensor: fraction of the Tensor Engine peak reached (0, 1].
        eta_hbm: fraction of HBM bandwidth reached (0, 1].
        alpha_cc_s: seconds per intra-instance collective step (>= 0).
        eager_op_launch_s: seconds of launch overhead per eager op (>= 0).
    """

    eta_tensor: float
    eta_hbm: float
    alpha_cc_s: float
    eager_op_launch_s: float

    def __post_init__(self):
        for name in ("eta_tensor", "eta_hbm"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise ValueError(f"{name}={v!r}: an efficiency must be in (0, 1]")
        for name in ("alpha_cc_s", "eager_op_launch_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)!r}: a time must be >= 0 seconds")

    def with_values(self, **values: float) -> ModelConstants:
        """A copy with some fields replaced (used to fit and to test)."""
        return replace(self, **values)


def default_constants() -> ModelConstants:
    """The fitted constants and assumed values above, as one :class:`ModelConstants`."""
    values = {c.name: c.value for c in FITTED}
    values.update({a.name: a.value for a in ASSUMPTIONS if a.value is not None})
    return ModelConstants(**values)
