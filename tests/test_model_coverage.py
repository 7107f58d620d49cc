"""Model coverage (`torch-neuronx compat`, :mod:`torch_neuronx.model_coverage`): tiny configs keep
each architecture's character, the checks compare against the CPU (and can fail), the report
leaves CPU failures and skips out of the rates, and the command writes its table."""
from __future__ import annotations

import csv
import os
import subprocess
import sys

import pytest

from tests.processes import INHERITED, cold_compile_cache
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

from torch_neuronx.model_coverage import report as rpt
from torch_neuronx.model_coverage.checks import CPU_FAIL, FAIL, PASS, SKIP, Outcome, Report, check_architecture
from torch_neuronx.model_coverage.tiny import tiny_config, tiny_model


@pytest.mark.parametrize("model_type, kinds", [
    ("gemma3_text", {"sliding_attention", "full_attention"}),
    ("qwen3_next", {"linear_attention", "full_attention"}),
])
def test_tiny_config_keeps_every_layer_type(model_type, kinds):
    default = CONFIG_MAPPING[model_type]()
    assert set(default.layer_types) == kinds and len(default.layer_types) > 4
    cfg = tiny_config(CONFIG_MAPPING[model_type])
    assert set(cfg.layer_types) == kinds
    assert cfg.num_hidden_layers == len(cfg.layer_types) == len(kinds)
    assert cfg.hidden_size <= 64 and cfg.vocab_size == 256


def test_tiny_moe_keeps_experts_small():
    model = tiny_model("qwen3_moe")
    cfg = model.config
    assert cfg.num_experts == 4 and cfg.num_experts_per_tok == 2 and cfg.num_hidden_layers == 2
    assert sum(p.numel() for p in model.parameters()) < 500_000


def test_check_architecture_passes_llama_and_can_fail():
    ok = check_architecture("llama", checks=("generate", "train"))
    assert ok.outcomes["generate"].status == PASS and ok.outcomes["generate"].max_diff <= 1e-3
    assert ok.outcomes["train"].status == PASS
    assert ok.outcomes["compiled"].status == SKIP
    with pytest.raises(ValueError, match="atol"):
        check_architecture("llama", checks=("generate",), atol=-1.0)


def test_compiled_check_covers_prefill_and_a_reused_decode_graph():
    """The compiled static-cache check generates 3 tokens by default: the prefill, a decode step that
    compiles and one that must reuse its graph (Llama: one graph, no recompile note), against the CPU's
    eager static-cache tokens."""
    import inspect

    assert inspect.signature(check_architecture).parameters["compiled_tokens"].default == 3
    report = check_architecture("llama", checks=("compiled",))
    outcome = report.outcomes["compiled"]
    assert outcome.status == PASS and outcome.max_diff is not None and outcome.max_diff <= 1e-3, outcome
    assert outcome.reason == ""  # a recompile would be noted: "N graphs for 2 decode steps; ..."


def test_comparisons_fail_on_a_logit_or_token_difference():
    """The comparison is real: 2e-3 on one logit, or one different token, fails the check."""
    import torch

    from torch_neuronx.model_coverage.checks import compare_generation as _compare_generation
    from torch_neuronx.model_coverage.checks import compare_train as _compare_train

    tokens, logits = torch.tensor([[5, 6, 7]]), torch.randn(2, 10)
    assert _compare_generation((tokens, logits), (tokens.clone(), logits.clone()), 1e-3).status == PASS
    bumped = logits.clone()
    bumped[1, 3] += 2e-3
    out = _compare_generation((tokens, logits), (tokens, bumped), 1e-3)
    assert out.status == FAIL and "logits differ" in out.reason and out.max_diff > 1e-3
    other = tokens.clone()
    other[0, 2] = 8
    out = _compare_generation((tokens, logits), (other, logits), 1e-3)
    assert out.status == FAIL and "position 2" in out.reason
    grads = {"w": torch.ones(3)}
    assert _compare_train((1.0, grads), (1.0, {"w": torch.ones(3)}), 1e-3).status == PASS
    assert _compare_train((1.0, grads), (1.0, {"w": torch.ones(3) * 1.01}), 1e-3).status == FAIL
    assert _compare_train((1.0, grads), (1.01, grads), 1e-3).status == FAIL


