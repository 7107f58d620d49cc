"""The neuron generator: seeding, (seed, offset) state, explicit generators, checkpointing."""
import pytest
import torch
from torch.utils.checkpoint import checkpoint


def test_manual_seed_reproduces():
    torch.manual_seed(123)
    a = torch.randn(100, device="neuron")
    b = torch.rand(100, device="neuron")
    torch.manual_seed(123)
    assert torch.equal(a.cpu(), torch.randn(100, device="neuron").cpu())
    assert torch.equal(b.cpu(), torch.rand(100, device="neuron").cpu())
    assert not torch.equal(a.cpu(), torch.randn(100, device="neuron").cpu())


def test_state_is_seed_and_offset():
    torch.neuron.manual_seed(7)
    state = torch.neuron.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    assert state[:8].view(torch.int64).item() == 7 and state[8:].view(torch.int64).item() == 0
    torch.randn(10, device="neuron")
    after = torch.neuron.get_rng_state()
    assert after[8:].view(torch.int64).item() == 12  # 10 values, rounded up to 4
    torch.neuron.set_rng_state(state)
    x = torch.randn(10, device="neuron")
    torch.neuron.set_rng_state(state)
    assert torch.equal(x.cpu(), torch.randn(10, device="neuron").cpu())
    assert torch.neuron.initial_seed() == 7
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.neuron.set_rng_state(torch.zeros(5, dtype=torch.uint8))


def test_offset_rewrite_changes_stream_deterministically():
    # DTensor's OffsetBasedRNGTracker rewrites bytes 8..16 per shard.
    torch.neuron.manual_seed(0)
    s = torch.neuron.get_rng_state()
    s[8:] = torch.tensor([64], dtype=torch.int64).view(torch.uint8)
    torch.neuron.set_rng_state(s)
    a = torch.rand(8, device="neuron")
    torch.neuron.set_rng_state(s)
    b = torch.rand(8, device="neuron")
    torch.neuron.manual_seed(0)
    c = torch.rand(8, device="neuron")
    assert torch.equal(a.cpu(), b.cpu()) and not torch.equal(a.cpu(), c.cpu())


def test_explicit_generator_and_per_device_defaults():
    g = torch.Generator(device="neuron")
    g.manual_seed(5)
    a = torch.randn(6, device="neuron", generator=g)
    g.manual_seed(5)
    assert torch.equal(a.cpu(), torch.randn(6, device="neuron", generator=g).cpu())
    assert g.device == torch.device("neuron:0")
    with pytest.raises(RuntimeError, match="generator"):
        torch.randn(3, generator=g)  # CPU tensor, neuron generator
    torch.neuron.manual_seed_all(9)
    states = torch.neuron.get_rng_state_all()
    assert len(states) == 4 and all(s[:8].view(torch.int64).item() == 9 for s in states)


def test_random_ops_and_distribution_sanity():
    torch.manual_seed(0)
    x = torch.randn(200_000, device="neuron")
    assert abs(x.mean().item()) < 0.01 and abs(x.std().item() - 1) < 0.01
    m = torch.multinomial(torch.tensor([0.0, 1.0, 0.0], device="neuron"), 5, replacement=True)
    assert m.device.type == "neuron" and m.cpu().tolist() == [1] * 5
    p = torch.randperm(10, device="neuron")
    assert sorted(p.cpu().tolist()) == list(range(10))
    d = torch.nn.functional.dropout(torch.ones(10_000, device="neuron"), 0.25)
    assert abs((d == 0).float().mean().item() - 0.25) < 0.02
    assert set(d.unique().cpu().tolist()) <= {0.0, torch.tensor(1 / 0.75).item()}


def test_dropout_follows_neuron_seed_not_cpu_seed():
    torch.neuron.manual_seed(1)
    a = torch.nn.functional.dropout(torch.ones(64, device="neuron"), 0.5)
    torch.neuron.manual_seed(1)
    torch.random.default_generator.manual_seed(999)  # CPU generator changes; neuron's not
    b = torch.nn.functional.dropout(torch.ones(64, device="neuron"), 0.5)
    assert torch.equal(a.cpu(), b.cpu())


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradient_checkpointing_restores_device_rng(reentrant):
    net = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 1)).to("neuron")
    x = torch.randn(8, 16, device="neuron", requires_grad=True)

    torch.manual_seed(3)
    net(x).sum().backward()
    ref = [p.grad.cpu().clone() for p in net.parameters()]
    net.zero_grad()
    torch.manual_seed(3)
    checkpoint(net, x, use_reentrant=reentrant).sum().backward()
    for p, r in zip(net.parameters(), ref, strict=True):
        assert torch.equal(p.grad.cpu(), r)


def test_default_generators_tuple_like_cuda():
    gens = torch.neuron.default_generators
    assert isinstance(gens, tuple) and len(gens) == torch.neuron.device_count()
    assert all(isinstance(g, torch.Generator) and g.device == torch.device("neuron", i) for i, g in enumerate(gens))
    gens[1].manual_seed(123)
    assert torch.neuron.default_generator(1).initial_seed() == 123


def test_default_device_dataloader_shuffle_names_the_generator_fix():
    from torch.utils.data import DataLoader

    torch.set_default_device("neuron")
    try:
        with pytest.raises(RuntimeError, match=r"generator=torch\.Generator\(device='neuron'\)"):
            list(DataLoader(range(10), batch_size=4, shuffle=True))
        gen = torch.Generator(device="neuron").manual_seed(0)
        batches = [b.tolist() for b in DataLoader(range(10), batch_size=4, shuffle=True, generator=gen)]
    finally:
        torch.set_default_device(None)
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(sum(batches, [])) == list(range(10))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int8])
def test_a_state_of_another_dtype_is_refused_not_converted(dtype):
    # Converting the values (300.0 -> 44) would set a state nobody saved; torch.set_rng_state and
    # Generator.set_state refuse a non-uint8 state too.
    torch.neuron.manual_seed(5)
    before = torch.neuron.get_rng_state()
    with pytest.raises(TypeError, match="torch.uint8"):
        torch.neuron.set_rng_state(torch.full((16,), 44, dtype=dtype))
    with pytest.raises(TypeError, match="torch.uint8"):
        torch.neuron.set_rng_state_all([state.float() for state in torch.neuron.get_rng_state_all()])
    assert torch.equal(torch.neuron.get_rng_state(), before)


def test_a_state_on_the_device_is_restored():
    # A checkpoint loaded with map_location="neuron" holds the uint8 state on the device.
    torch.neuron.manual_seed(9)
    state = torch.neuron.get_rng_state().to("neuron:1")
    x = torch.rand(6, device="neuron")
    torch.neuron.set_rng_state(state)
    assert torch.equal(x.cpu(), torch.rand(6, device="neuron").cpu())
