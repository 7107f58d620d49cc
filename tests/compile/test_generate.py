"""transformers' own neuron path: generate(cache_implementation="static") on a neuron model
compiles the decode step through backend "neuron" (CompileConfig(backend="neuron",
dynamic=False), no argument from us) and gives eager CPU's tokens; with max_cache_len fixed,
prompt length adds no graph, a new batch size adds exactly one."""
from __future__ import annotations

import torch

import torch_neuronx.compile as tnc


def _generate(model, ids, **kw):
    return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=5,
                          do_sample=False, cache_implementation="static", max_cache_len=64,
                          pad_token_id=0, **kw)


def test_static_cache_generate_compiles_and_matches_cpu(tiny_llama):
    cpu = tiny_llama()
    dev = tiny_llama()
    dev.load_state_dict(cpu.state_dict())
    dev.to("neuron")
    assert dev._default_compile_config().backend == "neuron"  # transformers' choice

    def both(ids):
        ref = _generate(cpu, ids, disable_compile=True)
        got = _generate(dev, ids.to("neuron"))
        assert got.device.type == "neuron"
        assert torch.equal(got.cpu(), ref), (got.cpu(), ref)

    g = torch.Generator().manual_seed(1)
    both(torch.randint(1, 256, (2, 7), generator=g))
    m = tnc.get_dynamo_metrics()
    assert m["graphs"] == 1  # the decode step (prefill runs eagerly)
    assert m["graphs_compiled"] + m["cache_hits_memory"] + m["cache_hits_disk"] == 1

    for length in (4, 13):  # other prompt lengths: same static cache, no new graph
        both(torch.randint(1, 256, (2, length), generator=g))
    m = tnc.get_dynamo_metrics()
    assert m["graphs"] == 1 and m["recompiles"] == []

    both(torch.randint(1, 256, (3, 7), generator=g))  # a new batch size: exactly one more
    m = tnc.get_dynamo_metrics()
    assert m["graphs"] == 2
    assert m["graphs_compiled"] + m["cache_hits_memory"] + m["cache_hits_disk"] == 2
    changed = {(c["dim"], c["before"], c["after"]) for c in m["recompiles"][0]["changed"]}
    assert (0, 2, 3) in changed
