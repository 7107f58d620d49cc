"""``examples/generate.py`` runs as a script on the tiny Llama: greedy generation with a static
cache on neuron (transformers compiles the decode step with backend "neuron") gives exactly the
tokens of eager CPU (``--compare-cpu``)."""
from __future__ import annotations

import re

from .examples_run import report, run_example, write_assets


def test_generate_static_cache_matches_cpu(tmp_path):
    model_dir, _ = write_assets(tmp_path / "tiny", hidden_size=64, num_layers=1)
    proc = run_example("generate.py", "--model", model_dir, "--compare-cpu", "--max-new-tokens", "12",
                       env={"TORCH_NEURONX_NEFF_CACHE_DIR": str(tmp_path / "neff-cache")})
    assert proc.returncode == 0, report(proc)
    assert re.search(r"on neuron:0 \(float32\); compile backend 'neuron'", proc.stdout), report(proc)
    assert "CPU MATCH: all 24 tokens equal" in proc.stdout, report(proc)  # 2 prompts x 12 tokens
    rows = re.findall(r"TOKENS \[([\d, ]+)\]", proc.stdout)
    assert len(rows) == 2 and all(len(r.split(",")) == 12 for r in rows), rows
    first, second = map(float, re.search(r"#1 \(with compile\): ([\d.]+) s\n.*#2: ([\d.]+) s",
                                         proc.stdout).groups())
    assert second < first, (first, second)  # the second call reuses the compiled decode step
