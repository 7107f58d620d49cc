"""The TRL examples run as scripts, offline, on the tiny Llama of ``examples/tiny_llm.py``:

* ``examples/sft.py``: TRL's ``SFTTrainer`` on neuron pads every batch to a multiple of 128 (TRL's
  ``pad_to_multiple_of="auto"``), trains in bf16 autocast with gradient checkpointing and the
  loss falls; ``--lora`` saves a PEFT adapter that a plain CPU process (torch_neuronx not loaded)
  reloads onto the base model with the trained model's logits (both fp32, within 1e-4);
  ``--compile`` trains through ``torch.compile(backend="neuron")``.
* ``examples/sft_tp_fsdp.py`` on 4 ranks (tp 2 x fsdp 2): trains, and its ``save_pretrained``
  checkpoint loads on plain CPU with the logits the trained sharded model gave (within 1e-4).
"""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from .examples_run import cold_compile_cache, report, run_cpu_python, run_example

LOGITS_TOL = 1e-4  # fp32 eval on both sides


@pytest.fixture(scope="module")
def compile_env(tmp_path_factory) -> dict:
    """A fresh compile cache folder: compiles are real, not disk-cache hits from earlier runs."""
    return {"TORCH_NEURONX_NEFF_CACHE_DIR": cold_compile_cache(tmp_path_factory.mktemp("neff-cache"))}


