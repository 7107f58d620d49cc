"""transformers' default asynchronous weight loading (a thread pool materializes the tensors, so host→device
copies to ``neuron`` run from several threads at once) gives bit-identical weights on ``neuron``, with
``HF_DEACTIVATE_ASYNC_LOAD`` unset, for a safetensors checkpoint sharded in 3 files, loaded with
``device_map="neuron"`` and with a per-core ``max_memory`` map that spreads it over several NeuronCores.

The loaded weights (every parameter and buffer) are always bit-identical to the CPU model's. The logits are
bit-identical to CPU with adaptive eager execution off (op by op); with it on
(``TORCH_NEURONX_ADAPTIVE_EAGER=1``) runs of ops may execute as merged Inductor kernels, whose contract is
agreement within 1e-6 absolute + 1e-5 relative (``ADAPTIVE_ATOL``/``ADAPTIVE_RTOL``), not bitwise identity."""
from __future__ import annotations

import gc
import glob
import os
import threading

import pytest
import torch

from torch_neuronx import adaptive

#: Agreement of merged adaptive-eager kernels with op by op (the bound their first run is checked against).
ADAPTIVE_ATOL = 1e-6
ADAPTIVE_RTOL = 1e-5


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> tuple[str, dict[str, torch.Tensor]]:
    """A tiny untied Llama (3.4 MB of fp32 weights) saved in 3 safetensors shards, and its tensors read back
    with ``safetensors`` itself (the reference: no transformers loading involved)."""
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    path = str(tmp_path_factory.mktemp("sharded"))
    config = LlamaConfig(vocab_size=1024, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path, max_shard_size="1500KB")
    shards = sorted(glob.glob(os.path.join(path, "model-*-of-00003.safetensors")))
    assert len(shards) == 3, os.listdir(path)
    reference: dict[str, torch.Tensor] = {}
    for shard in shards:
        reference.update(load_file(shard))
    return path, reference


def _load_watching_threads(path: str, **kwargs) -> tuple[torch.nn.Module, set[str]]:
    """``from_pretrained(path, **kwargs)`` and the names of the threads started meanwhile that ran
    transformers' per-tensor ``_materialize_copy`` (observed with a profile function on new threads only;
    nothing of transformers is replaced)."""
    from transformers import LlamaForCausalLM

    seen: set[str] = set()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "_materialize_copy":
            seen.add(threading.current_thread().name)

    threading.setprofile(profile)
    try:
        model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32, **kwargs)
    finally:
        threading.setprofile(None)
    return model, seen


def _assert_identical(model: torch.nn.Module, reference: dict[str, torch.Tensor]) -> set[torch.device]:
    state = model.state_dict()
    assert set(reference) <= set(state)
    for name, expected in reference.items():
        got = state[name]
        assert got.dtype == expected.dtype and got.shape == expected.shape, name
        assert torch.equal(got.cpu(), expected), f"{name} differs from the checkpoint"
    return {p.device for p in model.parameters()}


def test_async_load_on_one_core_is_bit_identical(checkpoint, monkeypatch):
    path, reference = checkpoint
    monkeypatch.delenv("HF_DEACTIVATE_ASYNC_LOAD", raising=False)
    model, threads = _load_watching_threads(path, device_map="neuron")
    # the asynchronous path really ran: the copies came from the loader's thread pool
    assert threads and all(t.startswith("ThreadPoolExecutor") for t in threads), threads
    assert _assert_identical(model, reference) == {torch.device("neuron", 0)}
    assert {b.device for b in model.buffers()} == {torch.device("neuron", 0)}
    _assert_matches_cpu(model, path, torch.tensor([[1, 5, 9, 3]]))
    del model
    gc.collect()


def _cpu_model(path: str) -> torch.nn.Module:
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def _assert_matches_cpu(model: torch.nn.Module, path: str, ids: torch.Tensor) -> None:
    """Every parameter and buffer of ``model`` bit-identical to the CPU model loaded from ``path``, and its logits
    for ``ids``: bit-identical with adaptive eager execution off, within the merged kernels' tolerance with it on."""
    cpu_model = _cpu_model(path)
    for kind, got, expected in (("parameter", dict(model.named_parameters()), dict(cpu_model.named_parameters())),
                                ("buffer", dict(model.named_buffers()), dict(cpu_model.named_buffers()))):
        assert set(got) == set(expected), kind
        for name, tensor in got.items():
            assert tensor.dtype == expected[name].dtype and tensor.shape == expected[name].shape, name
            assert torch.equal(tensor.cpu(), expected[name]), f"{kind} {name} differs from the CPU model's"
    with torch.no_grad():
        logits = model(ids.to(next(model.parameters()).device)).logits.cpu()
        cpu_logits = cpu_model(ids).logits
    if adaptive.enabled():
        torch.testing.assert_close(logits, cpu_logits, atol=ADAPTIVE_ATOL, rtol=ADAPTIVE_RTOL)
    else:
        assert torch.equal(logits, cpu_logits)


def test_async_load_spread_over_cores_by_max_memory_is_bit_identical(checkpoint, monkeypatch):
    path, reference = checkpoint
    monkeypatch.delenv("HF_DEACTIVATE_ASYNC_LOAD", raising=False)
    cores = torch.neuron.device_count()
    assert cores >= 2
    # ~1.2 MB on each core but the last: the 3.4 MB model must spread over at least 3 cores
    max_memory: dict[int | str, int] = {i: 1_200_000 for i in range(cores - 1)}
    max_memory.update({cores - 1: 10**9, "cpu": 10**9})
    model, threads = _load_watching_threads(path, device_map="auto", max_memory=max_memory)
    assert threads and all(t.startswith("ThreadPoolExecutor") for t in threads), threads
    devices = _assert_identical(model, reference)
    assert all(d.type == "neuron" for d in devices) and len(devices) >= min(cores, 3), devices
    for index in {d.index for d in devices}:
        placed = sum(p.untyped_storage().nbytes() for p in model.parameters() if p.device.index == index)
        assert torch.neuron.memory_allocated(index) >= placed  # the allocator accounted every copy
    _assert_matches_cpu(model, path, torch.tensor([[1, 5, 9, 3]]))
