"""A tiny Llama run for real on ``neuron``: the estimate's FLOPs equal ``torch.utils.flop_counter``'s and its
peak HBM equals the device's measured ``torch.neuron.max_memory_allocated()``."""
import json

import jsonschema
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoModelForCausalLM, LlamaConfig

import torch_neuronx
from torch_neuronx.estimate.trace import TRACE_SCHEMA

CFG = dict(hidden_size=128, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
           vocab_size=512, tie_word_embeddings=False)


@pytest.fixture(scope="module")
def tiny():
    cfg = LlamaConfig(**CFG)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg).to("neuron")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 512, (2, 128), device="neuron")

    def step():
        with torch.autocast("neuron", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()

    step()                              # optimizer state exists, as in any step after the first
    return model, opt, step


def test_flops_equal_flop_counter_and_peak_equals_max_memory_allocated(tiny, tmp_path):
    model, opt, step = tiny
    counter = FlopCounterMode(display=False)
    with counter:
        step()
    torch.neuron.synchronize()
    torch.neuron.reset_peak_memory_stats()
    trace = tmp_path / "step.json"
    with torch_neuronx.estimate(platform="trn2", modules=[model], optimizers=[opt], trace=str(trace)) as est:
        step()
    measured = torch.neuron.max_memory_allocated()
    r = est.report
    # the device's fused attention counts (its formula is registered), so both are right, not just equal
    attention = "aten._scaled_dot_product_fused_attention_overrideable"
    assert any(attention in str(k) for k in counter.get_flop_counts()["Global"])
    assert r.flops == pytest.approx(counter.get_total_flops(), rel=0.01)
    assert r.peak_hbm_bytes_per_core == pytest.approx(measured, rel=0.05)
    assert {"parameters", "optimizer_state"} <= set(r.memory_by_category)
    assert not r.uncosted_ops and r.mode == "eager"
    # eager vs compiled: compiling removes the per-op launches and fuses the elementwise traffic
    assert r.compiled_step_time_s < r.eager_step_time_s
    assert r._schedules["compiled"].hbm_bytes < r._schedules["eager"].hbm_bytes
    assert r.first_run_compiles["eager_op_signatures"] > 20
    # the chrome trace written on exit is valid and has one track per engine
    data = json.loads(trace.read_text())
    jsonschema.validate(data, TRACE_SCHEMA)
    threads = {e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"TensorE", "VectorE", "ScalarE", "GpSimdE", "DMA/HBM", "launch/host"} <= threads
    assert any(e["ph"] == "X" and e["tid"] == 2 and e["dur"] > 0 for e in data["traceEvents"])  # TensorE busy
    assert any(e["ph"] == "C" for e in data["traceEvents"])                                   # HBM in use
    assert "ESTIMATE" in r.summary().splitlines()[0]


def test_summary_names_every_heading_as_an_estimate(tiny):
    model, opt, step = tiny
    with torch_neuronx.estimate(platform="trn1", instance="trn1.2xlarge", modules=[model]) as est:
        step()
    text = est.report.summary()
    for heading in ("step time (estimate)", "MFU (estimate)", "HBM traffic (estimate)", "peak HBM per core (estimate)",
                    "cost (estimate)"):
        assert heading in text
    assert est.report.usd_per_hour == 1.34                       # AWS's on-demand trn1.2xlarge price
    assert est.report.to_dict()["usd_per_hour"] == 1.34


def test_estimates_do_not_nest():
    with torch_neuronx.estimate():
        with pytest.raises(RuntimeError, match="already active"):
            with torch_neuronx.estimate():
                pass


@pytest.mark.parametrize("kwargs,error,message", [
    ({"lnc": 2.5}, TypeError, "lnc=2.5: must be a whole number"),                   # was: truncated to LNC=2
    ({"instances": 2.5}, TypeError, "instances=2.5: must be a whole number"),       # was: 2.5 instances priced
    ({"tokens_per_step": -5}, ValueError, "tokens_per_step=-5: must be at least 1"),  # was: negative tokens/s
    ({"tokens_per_step": 0}, ValueError, "tokens_per_step=0: must be at least 1"),  # was: tokens/s silently None
    ({"price_per_hour": float("nan")}, ValueError, "finite number >= 0"),           # was: $nan per step
    ({"price_per_hour": "3.5"}, TypeError, "a number of USD per instance-hour"),
    ({"compiled": "no"}, TypeError, "compiled='no'"),                               # was: truthy, so compiled
    ({"modules": "model"}, TypeError, "not its name"),
    ({"constants": {"eta_tensor": 0.5}}, TypeError, "is not a ModelConstants"),
    ({"trace": "/nonexistent-folder/step.json"}, ValueError, "does not exist or cannot be written"),
])
def test_bad_arguments_are_refused_before_the_program_runs(kwargs, error, message):
    ran = []
    with pytest.raises(error, match=message.replace("(", r"\(").replace("$", r"\$")):
        with torch_neuronx.estimate(**kwargs):
            ran.append(True)
    assert ran == []


def test_whole_numbers_of_any_integer_type_are_accepted(tmp_path):
    import numpy as np

    x = torch.randn(64, 64, device="neuron")
    with torch_neuronx.estimate(platform="trn1", instance="trn1.2xlarge", lnc=np.int64(1), instances=np.int32(2),
                                tokens_per_step=64, trace=str(tmp_path / "t.json")) as est:
        x @ x
    assert est.lnc == 1 and est.report.usd_per_hour == pytest.approx(2 * 1.34)
    assert est.report.tokens_per_s == pytest.approx(64 / est.report.step_time_s)
    assert (tmp_path / "t.json").exists()
