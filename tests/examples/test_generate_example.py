"""``examples/generate.py`` runs as a script on the tiny Llama: greedy generation with a static
cache on neuron (transformers compiles the decode step with backend "neuron") gives exactly the
tokens of eager CPU (``--compare-cpu``)."""
from __future__ import annotations

import re

from .examples_run import cold_compile_cache, report, run_example


def test_generate_static_cache_matches_cpu(small_assets, tmp_path):
    proc = run_example("generate.py", "--model", str(small_assets / "model"), "--compare-cpu", "--max-new-tokens", "12",
                       env={"TORCH_NEURONX_NEFF_CACHE_DIR": cold_compile_cache(tmp_path / "neff-cache")})
    assert proc.returncode == 0, report(proc)
    assert re.search(r"on neuron:0 \(float32\); compile backend 'neuron'", proc.stdout), report(proc)
    assert "CPU MATCH: all 24 tokens equal" in proc.stdout, report(proc)  # 2 prompts x 12 tokens
    rows = re.findall(r"TOKENS \[([\d, ]+)\]", proc.stdout)
    assert len(rows) == 2 and all(len(r.split(",")) == 12 for r in rows), rows
    first, second = map(float, re.search(r"#1 \(with compile\): ([\d.]+) s\n.*#2: ([\d.]+) s",
                                         proc.stdout).groups())
    assert second < first, (first, second)  # the second call reuses the compiled decode step