def test_rates_leave_cpu_failures_out():
    def rep(name, g, c, t="pass"):
        return Report(name, outcomes={"generate": Outcome(g), "compiled": Outcome(c), "train": Outcome(t)})

    reports = [rep("a", PASS, PASS), rep("b", PASS, FAIL), rep("c", FAIL, CPU_FAIL),
               rep("d", CPU_FAIL, CPU_FAIL, CPU_FAIL), rep("e", PASS, SKIP)]
    r = rpt.rates(reports)
    assert (r["generate"].passed, r["generate"].counted) == (3, 4)
    assert (r["compiled"].passed, r["compiled"].counted) == (1, 2)
    assert [x.model_type for x in rpt.cpu_failures(reports)] == ["d"]
    assert not rpt.meets_thresholds(reports)
    assert rpt.meets_thresholds([rep("a", PASS, PASS), rep("d", CPU_FAIL, CPU_FAIL, CPU_FAIL)])
    md = rpt.to_markdown(reports)
    assert "Failing on CPU itself (1" in md and "| d |" in md


def test_compat_command_writes_the_table(tmp_path):
    """The command on a few architectures: a dense model, a hybrid sliding/full attention model
    whose static cache compiles with a captured constant, an MoE, a GPT-2 style model with tied
    weights, and one that fails on the CPU itself."""
    names = ["llama", "gemma3_text", "qwen3_moe", "gpt2", "xlstm"]
    env = {k: v for k, v in os.environ.items()
           if k in INHERITED or not k.startswith(("NEURON_", "TORCH_NEURONX_"))}
    env["TORCH_NEURONX_NEFF_CACHE_DIR"] = cold_compile_cache(tmp_path / "cache")
    proc = subprocess.run(
        [sys.executable, "-m", "torch_neuronx.cli.main", "compat", "--family", "causal-lm", "--only", ",".join(names),
         "--jobs", "2",
         "--out", str(tmp_path / "out"), "--no-progress"],
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(tmp_path / "out" / "compat-causal-lm.csv") as f:
        table = {row["architecture"]: row for row in csv.DictReader(f)}
    assert set(table) == set(names)
    for name in names[:-1]:
        assert (table[name]["generate"], table[name]["compiled"], table[name]["train"]) == ("pass",) * 3, table[name]
        assert float(table[name]["generate_max_diff"]) <= 1e-3
    assert table["xlstm"]["generate"] == "cpu-fail" and table["xlstm"]["generate_reason"]
    summary = proc.stdout.strip().splitlines()[-1]
    assert proc.stdout.count("compat [causal-lm]: generate") == 1  # one family: its line once
    assert summary.startswith(
        "compat [causal-lm]: generate 4/4 (100.0%) · compiled static-cache generate 4/4 (100.0%) · train")
    assert "1 fail on CPU itself" in summary
    assert (tmp_path / "out" / "compat-causal-lm.md").read_text().startswith("**compat [causal-lm]: generate 4/4")
    assert (tmp_path / "out" / "compat.md").read_text().startswith("**compat [causal-lm]: generate 4/4")


@pytest.mark.parametrize("args, message", [
    (["--only", ""], "names no architecture"),
    (["--only", "llama", "--new-tokens", "0"], "--new-tokens must be at least 1"),
    (["--only", "llama", "--atol", "-1"], "--atol must be"),
    (["--only", "llama", "--timeout", "0"], "--timeout must be"),
    (["--only", "llama", "--checks", "generate,bogus"], "unknown check"),
    (["--family", "causal-lm", "--only", "no_such_arch"], "not causal-LM architectures"),
    (["--only", "no_such_arch"], "not entries of causal-lm, image-text-to-text"),
    (["--family", "vision", "--only", "llama"], "unknown family 'vision'"),
    (["--family", "encoder", "--only", "bert", "--checks", "generate"], "unknown check"),
])
def test_compat_command_rejects_bad_arguments_before_running(args, message, tmp_path, capsys):
    # In process (the command's own entry function): the subprocess path of the command is
    # covered by test_compat_command_writes_the_table.
    status = _run_cli(["compat", *args, "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2 and message in err, err[-2000:]
    assert not (tmp_path / "out" / "compat-causal-lm.csv").exists()


def _run_cli(argv: list[str]) -> int:
    """Exit status of ``torch-neuronx ARGV`` run in this process (argparse's errors exit with 2)."""
    from torch_neuronx.cli.main import main

    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def test_compat_command_checks_the_output_folder_first(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    status = _run_cli(["compat", "--only", "llama", "--out", str(blocker), "--no-progress"])
    out = capsys.readouterr()
    assert status == 2 and "cannot write there" in out.err, out.err[-2000:]
    assert "architecture" not in out.out  # nothing ran


def test_run_coverage_rejects_unknown_options_and_duplicates():
    from torch_neuronx.model_coverage import run_coverage

    with pytest.raises(ValueError, match="unknown options"):
        run_coverage(["gpt2"], options={"bogus": 1}, progress=False)
    with pytest.raises(ValueError, match="listed twice"):
        run_coverage(["gpt2", "gpt2"], progress=False)
    with pytest.raises(ValueError, match="new_tokens"):
        run_coverage(["gpt2"], options={"new_tokens": 0}, progress=False)


def test_summary_says_which_checks_did_not_run():
    reports = [Report("a", outcomes={"generate": Outcome(PASS), "compiled": Outcome(SKIP, "not requested"),
                                     "train": Outcome(SKIP, "not requested")})]
    line = rpt.summary_line(reports)
    assert "compiled static-cache generate not run" in line and "train step not run" in line
    assert line.endswith("1 architecture")


def test_outcome_status_is_checked_and_reports_round_trip_through_json():
    import json

    with pytest.raises(ValueError, match="status must be one of"):
        Outcome("passed")
    report = Report("llama", "LlamaForCausalLM", 1234, {"generate": Outcome(PASS, "", 1.5e-7),
                                                        "compiled": Outcome(SKIP, "not requested"),
                                                        "train": Outcome(CPU_FAIL, "RuntimeError: x")}, 2.5)
    back = Report.from_dict(json.loads(json.dumps(report.to_dict())))
    assert back == report
    assert rpt.summarize([report]).not_run == ("compiled",)


def test_compat_list_applies_only(capsys):
    from torch_neuronx.cli.main import main

    assert main(["compat", "--family", "encoder,seq2seq", "--only", "bert,t5", "--list"]) == 0
    out = capsys.readouterr().out.split()
    assert out[0] == "#" and out[1] == "encoder" and "BertForMaskedLM" in out
    assert out[out.index("seq2seq") - 1:] == ["#", "seq2seq", "t5"]
    assert not {"RobertaForMaskedLM", "bart"} & set(out)


def test_timed_out_row_names_its_class():
    from torch_neuronx.model_coverage import run_coverage

    for family, entry, cls in (("seq2seq", "t5", "T5ForConditionalGeneration"),
                               ("diffusers", "AutoencoderKL", "AutoencoderKL")):
        [report] = run_coverage([entry], family=family, jobs=1, timeout=0.05, progress=False)
        assert report.model_class == cls
        assert {o.reason for o in report.outcomes.values()} == {"timed out after 0 s"}


def test_families_are_queued_costliest_first():
    from torch_neuronx.model_coverage.runner import COST_ORDER, FamilyRun, queue_order

    runs = [FamilyRun("encoder", ["e1", "e2"]), FamilyRun("diffusers", ["d1"]), FamilyRun("causal-lm", ["c1", "c2"])]
    assert queue_order(runs) == [(1, 0), (2, 0), (2, 1), (0, 0), (0, 1)]
    assert COST_ORDER[0] == "diffusers" and COST_ORDER[-1] == "encoder"
    from torch_neuronx.model_coverage.families import FAMILIES

    assert set(COST_ORDER) == set(FAMILIES)


def test_one_worker_serves_several_families(monkeypatch):
    """The families share the workers: one worker process is started for entries of two families, each
    entry is checked by its own family with that family's options, and each family's run is reported
    done (with its reports in the given order) once its last entry has finished."""
    from torch_neuronx.model_coverage import runner

    starts = []
    start = runner._Worker.start

    def counted(self):
        starts.append(self.device)
        return start(self)

    monkeypatch.setattr(runner._Worker, "start", counted)
    done = []
    runs = [runner.FamilyRun("encoder", ["BertForMaskedLM"], {"checks": ["forward"]}),
            runner.FamilyRun("seq2seq", ["marian"], {"checks": ["generate"], "new_tokens": 2})]
    runner.run_families(runs, jobs=1, timeout=600, progress=False, on_family_done=lambda r: done.append(r.family))
    assert len(starts) == 1
    assert done == ["encoder", "seq2seq"] or done == ["seq2seq", "encoder"]
    [bert], [marian] = runs[0].reports, runs[1].reports
    assert bert.model_type == "BertForMaskedLM" and bert.outcomes["forward"].status == PASS
    assert bert.outcomes["train"].status == SKIP
    assert marian.model_type == "marian" and marian.outcomes["generate"].status == PASS
    assert marian.outcomes["compiled"].status == SKIP
    assert all(r.seconds > 0 and r.worker_seconds == sum(x.seconds for x in r.reports) for r in runs)
    with pytest.raises(ValueError, match="families listed twice"):
        runner.run_families([runner.FamilyRun("encoder", []), runner.FamilyRun("encoder", [])], progress=False)
