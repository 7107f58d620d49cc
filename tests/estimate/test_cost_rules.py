"""Ops without a cost rule are reported, never silently costed at zero; host work is counted apart."""
import pytest
import torch

import torch_neuronx


@torch.library.custom_op("estimate_test::mystery", mutates_args=())
def mystery(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@mystery.register_fake
def _(x):
    return torch.empty_like(x)


def test_an_op_without_a_rule_is_reported_in_the_report_and_summary():
    x = torch.ones(64, 64, device="neuron")
    with torch_neuronx.estimate(platform="trn2") as est:
        y = mystery(x)
        y = mystery(y)
        z = y + 1
    r = est.report
    assert r.uncosted_ops == {"estimate_test.mystery.default": 2}
    assert "NOT COSTED: 1 op kind(s) have no cost rule; their time is not included: " \
           "estimate_test.mystery.default x2" in r.summary()
    assert r.to_dict()["uncosted_ops"] == {"estimate_test.mystery.default": 2}
    assert r.time_by_op_class_s.get("elementwise", 0) > 0          # the add is costed
    assert float(z[0, 0]) == 5.0                                    # and the program's results are untouched


@pytest.mark.filterwarnings("ignore:neuron. float64")
def test_fp64_work_is_a_host_fallback_and_item_a_host_sync():
    x = torch.ones(8, device="neuron")
    with torch_neuronx.estimate(platform="trn2") as est:
        d = x.double().sum()                         # the cast reads fp32 and writes fp64: both are fp64 ops
        x.sum().item()
    r = est.report
    assert set(r.host_fallback_ops) == {"aten._to_copy.default", "aten.sum.default"}
    assert r.host_syncs == 1
    assert "host fallbacks (fp64/complex" in r.summary() and "host syncs: 1" in r.summary()
    assert float(d) == 8.0
