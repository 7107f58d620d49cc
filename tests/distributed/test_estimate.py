"""torch_neuronx.estimate records each collective of the "neuron" process group once (the process group's
hook; the functional collective that reaches it is not counted a second time), with nccom-test's size."""
from __future__ import annotations

import json
import re

from .launch import report, torchrun


def test_neuron_process_group_collectives_are_recorded_once():
    proc = torchrun("estimate", 2)
    assert proc.returncode == 0, report(proc)
    found = dict(re.findall(r"\[rank (\d)\] ESTIMATE (\{.*?\})(?=\[rank|\s|$)", proc.stdout))
    assert set(found) == {"0", "1"}, report(proc)
    for rank, text in found.items():
        got = json.loads(text)
        calls = sorted(map(tuple, got["calls"]))
        p2p = ("send", 2, 1, 4096) if rank == "0" else ("recv", 2, 1, 4096)
        # 2 all-reduces of 4 KiB (dist + funcol), 1 all-gather of the 8 KiB output, one point-to-point
        assert calls == sorted([("all_gather", 2, 1, 8192), ("all_reduce", 2, 2, 4096), p2p]), (rank, calls)
        assert got["values"][1] == 4.0                      # the program's values are untouched
