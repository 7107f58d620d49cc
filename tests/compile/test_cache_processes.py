"""The disk cache across processes: a second run compiles nothing (every graph a disk hit);
a corrupted entry is detected, reported and recompiled; two processes compiling the same
graphs at once compile each graph once (file lock) and both succeed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from torch_neuronx.compile import cache

SCRIPT = textwrap.dedent("""
    import json, torch
    import torch_neuronx.compile as tnc
    tnc.register()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to("neuron")
    step = torch.compile(model, backend="neuron")
    x = torch.randn(8, 16).to("neuron")
    loss = step(x).square().mean()          # forward + backward graphs
    loss.backward()
    with torch.no_grad():
        infer = step(torch.ones(4, 16, device="neuron")).sum()   # an inference graph (new shape)
    m = tnc.get_dynamo_metrics()
    print("METRICS " + json.dumps({"loss": loss.item(), "infer": infer.item(),
          "compiled": m["graphs_compiled"], "disk": m["cache_hits_disk"],
          "memory": m["cache_hits_memory"], "corrupt": m["cache_corrupt"]}))
""")


def _run(cache_dir, background=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_NEURONX_")}
    env["TORCH_NEURONX_NEFF_CACHE_DIR"] = str(cache_dir)
    args = [sys.executable, "-c", SCRIPT]
    if background:
        return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return _parse(subprocess.run(args, env=env, capture_output=True, text=True, timeout=400))


def _parse(proc):
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("METRICS ")][-1]
    return json.loads(line[len("METRICS "):]), proc.stderr


def test_second_process_hits_disk_and_corrupt_entry_recompiles(tmp_path):
    first, _ = _run(tmp_path)
    assert first["compiled"] == 3 and first["disk"] == 0  # forward, backward, inference

    second, _ = _run(tmp_path)
    assert second["compiled"] == 0 and second["disk"] == 3
    assert (second["loss"], second["infer"]) == (first["loss"], first["infer"])

    entries = cache.list_entries(tmp_path)
    assert len(entries) == 3
    victim = next(e for e in entries if e.kind == "backward")
    with open(victim.path, "r+b") as f:  # truncate one file
        f.truncate(victim.size_bytes // 2)

    third, stderr = _run(tmp_path)
    assert third["compiled"] == 1 and third["disk"] == 2
    assert [c["path"] for c in third["corrupt"]] == [str(victim.path)]
    assert "corrupt" in stderr and "recompiling graph" in stderr and victim.key[:16] in stderr
    assert third["loss"] == first["loss"]
    assert cache.verify_entries(tmp_path) == []  # rewritten


def test_two_processes_compile_the_same_graphs_at_once(tmp_path):
    procs = [_run(tmp_path, background=True) for _ in range(2)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=400)
        results.append(_parse(subprocess.CompletedProcess(p.args, p.returncode, out, err))[0])
    assert sum(r["compiled"] for r in results) == 3  # each graph compiled once in total
    assert sorted(r["compiled"] + r["disk"] + r["memory"] for r in results) == [3, 3]
    assert results[0]["loss"] == results[1]["loss"]
    assert cache.verify_entries(tmp_path) == [] and len(cache.list_entries(tmp_path)) == 3
