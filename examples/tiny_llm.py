"""Tiny offline assets for the examples: a small Llama checkpoint, a byte-level BPE tokenizer
trained in memory with ``tokenizers``, and a small text dataset, written to one directory.

The examples use them when ``--model`` is not given, so they run with no network (no Hub).
The weights are random (seed 0) and the texts follow a simple pattern, so a few SFT steps
visibly lower the loss.

Usage (normally called by the examples themselves)::

    python examples/tiny_llm.py /tmp/tiny-llm        # writes /tmp/tiny-llm/{model,train.jsonl}

    from tiny_llm import write_tiny_assets
    model_dir, data_file = write_tiny_assets("/tmp/tiny-llm")
"""
from __future__ import annotations

import json
import os
import shutil
import sys

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>"]


def tiny_texts(n: int = 64) -> list[str]:
    """``n`` short English sentences with a learnable pattern (parity and square of a number)."""
    return [f"The number {i} is {'even' if i % 2 == 0 else 'odd'} and its square is {i * i}." for i in range(n)]


def train_tokenizer(texts: list[str], vocab_size: int = 320):
    """A byte-level BPE tokenizer trained in memory on ``texts``, as a
    ``PreTrainedTokenizerFast`` with ``<pad>``, ``<s>`` and ``</s>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def write_tiny_assets(directory: str, *, hidden_size: int = 128, num_layers: int = 2,
                      seed: int = 0) -> tuple[str, str]:
    """Writes ``directory/model`` (a random Llama: ``hidden_size``, ``num_layers`` layers, 4
    attention heads, 2 key/value heads, fp32 safetensors, with its tokenizer) and
    ``directory/train.jsonl`` (one ``{"text": ...}`` per line). Returns ``(model_dir, data_file)``.

    Skips the work if both already exist, so repeated runs reuse the same checkpoint."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    model_dir = os.path.join(directory, "model")
    data_file = os.path.join(directory, "train.jsonl")
    if os.path.exists(os.path.join(model_dir, "config.json")) and os.path.exists(data_file):
        return model_dir, data_file
    os.makedirs(directory, exist_ok=True)
    texts = tiny_texts()
    tokenizer = train_tokenizer(texts)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=4 * hidden_size,
        num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False, dtype="float32",
    )
    # Random weights drawn on CPU: the same checkpoint whatever device runs the example.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    tmp = model_dir + f".tmp{os.getpid()}"
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if os.path.exists(model_dir):  # another process finished first: keep its copy
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, model_dir)
    with open(f"{data_file}.tmp{os.getpid()}", "w") as f:
        for text in texts:
            f.write(json.dumps({"text": text}) + "\n")
    os.replace(f"{data_file}.tmp{os.getpid()}", data_file)
    return model_dir, data_file


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: python {sys.argv[0]} OUT_DIR")
    print(*write_tiny_assets(sys.argv[1]))