def quarter_means(losses: list[float]) -> tuple[float, float]:
    """Mean loss of the first and of the last quarter of the steps."""
    q = max(1, len(losses) // 4)
    return sum(losses[:q]) / q, sum(losses[-q:]) / q


def read_record(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def check_sft_record(rec: dict, steps: int, *, min_drop: float) -> None:
    """Batches padded to multiples of 128 by TRL, one loss per step, loss fell by ``min_drop``."""
    assert rec["pad_to_multiple_of"] == 128, rec["pad_to_multiple_of"]  # TRL's "auto" on neuron
    assert len(rec["batch_shapes"]) >= steps, rec["batch_shapes"]
    lengths = [shape[1] for shape in rec["batch_shapes"]]
    assert all(n % 128 == 0 and n > 0 for n in lengths), lengths
    losses = rec["losses"]
    assert len(losses) == steps, losses
    first, last = quarter_means(losses)
    assert last < first - min_drop, (first, last, losses)


def test_sft_on_neuron_pads_to_128_and_learns(assets, tmp_path):
    steps = 24
    proc = run_example("sft.py", "--assets-dir", str(assets), "--out", str(tmp_path / "out"),
                       "--record", str(tmp_path / "rec.json"), "--max-steps", str(steps))
    assert proc.returncode == 0, report(proc)
    rec = read_record(tmp_path / "rec.json")
    assert rec["device"] == "neuron:0"
    assert rec["bf16"] is True and rec["gradient_checkpointing"] is True and rec["torch_compile"] is False
    # measured: first-quarter mean ~5.2, last-quarter mean ~2.8
    check_sft_record(rec, steps, min_drop=1.0)
    assert (tmp_path / "out" / "model.safetensors").exists()


def test_sft_lora_adapter_reloads_on_plain_cpu(assets, tmp_path):
    steps = 20
    out = tmp_path / "adapter"
    proc = run_example("sft.py", "--lora", "--assets-dir", str(assets), "--out", str(out),
                       "--record", str(tmp_path / "rec.json"), "--max-steps", str(steps))
    assert proc.returncode == 0, report(proc)
    assert "trainable params" in proc.stdout
    rec = read_record(tmp_path / "rec.json")
    assert rec["device"] == "neuron:0" and rec["lora"] is True and rec["bf16"] is True
    check_sft_record(rec, steps, min_drop=0.5)  # measured: ~5.3 -> ~4.1
    assert (out / "adapter_config.json").exists() and (out / "adapter_model.safetensors").exists()

    # A fresh base model on CPU + the saved adapter, in a process that never loads torch_neuronx:
    # the trained model's fp32 eval logits on neuron (bf16 autocast was training only).
    code = textwrap.dedent(f"""
        import sys, torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM
        ref = torch.load({rec["eval_logits"]!r})
        base = AutoModelForCausalLM.from_pretrained({str(assets / "model")!r}, dtype=torch.float32).eval()
        with torch.no_grad():
            plain = base(input_ids=ref["input_ids"]).logits
        model = PeftModel.from_pretrained(base, {str(out)!r}).eval()
        with torch.no_grad():
            logits = model(input_ids=ref["input_ids"]).logits
        assert "torch_neuronx" not in sys.modules and not hasattr(torch, "neuron")
        print("DIFF", (logits - ref["logits"]).abs().max().item(), (plain - logits).abs().max().item(),
              ref["logits"].abs().max().item())
    """)
    cpu = run_cpu_python(code)
    assert cpu.returncode == 0, report(cpu)
    diff, adapter_effect, scale = map(float, re.search(r"DIFF (\S+) (\S+) (\S+)", cpu.stdout).groups())
    assert diff <= LOGITS_TOL, (diff, scale)
    assert adapter_effect > 0.1 and scale > 0.5, (adapter_effect, scale)  # the adapter matters


def test_sft_torch_compile_learns(small_assets, compile_env, tmp_path):
    # TRL's defaults under torch_compile=True: SDPA attention and gradient checkpointing (the
    # recomputed attention must not need PyTorch's CUDA/CPU-only RNG wrappers).
    steps = 12
    proc = run_example("sft.py", "--compile",
                       "--model", str(small_assets / "model"), "--assets-dir", str(small_assets),
                       "--out", str(tmp_path / "out"), "--record", str(tmp_path / "rec.json"),
                       "--max-steps", str(steps), "--learning-rate", "1e-2", env=compile_env)
    assert proc.returncode == 0, report(proc)
    rec = read_record(tmp_path / "rec.json")
    assert rec["torch_compile"] is True and rec["torch_compile_backend"] == "neuron", rec
    assert rec["device"] == "neuron:0" and rec["gradient_checkpointing"] is True
    check_sft_record(rec, steps, min_drop=1.0)  # measured: ~5.6 -> ~2.9


def test_sft_tp_fsdp_checkpoint_loads_on_cpu(assets, tmp_path):
    steps = 8
    out = tmp_path / "ckpt"
    proc = run_example("sft_tp_fsdp.py", "--tp", "2", "--fsdp", "2", "--assets-dir", str(assets),
                       "--out", str(out), "--record", str(tmp_path / "rec.json"),
                       "--max-steps", str(steps), nproc=4, timeout=400)
    assert proc.returncode == 0, report(proc)
    rec = read_record(tmp_path / "rec.json")
    assert (rec["world_size"], rec["tp"], rec["fsdp"], rec["backend"]) == (4, 2, 2, "neuron"), rec
    assert rec["bf16"] is True and rec["gradient_checkpointing"] is True
    check_sft_record(rec, steps, min_drop=0.3)  # measured: ~5.5 -> ~4.3

    code = textwrap.dedent(f"""
        import sys, torch
        from safetensors import safe_open
        from transformers import AutoModelForCausalLM
        saved, base = {str(out)!r}, {str(assets / "model")!r}
        with safe_open(saved + "/model.safetensors", "pt") as f, safe_open(base + "/model.safetensors", "pt") as g:
            assert sorted(f.keys()) == sorted(g.keys())
            for k in f.keys():
                assert f.get_slice(k).get_shape() == g.get_slice(k).get_shape(), k
        ref = torch.load({rec["eval_logits"]!r})
        model = AutoModelForCausalLM.from_pretrained(saved, dtype=torch.float32).eval()
        with torch.no_grad():
            logits = model(input_ids=ref["input_ids"]).logits
        assert "torch_neuronx" not in sys.modules and torch.isfinite(logits).all()
        print("DIFF", (logits - ref["logits"]).abs().max().item(), ref["logits"].abs().max().item())
    """)
    cpu = run_cpu_python(code)
    assert cpu.returncode == 0, report(cpu)
    diff, scale = map(float, re.search(r"DIFF (\S+) (\S+)", cpu.stdout).groups())
    assert diff <= LOGITS_TOL and scale > 0.5, (diff, scale)


def test_sft_tp_fsdp_refuses_bad_launches(tmp_path):
    proc = run_example("sft_tp_fsdp.py", "--out", str(tmp_path))
    assert proc.returncode == 2 and "torchrun --nproc-per-node" in proc.stderr, report(proc)
    proc = run_example("sft_tp_fsdp.py", "--tp", "2", "--fsdp", "2", "--out", str(tmp_path),
                       env={"WORLD_SIZE": "2", "LOCAL_RANK": "0", "RANK": "0"})
    assert proc.returncode == 2, report(proc)
    assert "--tp 2 x --fsdp 2 = 4 must equal the number of processes (2)" in proc.stderr, report(proc)
