"""The `torch-neuronx demo` end to end, in its quick form, on the device under test.

The device is ``$TORCH_NEURONX_TEST_DEVICE`` if set, else ``"neuron"`` when ``torch.neuron`` exists,
else ``"cpu"``.
"""

import math
import os

import pytest
import torch

from torch_neuronx.cli.demo import SENTENCES, run_demo


def _default_device() -> str:
    return os.environ.get("TORCH_NEURONX_TEST_DEVICE") or ("neuron" if hasattr(torch, "neuron") else "cpu")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """One quick demo run shared by the tests below (about 5 s on 2 CPU cores)."""
    out = tmp_path_factory.mktemp("demo")
    result = run_demo(device=_default_device(), quick=True, out_dir=out)
    result["out_dir"] = out
    return result


def test_runs_on_requested_device(demo):
    assert torch.device(demo["device"]).type == torch.device(_default_device()).type


def test_embeddings_match_cpu(demo):
    assert demo["embedding_max_abs_diff"] < 1e-4
    sim = torch.tensor(demo["similarity"])
    n = len(SENTENCES)
    assert sim.shape == (n, n)
    assert torch.allclose(sim.diagonal(), torch.ones(n), atol=1e-4)  # unit vectors
    assert torch.allclose(sim, sim.T, atol=1e-5)
    # the real model: paraphrase pairs (guitar 0-1, film 2-3) are far closer than unrelated pairs
    assert sim[0, 1] > 0.4 and sim[2, 3] > 0.4
    assert sim[0, 1] > sim[0, 2] + 0.3 and sim[2, 3] > sim[2, 5] + 0.3


def test_llama_loss_fell(demo):
    losses = demo["losses"]
    assert len(losses) == demo["steps"]
    assert all(math.isfinite(x) for x in losses)
    # random init starts near ln(vocab); training must bring the average clearly down
    assert losses[0] == pytest.approx(math.log(demo["llama_config"]["vocab_size"]), abs=0.5)
    assert demo["loss_last"] < demo["loss_first"] - 0.3


def test_reloaded_logits_equal(demo):
    assert demo["reload_logits_max_abs_diff"] < 1e-4
    assert "model.safetensors" in demo["saved_files"]
    assert (demo["out_dir"] / "model.safetensors").is_file()
    assert (demo["out_dir"] / "tokenizer.json").is_file()


def test_generated_text(demo):
    assert demo["generated_tokens"] > 0
    assert len(demo["generated_text"]) > 0


def test_neuron_stats(demo):
    if torch.device(demo["device"]).type != "neuron":
        assert demo["neuron"] is None
        return
    stats = demo["neuron"]
    assert 0 < stats["max_memory_allocated"] <= stats["total_memory"]
    assert stats["memory_allocated"] <= stats["memory_reserved"]
    assert sum(stats["executed_ops"].values()) > 0
