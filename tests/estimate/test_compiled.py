"""Compiled graphs under the estimator: one entry per launch, costed from the graph's ATen ops, their extern
kernels not counted a second time, and the eager-vs-compiled comparison."""
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoModelForCausalLM, LlamaConfig

import torch_neuronx
from torch_neuronx.compile.metrics import get_dynamo_metrics


def tiny():
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=256, tie_word_embeddings=False)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg).to("neuron")


def test_compiled_launches_are_recorded_once_each_with_their_flops(monkeypatch):
    # compiled for real (no compile cache hit): Inductor schedules the graph and its fusion is captured
    monkeypatch.setenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", "1")
    model = tiny()
    ids = torch.randint(0, 256, (2, 32), device="neuron")
    with torch.no_grad():
        expected = model(input_ids=ids).logits
        counter = FlopCounterMode(display=False)
        with counter:
            model(input_ids=ids)
    compiled = torch.compile(model, backend="neuron")
    graphs_before = get_dynamo_metrics()["graphs"]
    with torch_neuronx.estimate(platform="trn2", modules=[model]) as est:     # compiles inside the estimate
        with torch.no_grad():
            got = compiled(input_ids=ids).logits
            compiled(input_ids=ids)
    assert get_dynamo_metrics()["graphs"] > graphs_before                       # it really compiled
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    events = [ev for seg in est.segments for ev in seg.events]
    launches = [ev for ev in events if ev.graph is not None]
    assert len(launches) == 2 and launches[0].graph == launches[1].graph      # one entry per launch
    # the graph's matmuls run inside it: none is recorded again as an eager op
    assert not [ev for ev in events if ev.graph is None and ev.cost.op_class in ("matmul", "attention")]
    r = est.report
    assert r.mode == "compiled" and r.first_run_compiles["graphs"] == 1
    assert r.flops == 2 * counter.get_total_flops()                            # same FLOPs as the eager model
    assert r.compiled_step_time_s < r.eager_step_time_s
    # compiled inside the estimate: the kernels are what Inductor's scheduler fused
    assert launches[0].graph.source == "inductor"
    assert launches[0].graph.fused_ops > 0 and len(launches[0].graph.kernels) < len(launches[0].graph.eager)
    assert not r.uncosted_ops


    # the same graph, compiled before this second estimate, is recorded too (costed for its platform)
    graphs = get_dynamo_metrics()["graphs"]
    with torch.no_grad():
        with torch_neuronx.estimate(platform="trn1") as est:
            compiled(input_ids=ids)
    assert get_dynamo_metrics()["graphs"] == graphs
    launches = [ev for seg in est.segments for ev in seg.events if ev.graph is not None]
    assert len(launches) == 1 and est.report.flops == counter.get_total_flops()
    assert est.report.compiled_step_time_s > r.compiled_step_time_s / 2        # trn1 is no faster than trn2


def test_a_graph_compiled_outside_any_estimate_uses_the_fusion_model():
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)).to("neuron")
    compiled = torch.compile(mlp, backend="neuron")
    x = torch.randn(32, 64, device="neuron")
    with torch.no_grad():
        compiled(x)
        with torch_neuronx.estimate(platform="trn2") as est:
            y = compiled(x)
            compiled(x)
        torch.testing.assert_close(y, mlp(x))
    launches = [ev for seg in est.segments for ev in seg.events if ev.graph is not None]
    assert len(launches) == 2 and launches[0].graph.source == "fusion model"
    assert est.report.flops == 2 * 2 * 32 * (64 * 256 + 256 * 64)
    # the GELU and bias adds are fused: fewer kernels than ops, less HBM traffic than op by op
    g = launches[0].graph
    assert len(g.kernels) < len(g.eager) and sum(k[1] for k in g.kernels) < sum(e[1] for e in g.eager)
