"""TRL's preference and RL trainers on ``neuron`` give the CPU's per-step values.

Each trainer runs a few optimizer steps twice in this process, from the same seeded tiny Llama
(hidden 64, 2 layers, fp32): once with ``use_cpu=True`` and once as a user selects ``neuron``
(nothing set: accelerate picks the device). TRL's ``pad_to_multiple_of="auto"`` pads to 128 on
``neuron`` only, so the two runs also differ in padding, which masked positions must not change.

* ``DPOTrainer`` with a separate reference model, and with a PEFT LoRA adapter (the reference is
  the adapter-disabled model).
* ``GRPOTrainer`` with a LoRA adapter initialised non-zero (``init_lora_weights=False``), so the
  policy differs from the adapter-disabled reference and the KL term (``beta=0.1``) has a real
  gradient. Generation is greedy: ``neuron``'s random stream differs from the CPU's (as CUDA's
  does), so sampled completions would differ; greedy ones are the same on both devices. The reward
  depends on the completion's index, not its text, so the rewards are not all equal.

Tolerance: ``rtol=1e-4, atol=1e-5`` on every logged number (float32 rounding carried through a
few Adam steps). Measured: DPO's summed log-probabilities within 1.9e-6 (of about 15), its rewards
and losses within 7.2e-8; GRPO's loss, KL and gradient norm within 3e-8.
"""
from __future__ import annotations

import math

import pytest
import torch

datasets = pytest.importorskip("datasets")
trl = pytest.importorskip("trl")
peft = pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

RTOL, ATOL = 1e-4, 1e-5
STEPS = 3
WORDS = ["apple", "banana", "cherry", "dog", "cat", "red", "blue", "green", "one", "two", "three", "yes", "no"]
#: Logged values that are not numerics of the model (progress, schedule, token counts); times are skipped too.
NOT_COMPARED = ("epoch", "step", "learning_rate", "num_tokens")


def compared(key: str) -> bool:
    """Whether a logged value is one of the model's numerics (not progress, schedule or timing)."""
    return key not in NOT_COMPARED and "time" not in key and "per_second" not in key


@pytest.fixture(scope="module")
def tokenizer():
    """A word-level tokenizer over ``WORDS`` plus "The", "is", "and", "." and the special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {t: i for i, t in enumerate(["<pad>", "<s>", "</s>", "<unk>", "The", "is", "and", "."] + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                                pad_token="<pad>", unk_token="<unk>")


def tiny_llama(tok):
    """A Llama (hidden 64, 2 layers, GQA 4/2 heads) with weights drawn on the CPU from seed 0."""
    config = transformers.LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return transformers.LlamaForCausalLM(config)


def common_args(out: str, use_cpu: bool) -> dict:
    return dict(output_dir=out, per_device_train_batch_size=4, max_steps=STEPS, learning_rate=1e-3, logging_steps=1,
                report_to=[], use_cpu=use_cpu, seed=0, bf16=False, save_strategy="no", dataloader_num_workers=0)


def lora(init: bool):
    return peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                           task_type="CAUSAL_LM", init_lora_weights=init)


def run_dpo(tok, out: str, use_cpu: bool, with_lora: bool) -> tuple[str, list[dict]]:
    data = datasets.Dataset.from_dict({
        "prompt": [f"The {w} is" for w in WORDS[:8]],
        "chosen": [f" {WORDS[i % 4 + 4]} and yes ." for i in range(8)],
        "rejected": [f" {WORDS[(i + 1) % 3 + 8]} no no ." for i in range(8)],
    })
    args = trl.DPOConfig(**common_args(out, use_cpu), beta=0.1)
    trainer = trl.DPOTrainer(model=tiny_llama(tok), ref_model=None if with_lora else tiny_llama(tok), args=args,
                             train_dataset=data, processing_class=tok, peft_config=lora(True) if with_lora else None)
    trainer.train()
    return str(trainer.args.device), [h for h in trainer.state.log_history if "loss" in h]


def index_reward(completions, **kwargs):
    """A reward that depends on the completion's position in the batch (and slightly on its length)."""
    return [float((i * 7) % 5) + 0.01 * len(c) for i, c in enumerate(completions)]


def run_grpo(tok, out: str, use_cpu: bool) -> tuple[str, list[dict]]:
    tok = tok.__class__(tokenizer_object=tok.backend_tokenizer, bos_token="<s>", eos_token="</s>",
                        pad_token="<pad>", unk_token="<unk>", padding_side="left")
    data = datasets.Dataset.from_dict({"prompt": [f"The {w} is" for w in WORDS[:8]]})
    args = trl.GRPOConfig(**common_args(out, use_cpu), beta=0.1, num_generations=2, max_completion_length=6,
                          generation_batch_size=4, generation_kwargs={"do_sample": False})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)  # the non-zero LoRA initialisation, the same on both runs
        trainer = trl.GRPOTrainer(model=tiny_llama(tok), args=args, train_dataset=data, processing_class=tok,
                                  reward_funcs=index_reward, peft_config=lora(False))
    trainer.train()
    return str(trainer.args.device), [h for h in trainer.state.log_history if "loss" in h]


def assert_logs_match(cpu: list[dict], neuron: list[dict], required: tuple[str, ...]) -> None:
    assert len(cpu) == len(neuron) == STEPS, (cpu, neuron)
    for step, (c, n) in enumerate(zip(cpu, neuron, strict=True)):
        for key in required:
            assert key in c and key in n, (step, key, sorted(c))
        for key, expected in c.items():
            if not compared(key):
                continue
            assert math.isfinite(n[key]) and math.isclose(n[key], expected, rel_tol=RTOL, abs_tol=ATOL), (
                f"step {step + 1} {key}: neuron {n[key]!r} vs cpu {expected!r}")


@pytest.mark.parametrize("with_lora", [False, True], ids=["ref-model", "lora"])
def test_dpo_on_neuron_matches_cpu(tokenizer, tmp_path, with_lora):
    cpu_device, cpu = run_dpo(tokenizer, str(tmp_path / "cpu"), True, with_lora)
    neuron_device, neuron = run_dpo(tokenizer, str(tmp_path / "neuron"), False, with_lora)
    assert (cpu_device, neuron_device) == ("cpu", "neuron:0")
    assert_logs_match(cpu, neuron, ("loss", "grad_norm", "rewards/chosen", "rewards/rejected", "rewards/margins",
                                    "logps/chosen", "logps/rejected"))
    assert any(h["rewards/margins"] != 0.0 for h in cpu[1:]), cpu  # the policy moved away from the reference


def test_grpo_lora_on_neuron_matches_cpu(tokenizer, tmp_path):
    cpu_device, cpu = run_grpo(tokenizer, str(tmp_path / "cpu"), True)
    neuron_device, neuron = run_grpo(tokenizer, str(tmp_path / "neuron"), False)
    assert (cpu_device, neuron_device) == ("cpu", "neuron:0")
    assert_logs_match(cpu, neuron, ("loss", "grad_norm", "kl", "entropy", "reward", "reward_std"))
    assert all(h["kl"] > 0 and h["grad_norm"] > 1e-3 for h in cpu), cpu  # a real KL term and gradient
