"""A Llama-architecture model (hidden 256, 4 layers, batch 4 x 128) on neuron vs CPU."""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

CONFIG = dict(vocab_size=2048, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    cpu = LlamaForCausalLM(LlamaConfig(**CONFIG))
    dev = LlamaForCausalLM(LlamaConfig(**CONFIG))
    dev.load_state_dict(cpu.state_dict())
    return cpu, dev.to("neuron")


@pytest.fixture(scope="module")
def batch():
    return torch.randint(0, CONFIG["vocab_size"], (4, 128), generator=torch.Generator().manual_seed(1))


def test_logits_match_cpu(models, batch):
    cpu, dev = models
    with torch.no_grad():
        ref = cpu(batch).logits
        out = dev(batch.to("neuron")).logits
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)


def test_trains_and_matches_cpu_step(models, batch):
    cpu, dev = models
    x = batch.to("neuron")
    before = [p.detach().cpu().clone() for p in dev.parameters()]
    oc = torch.optim.AdamW(cpu.parameters(), lr=1e-3)
    od = torch.optim.AdamW(dev.parameters(), lr=1e-3)
    losses, ref_losses = [], []
    for _ in range(4):
        for m, o, inp, log in ((cpu, oc, batch, ref_losses), (dev, od, x, losses)):
            o.zero_grad()
            loss = m(inp, labels=inp).loss
            loss.backward()
            o.step()
            log.append(loss.item())
    assert losses[-1] < losses[0]
    assert losses == pytest.approx(ref_losses, abs=1e-4)
    changed = sum(not torch.equal(b, p.detach().cpu()) for b, p in zip(before, dev.parameters(), strict=True))
    assert changed == len(before)


def test_bf16_autocast_training_loss_falls(models, batch):
    import copy

    dev = copy.deepcopy(models[1])
    x = batch[:, :64].to("neuron")
    opt = torch.optim.AdamW(dev.parameters(), lr=3e-3)
    losses = []
    for _ in range(6):
        with torch.autocast("neuron", dtype=torch.bfloat16):
            loss = dev(x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.1


def test_greedy_generate_matches_cpu(models):
    cpu, dev = models
    prompt = torch.randint(3, 2048, (2, 12), generator=torch.Generator().manual_seed(2))
    kw = dict(max_new_tokens=10, do_sample=False, pad_token_id=0)
    ref = cpu.generate(prompt, attention_mask=torch.ones_like(prompt), **kw)
    out = dev.generate(prompt.to("neuron"), attention_mask=torch.ones_like(prompt).to("neuron"), **kw)
    assert out.device.type == "neuron" and torch.equal(out.cpu(), ref)


def test_from_pretrained_device_map_neuron(tmp_path, models):
    cpu, _ = models
    cpu.save_pretrained(tmp_path)
    m = LlamaForCausalLM.from_pretrained(tmp_path, device_map="neuron")
    assert m.device.type == "neuron"
    assert all(p.device.type == "neuron" for p in m.parameters())
    x = torch.randint(0, 2048, (1, 16))
    with torch.no_grad():
        torch.testing.assert_close(m(x.to("neuron")).logits.cpu(), cpu(x).logits, rtol=1e-5, atol=1e-5)
