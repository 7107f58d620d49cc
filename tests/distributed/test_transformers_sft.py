"""The end-to-end run: transformers from_pretrained(distributed_config=DistributedConfig(
tp_size=2, fsdp_size=2, tp_plan="auto")) on 4 ranks over backend "neuron" loads a local
checkpoint with each core holding only its quarter, TRL's SFTTrainer trains it (batches
padded to 128 by TRL's neuron rule), and save_pretrained writes a standard safetensors
checkpoint that a plain CPU process (no torch_neuronx) loads to the same logits."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from ..processes import INHERITED
from .launch import report, torchrun

TEXTS = [f"The number {i} is {'even' if i % 2 == 0 else 'odd'} and its square is {i * i}." for i in range(64)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny Llama (hidden 128, 2 layers, 4 heads, 2 KV heads) and a byte-level BPE
    tokenizer trained on TEXTS, saved with save_pretrained (safetensors)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("dist-sft") / "ckpt"
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXTS, trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_distributed_config_sft_and_standard_checkpoint(checkpoint, tmp_path):
    out = tmp_path / "out"
    proc = torchrun("sft", 4, str(checkpoint), str(out), timeout=400)
    assert proc.returncode == 0, report(proc)

    loaded = re.findall(r"\[rank (\d)\] LOADED (\d+) (\d+) (neuron:\d)", proc.stdout)
    assert sorted(r for r, *_ in loaded) == ["0", "1", "2", "3"], report(proc)
    for rank, peak, full, device in loaded:
        assert device == f"neuron:{rank}"
        # (fsdp=2) x (tp=2): a core only ever held about a quarter of the weights
        assert int(peak) < 0.4 * int(full), f"rank {rank} peaked at {peak} B of a {full} B model"
    for multiple, length in re.findall(r"PAD (\d+) (\d+)", proc.stdout):
        assert multiple == "128" and int(length) % 128 == 0
    first, last, steps, _ = re.search(r"\[rank 0\] TRAIN ([\d.]+) ([\d.]+) (\d) (\w+)", proc.stdout).groups()
    assert steps == "3" and float(last) < float(first), (first, last)
    assert re.findall(r"DIVERGED (\d+)", proc.stdout) == ["0"] * 4, report(proc)
    assert len(re.findall(r"\] SAVED", proc.stdout)) == 4

    # A plain CPU process (torch_neuronx not loaded) reads the checkpoint.
    code = textwrap.dedent(f"""
        import torch
        from safetensors import safe_open
        from transformers import AutoModelForCausalLM
        saved, base = {str(out / "saved")!r}, {str(checkpoint)!r}
        with safe_open(saved + "/model.safetensors", "pt") as f, safe_open(base + "/model.safetensors", "pt") as g:
            assert sorted(f.keys()) == sorted(g.keys())
            for k in f.keys():
                assert f.get_slice(k).get_shape() == g.get_slice(k).get_shape(), k
        ref = torch.load({str(out / "logits.pt")!r})
        model = AutoModelForCausalLM.from_pretrained(saved, dtype=torch.float32)
        with torch.no_grad():
            logits = model(input_ids=ref["prompt"]).logits
        print("MAXDIFF", (logits - ref["logits"]).abs().max().item(), ref["logits"].abs().max().item())
    """)
    env = {k: v for k, v in os.environ.items()
           if k in INHERITED or not k.startswith(("NEURON_", "TORCH_NEURONX_"))}
    env.update(TORCH_DEVICE_BACKEND_AUTOLOAD="0", HF_HUB_OFFLINE="1")
    cpu = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert cpu.returncode == 0, cpu.stderr[-3000:]
    diff, scale = map(float, re.search(r"MAXDIFF (\S+) (\S+)", cpu.stdout).groups())
    assert diff <= 1e-4 and scale > 0.1, (diff, scale)
