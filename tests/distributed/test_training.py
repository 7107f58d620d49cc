"""DDP, FSDP1 (eager), FSDP2 fully_shard and DTensor colwise/rowwise tensor parallelism
train a tiny Llama on 4 ranks over backend "neuron"; every step's global loss matches
a single-process CPU run of the same model on the same batch to 1e-4, and each rank's
allocator accounted memory on its own core only."""
from __future__ import annotations

import re

from .launch import report, torchrun

MODES = ("ddp", "fsdp1", "fsdp2", "tp")


def test_llama_trains_on_4_ranks_like_cpu():
    proc = torchrun("train_llama", 4, *MODES, timeout=300)
    assert proc.returncode == 0, report(proc)
    rows = re.findall(r"LOSS (\w+) (\d) ([\d.]+) ([\d.]+)", proc.stdout)
    assert sorted({m for m, *_ in rows}) == sorted(MODES), report(proc)
    assert len(rows) == 3 * len(MODES), report(proc)
    for mode, step, got, want in rows:
        assert abs(float(got) - float(want)) <= 1e-4, f"{mode} step {step}: {got} vs CPU {want}"
    ref = [float(w) for m, _, _, w in rows if m == "ddp"]
    assert ref[0] > ref[1] > ref[2], f"the reference run does not learn: {ref}"
    memory = dict(re.findall(r"MEMORY neuron:(\d) (\d+)", proc.stdout))
    assert sorted(memory) == ["0", "1", "2", "3"] and all(int(v) > 0 for v in memory.values()), report(proc)
