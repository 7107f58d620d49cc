"""Shape-only estimates: fake tensors and the fake process group, with no weight allocated."""
import pytest
import torch
from transformers import LlamaConfig

import torch_neuronx
from torch_neuronx.estimate import shape_only
from torch_neuronx.estimate.dtensor_propagation import PropagationMarker

H, FF, L, HEADS, KV, V = 64, 128, 2, 4, 2, 256
D = H // HEADS


def config(**kw):
    values = dict(hidden_size=H, intermediate_size=FF, num_hidden_layers=L, num_attention_heads=HEADS,
                  num_key_value_heads=KV, vocab_size=V, tie_word_embeddings=False, max_position_embeddings=512)
    values.update(kw)
    return LlamaConfig(**values)


def hand_count() -> int:
    layer = H * H + 2 * H * KV * D + H * H + 3 * H * FF + 2 * H      # q, k, v, o, gate/up/down, two norms
    return V * H + L * layer + H + H * V                               # embedding, layers, final norm, lm_head


def test_model_with_a_known_parameter_count_allocates_nothing():
    before = torch.neuron.memory_allocated()
    with shape_only() as so:
        model = so.causal_lm(config(), dtype=torch.bfloat16)
        params = list(model.parameters())
        assert sum(p.numel() for p in params) == hand_count()
        assert all(p.device.type == "neuron" and p.dtype == torch.bfloat16 for p in params)
        assert all(type(p).__name__ == "FakeTensor" or type(p.data).__name__ == "FakeTensor" for p in params)
        buffers = sum(b.untyped_storage().nbytes() for b in model.buffers())       # rotary frequencies
        with torch_neuronx.estimate(platform="trn2", modules=[model]) as est:
            with torch.no_grad():
                model(input_ids=so.tokens(2, 16, V), use_cache=False)
    assert torch.neuron.memory_allocated() == before
    r = est.report
    assert r.memory_by_category["parameters"] == 2 * hand_count() + buffers      # counted with the parameters
    assert r.peak_hbm_bytes_per_core > 2 * hand_count() and r.fits
    # forward FLOPs of the linear layers: 2 x tokens x weights (attention is counted on top)
    linear = L * (H * H + 2 * H * KV * D + H * H + 3 * H * FF) + H * V
    attention = L * 2 * (2 * 2 * HEADS * 16 * 16 * D)
    assert r.flops == 2 * 32 * linear + attention


def test_tensor_parallel_shards_are_per_rank_and_propagation_is_not_recorded():
    with shape_only(world_size=4) as so:
        model = so.causal_lm(config(num_key_value_heads=4), dtype=torch.bfloat16, tp=4)
        q = model.model.layers[0].self_attn.q_proj.weight
        down = model.model.layers[0].mlp.down_proj.weight
        assert tuple(q.to_local().shape) == (H // 4, H) and tuple(down.to_local().shape) == (H, FF // 4)
        with torch_neuronx.estimate(platform="trn2", instance="trn2.48xlarge") as est:
            with torch.no_grad():
                model(input_ids=so.tokens(1, 16, V), use_cache=False, logits_to_keep=1)
    events = [ev for seg in est.segments for ev in seg.events]
    mm = [ev for ev in events if ev.name == "aten.mm.default"]
    # every matmul is a rank's local shard: DTensor's global-shape sharding propagation is not recorded
    assert mm and all(ev.cost.flops <= 2 * 16 * H * max(FF, V) // 4 for ev in mm)
    linear = L * (H * H + 2 * H * H + H * H + 3 * H * FF) // 4
    assert est.report.flops == 2 * 16 * linear + 2 * 1 * H * V // 4 + L * 2 * 2 * (HEADS // 4) * 16 * 16 * D
    kinds = {(c.kind, c.group_size) for c in est.report.collectives}
    assert ("all_reduce", 4) in kinds                                   # row-parallel outputs
    # the marker is removed with the estimate
    from torch.distributed.tensor._sharding_prop import ShardingPropagator
    assert not isinstance(ShardingPropagator._fake_mode_lock, PropagationMarker)


def test_tp_that_does_not_divide_the_heads_is_refused_with_the_divisors():
    from torch_neuronx.distributed.tp_degree import TensorParallelDegreeError

    with shape_only(world_size=3) as so:
        with pytest.raises(TensorParallelDegreeError, match="tp_size=3 does not divide num_attention_heads=4"):
            so.causal_lm(config(), tp=3)


def test_world_size_and_degrees_must_agree():
    with shape_only(world_size=2) as so:
        with pytest.raises(ValueError, match="tp 4 x fsdp 1 = 4 ranks, but the shape-only world has 2"):
            so.causal_lm(config(num_key_value_heads=4), tp=4)


def test_tp_x_fsdp_training_step():
    # 2 x 2 = 4 ranks: FSDP2 all-gathers and reduce-scatters over 2 ranks, tensor parallel all-reduces over 2
    with shape_only(world_size=4) as so:
        model = so.causal_lm(config(), dtype=torch.float32, tp=2, fsdp=2, task="train")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
        ids = so.tokens(1, 32, V)
        with torch_neuronx.estimate(platform="trn2", modules=[model], optimizers=[opt]) as est:
            from torch.distributed.tensor.parallel import loss_parallel

            with loss_parallel():
                model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
    r = est.report
    kinds = {(c.kind, c.group_size) for c in r.collectives}
    assert {("all_gather", 2), ("reduce_scatter", 2)} <= kinds
    # AdamW keeps two fp32 moments per local (TP x FSDP sharded) parameter element
    local = sum(p.to_local().numel() * 4 for p in model.parameters())
    assert local < hand_count() * 4 / 2                                  # sharded: well under half the model
    assert est.memory.by_category[0]["optimizer_state"] == 2 * local
    assert r.peak_hbm_bytes_per_core >= 3 * local and not r.uncosted_ops
