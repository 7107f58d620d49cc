"""Failure behaviour (workers/failure.py, 3 ranks): a collective that a live rank
never joins raises after the group's timeout, saying every rank is alive; a rank
SIGKILLed in the middle of a DDP step makes the two survivors raise within the
process-group timeout with an error naming rank 1; the same when the dead rank is
rank 0 (the store lives in torchrun's agent, so the survivors can still tell). Nothing
hangs."""
from __future__ import annotations

import re

from .launch import report, torchrun

PG_TIMEOUT_S = 10.0  # workers/failure.py


def test_timeout_and_dead_rank_raise_clear_errors():
    # The launcher's monitor (torchrun's default 0.1 s) SIGTERMs the survivors as soon as the victim
    # is dead; they ignore it until every survivor has printed its diagnosis (workers/failure.py).
    proc = torchrun("failure", 3, "1", timeout=300)
    assert proc.returncode != 0, "torchrun must report the killed rank\n" + report(proc)
    assert "exitcode  : -9" in proc.stderr and "rank      : 1" in proc.stderr, report(proc)

    timeout = re.search(r"\[rank 0\] TIMEOUT ([\d.]+) (\w+) (.*)", proc.stdout)
    assert timeout, report(proc)
    seconds, kind, message = float(timeout[1]), timeout[2], timeout[3]
    assert kind == "DistBackendError", message
    assert 3.0 <= seconds <= 3.0 + 4.0, f"3 s timeout took {seconds} s"
    assert "every rank of the group is alive" in message and "timeout 3 s" in message, message

    raised = dict((int(r), (float(s), m)) for r, s, m in
                  re.findall(r"\[rank (\d)\] RAISED ([\d.]+) (.*)", proc.stdout))
    assert sorted(raised) == [0, 2], report(proc)
    for rank, (seconds, message) in raised.items():
        assert seconds < PG_TIMEOUT_S, f"rank {rank} raised after {seconds} s"
        assert "DistBackendError" in message and "rank 1 stopped" in message, message


def test_dead_rank_0_is_named_by_the_survivors():
    proc = torchrun("failure", 3, "0", "--no-timeout-phase", timeout=300)
    assert "exitcode  : -9" in proc.stderr and "rank      : 0" in proc.stderr, report(proc)
    raised = dict((int(r), (float(s), m)) for r, s, m in
                  re.findall(r"\[rank (\d)\] RAISED ([\d.]+) (.*)", proc.stdout))
    assert sorted(raised) == [1, 2], report(proc)
    for rank, (seconds, message) in raised.items():
        assert seconds < PG_TIMEOUT_S, f"rank {rank} raised after {seconds} s"
        assert "DistBackendError" in message and "rank 0 stopped" in message, message
