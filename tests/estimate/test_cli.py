"""``torch-neuronx estimate``: the JSON fields scripts read, prices, and clear errors."""
import json

import jsonschema
import pytest

from torch_neuronx.cli.main import main
from torch_neuronx.estimate.trace import TRACE_SCHEMA

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
          "max_position_embeddings": 1024, "tie_word_embeddings": False}
FIELDS = {"step_time_s", "tokens_per_s", "ttft_s", "tpot_s", "peak_hbm_bytes_per_core", "fits", "mfu",
          "first_run_compiles", "usd_per_hour", "estimate"}


@pytest.fixture
def model_dir(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    return tmp_path


def run_json(capsys, *args):
    assert main(["estimate", *args, "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1                                     # exactly one JSON object
    return json.loads(out[0])


def test_decode_json_on_trn2_has_no_price(capsys, model_dir):
    d = run_json(capsys, "--model", str(model_dir), "--task", "decode", "--batch", "2", "--seq", "256",
                 "--tp", "2", "--compile")
    assert FIELDS <= set(d) and d["estimate"] is True
    assert d["usd_per_hour"] is None and d["tpot_s"] == d["step_time_s"] > 0 and d["ttft_s"] is None
    assert d["tokens_per_s"] == pytest.approx(2 / d["step_time_s"])
    assert d["fits"] is True and d["first_run_compiles"]["graphs"] == 1
    assert d["mode"] == "compiled" and d["compiled_step_time_s"] < d["eager_step_time_s"]


def test_prefill_on_trn1_2xlarge_costs_the_on_demand_price(capsys, model_dir):
    d = run_json(capsys, "--model", str(model_dir / "config.json"), "--task", "prefill", "--seq", "128",
                 "--platform", "trn1", "--instance", "trn1.2xlarge")
    assert d["usd_per_hour"] == 1.34 and d["ttft_s"] == d["step_time_s"]
    assert d["usd_per_step"] == pytest.approx(1.34 * d["step_time_s"] / 3600)
    d = run_json(capsys, "--model", str(model_dir), "--task", "prefill", "--seq", "128", "--price-per-hour", "10",
                 "--instances", "2")
    assert d["usd_per_hour"] == 20.0


def test_train_table_says_estimate(capsys, model_dir, tmp_path):
    trace = tmp_path / "t.json"
    assert main(["estimate", "--model", str(model_dir), "--task", "train", "--seq", "64", "--tp", "2", "--dp", "2",
                 "--zero1", "--grad-accum", "4", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ESTIMATE (not a measurement)") and "x4" in out and "data-parallel gradient sync" in out
    data = json.loads(trace.read_text())
    jsonschema.validate(data, TRACE_SCHEMA)
    assert data["otherData"]["estimate"] is True
    threads = {e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    # one track per engine and one per collective stream: tensor parallel (2 ranks), data parallel (2 replicas)
    collective_tracks = {t for t in threads if t.startswith("collective: ")}
    assert {"TensorE", "VectorE", "ScalarE", "DMA/HBM"} <= threads and len(collective_tracks) == 2, threads
    assert all(t.endswith("(2 ranks)") for t in collective_tracks)


@pytest.mark.parametrize("args,message", [
    (["--tp", "3"], "tp_size=3 does not divide num_attention_heads=4"),
    (["--tp", "64", "--instance", "trn2.3xlarge"], "64 ranks, but 1 x trn2.3xlarge at LNC=2 has 4 logical NeuronCores"),
    (["--platform", "trn9"], "unknown platform 'trn9'"),
    (["--lnc", "2", "--platform", "trn1"], "--lnc 2 is not available on trn1: use one of 1"),
    (["--instance", "p5.48xlarge"], "trn2 has no instance 'p5.48xlarge'"),
])
def test_bad_setups_name_the_problem(capsys, model_dir, args, message):
    assert main(["estimate", "--model", str(model_dir), "--task", "prefill", "--seq", "64", *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    (["--task", "decode", "--kv-len", "0"], "--kv-len 0: must be at least 1"),          # was: silently --seq
    (["--task", "decode", "--kv-len", "-5"], "--kv-len -5: must be at least 1"),        # was: a traceback
    (["--task", "prefill", "--kv-len", "32"], "--kv-len 32 is the KV-cache length of a decode step"),
    (["--task", "prefill", "--layers", "0"], "--layers 0: must be at least 1"),         # was: every layer
    (["--task", "prefill", "--layers", "-2"], "--layers -2: must be at least 1"),       # was: no layer at all
    (["--task", "train", "--pp", "2", "--microbatches", "0"], "--microbatches 0: must be at least 1"),
    (["--task", "train", "--microbatches", "4"], "use --grad-accum"),                    # was: ignored
    (["--task", "prefill", "--price-per-hour", "nan"], "a price must be a finite number"),  # was: $nan per step
    (["--task", "prefill", "--trace", "/nonexistent-folder/t.json"], "/nonexistent-folder does not exist"),
])
def test_bad_values_are_refused_before_the_run(capsys, model_dir, args, message):
    assert main(["estimate", "--model", str(model_dir), "--seq", "64", *args]) == 2
    assert message in capsys.readouterr().err


def test_layers_and_kv_len_given_are_used(capsys, model_dir):
    one = run_json(capsys, "--model", str(model_dir), "--task", "decode", "--seq", "64", "--kv-len", "32",
                   "--layers", "1")
    two = run_json(capsys, "--model", str(model_dir), "--task", "decode", "--seq", "64", "--kv-len", "32")
    assert one["notes"][-1].startswith("decode against a static KV cache of 32 positions")
    assert one["step_time_s"] < two["step_time_s"]


def test_missing_config_names_the_presets(capsys, tmp_path):
    assert main(["estimate", "--model", str(tmp_path / "nowhere"), "--task", "prefill"]) == 2
    err = capsys.readouterr().err
    assert "not a preset (" in err and "llama-3.3-70b" in err and "save the model's config.json" in err
