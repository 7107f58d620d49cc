"""Shared setup of the torch.compile(backend="neuron") tests.

The whole session compiles into one temporary cache folder (set before anything compiles), so
graphs shared by several tests are compiled once; tests that need a cold cache use their own
folder (in subprocesses).
"""
from __future__ import annotations

import os
import tempfile

import pytest
import torch

_SESSION_CACHE = tempfile.mkdtemp(prefix="compile-tests-cache-")
os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = _SESSION_CACHE
os.environ.pop("TORCH_NEURONX_NEFF_DISABLE_CACHE", None)
os.environ.pop("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", None)
os.environ.pop("TORCH_NEURONX_DEBUG_DIR", None)

import torch_neuronx.compile as tnc  # noqa: E402

# With the package installed with its `torch_dynamo_backends` entry point this is a no-op.
tnc.register()

TINY_LLAMA = dict(attn_implementation="eager", vocab_size=256, hidden_size=64, intermediate_size=128,
                  num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=512)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test starts with no compiled frames and zeroed metrics (the compile cache stays)."""
    torch._dynamo.reset()
    tnc.reset_dynamo_metrics()
    yield
    torch._dynamo.reset()


@pytest.fixture
def tiny_llama():
    """Factory: ``tiny_llama(seed=0)`` → a 1-layer Llama (hidden 64, vocab 256, eager
    attention) on CPU, eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    def make(seed: int = 0):
        torch.manual_seed(seed)
        return LlamaForCausalLM(LlamaConfig(**TINY_LLAMA)).eval()

    return make
