"""TorchNeuron's rendezvous rules: current device = LOCAL_RANK, NEURON_RT_VISIBLE_CORES
and NEURON_RT_ROOT_COMM_ID derived from torchrun's variables when absent, clear errors
for more local processes than cores or two ranks on one core, and the TP-degree check."""
from __future__ import annotations

import re
import subprocess
import sys
import warnings

import pytest
import torch
from transformers import LlamaConfig

from .launch import REPO, free_port, job_env, report, torchrun
from torch_neuronx.distributed import (
    RendezvousError,
    RendezvousWarning,
    TensorParallelDegreeError,
    apply_launcher_environment,
    check_local_processes,
    check_tp_degree,
)
from torch_neuronx.distributed.rendezvous import fill_root_comm_id, root_comm_id_from_store


def test_backend_is_registered_for_neuron():
    import torch.distributed as dist
    import torch_neuronx.distributed

    torch_neuronx.distributed.register()
    torch_neuronx.distributed.register()  # idempotent
    assert "neuron" in dist.Backend.backend_list
    assert dist.Backend.default_device_backend_map["neuron"] == "neuron"


def test_backend_is_available_after_import_torch(py):
    # Needs torch_neuronx's autoload to call torch_neuronx.distributed.register().
    proc = py("import torch.distributed as dist; "
              "print('neuron' in dist.Backend.backend_list, dist.Backend.default_device_backend_map.get('neuron'))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "neuron"], proc.stdout


def test_launcher_variables_fill_neuron_runtime_variables():
    env = {"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "29500"}
    assert apply_launcher_environment(env) == {
        "NEURON_RT_VISIBLE_CORES": "1", "NEURON_RT_ROOT_COMM_ID": "10.0.0.7:29500"}
    assert env["NEURON_RT_VISIBLE_CORES"] == "1"
    given = {"LOCAL_RANK": "0", "MASTER_ADDR": "h", "NEURON_RT_VISIBLE_CORES": "0",
             "NEURON_RT_ROOT_COMM_ID": "root:1"}
    assert apply_launcher_environment(given) == {}
    assert given["NEURON_RT_ROOT_COMM_ID"] == "root:1"


def test_what_the_rendezvous_sets_is_logged(caplog):
    import logging

    env = {"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "29500"}
    logger = logging.getLogger("torch_neuronx.distributed.rendezvous")
    logger.addHandler(caplog.handler)     # also when TORCH_NEURONX_LOG_LEVEL stopped propagation to the root
    try:
        with caplog.at_level("INFO", logger=logger.name):
            apply_launcher_environment(env)
    finally:
        logger.removeHandler(caplog.handler)
    messages = {r.getMessage() for r in caplog.records if r.name == logger.name}
    assert messages == {"LOCAL_RANK=1 drives neuron:1; set NEURON_RT_VISIBLE_CORES=1 "
                        "NEURON_RT_ROOT_COMM_ID=10.0.0.7:29500"}, messages


def test_more_local_processes_than_cores_is_an_error():
    cores = torch.neuron.device_count()
    with pytest.raises(RendezvousError, match=rf"runs {cores + 1} processes .* only {cores} logical NeuronCore"):
        check_local_processes({"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": str(cores + 1)})
    check_local_processes({"LOCAL_RANK": str(cores - 1), "LOCAL_WORLD_SIZE": str(cores)})


def test_tp_degree_must_divide_heads_and_kv_heads():
    config = LlamaConfig(num_attention_heads=8, num_key_value_heads=2, hidden_size=64)
    check_tp_degree(config, 2)
    with pytest.raises(TensorParallelDegreeError, match=r"tp_size=4 does not divide num_key_value_heads=2"):
        check_tp_degree(config, 4)
    with pytest.raises(TensorParallelDegreeError, match=r"tp_size=3 does not divide num_attention_heads=8"):
        check_tp_degree(config, 3)


@pytest.mark.parametrize("tp_size", ["2", 2.0, True])
def test_tp_degree_that_is_not_an_int_is_named(tp_size):
    # "2" failed with "'<' not supported between 'str' and 'int'"; 2.0 and True (as 1) passed the check
    config = LlamaConfig(num_attention_heads=8, num_key_value_heads=2, hidden_size=64)
    with pytest.raises(TypeError, match=r"tp_size=.*: the tensor-parallel degree is an int"):
        check_tp_degree(config, tp_size)


def test_torchrun_ranks_drive_their_local_core():
    proc = torchrun("rendezvous_env", 2)
    assert proc.returncode == 0, report(proc)
    rows = {int(r): rest for r, rest in re.findall(r"\[rank (\d)\] ENV (.*)", proc.stdout)}
    for rank in (0, 1):
        device, visible, root, current = rows[rank].split()
        assert (device, visible, current) == (f"neuron:{rank}", str(rank), str(rank)), rows
        assert re.fullmatch(r"127\.0\.0\.1:\d+", root), rows


@pytest.mark.parametrize("n,visible", [(1, ["0", "1"]), (2, ["0-1", "2-3"])])
def test_torchrun_with_num_cores_gives_each_rank_its_own_cores(n, visible):
    # NEURON_RT_NUM_CORES=N: the Neuron runtime reserves N free cores per process; rank r takes
    # block r, drives its first core as neuron:0, and children see the same block.
    proc = torchrun("rendezvous_env", 2, env={"NEURON_RT_NUM_CORES": str(n)})
    assert proc.returncode == 0, report(proc)
    rows = {int(r): rest.split() for r, rest in re.findall(r"\[rank (\d)\] ENV (.*)", proc.stdout)}
    assert {r: (row[0], row[1], row[3]) for r, row in rows.items()} == {
        0: ("neuron:0", visible[0], "0"), 1: ("neuron:0", visible[1], "0")}, report(proc)


def test_torchrun_with_more_num_cores_blocks_than_cores_is_an_error():
    # Rank 2 fails at import (its block, cores 4-5, does not exist), ranks 0 and 1 at the rendezvous
    # (3 x 2 cores on 4); torchrun stops the others with SIGTERM as soon as one rank fails, so which
    # message is printed depends on which rank fails first. Each message alone is tested in
    # tests/test_topology.py; here the job must fail with at least one of them.
    proc = torchrun("rendezvous_env", 3, env={"NEURON_RT_NUM_CORES": "2"})
    assert proc.returncode != 0
    named = ["each takes NEURON_RT_NUM_CORES=2 logical NeuronCore(s), 6 in all",
             "NEURON_RT_NUM_CORES=2 with LOCAL_RANK=2"]
    assert any(m in proc.stderr for m in named), report(proc)


def test_num_cores_from_one_visible_list_for_every_rank_is_an_error_not_a_shared_core():
    # NEURON_RT_VISIBLE_CORES given to every rank: NEURON_RT_NUM_CORES=1 takes its first core in each
    # process, so the ranks would share core 0; the rendezvous refuses that by name.
    proc = torchrun("rendezvous_env", 2, env={"NEURON_RT_VISIBLE_CORES": "0-3", "NEURON_RT_NUM_CORES": "1"})
    assert proc.returncode != 0
    assert "ranks [0, 1] all drive logical NeuronCore 0" in proc.stderr, report(proc)


def test_two_ranks_on_one_core_is_an_error():
    proc = torchrun("rendezvous_env", 2, env={"NEURON_RT_VISIBLE_CORES": "0"})
    assert proc.returncode != 0
    # Both ranks raise; their stderr lines may interleave, so check the pieces.
    assert "RendezvousError" in proc.stderr, report(proc)
    assert "ranks [0, 1] all drive logical NeuronCore 0" in proc.stderr, report(proc)


def _spawn_launch(case: str) -> tuple[subprocess.CompletedProcess, int]:
    port = free_port()
    proc = subprocess.run([sys.executable, "-m", "tests.distributed.workers.spawn_launch", case, str(port)],
                          env=job_env(), cwd=REPO, capture_output=True, text=True, timeout=240)
    return proc, port


def test_mp_spawn_with_set_device_drives_one_core_per_rank_and_fills_root_comm_id():
    # The CUDA idiom: no LOCAL_RANK, each rank picks its core with set_device; Ray-style tcp://
    # rendezvous without MASTER_ADDR fills NEURON_RT_ROOT_COMM_ID from the store's address.
    proc, port = _spawn_launch("set_device")
    assert proc.returncode == 0, report(proc)
    rows = sorted(re.findall(r"RESULT (\d) (\S+) (\S+) (\S+)", proc.stdout))
    assert rows == [("0", "neuron:0", "3.0", f"127.0.0.1:{port}"),
                    ("1", "neuron:1", "3.0", f"127.0.0.1:{port}")], report(proc)


def test_mp_spawn_ranks_on_the_same_device_is_an_error():
    proc, _ = _spawn_launch("same_device")
    assert proc.returncode == 0, report(proc)
    errors = re.findall(r"ERROR (\d) (\w+): (.*)", proc.stdout)
    assert sorted(r for r, *_ in errors) == ["0", "1"], report(proc)
    for _, kind, message in errors:
        assert kind == "RendezvousError"
        assert "ranks [0, 1] all drive logical NeuronCore 0" in message
        assert "torch.neuron.set_device" in message


def test_root_comm_id_comes_from_the_tcp_store_under_prefix_stores():
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
    wrapped = dist.PrefixStore("default_pg", dist.PrefixStore("0", store))
    assert root_comm_id_from_store(wrapped) == f"127.0.0.1:{store.port}"
    env: dict[str, str] = {}
    assert fill_root_comm_id(wrapped, 2, env) == f"127.0.0.1:{store.port}"
    assert env == {"NEURON_RT_ROOT_COMM_ID": f"127.0.0.1:{store.port}"}
    given = {"NEURON_RT_ROOT_COMM_ID": "root:1"}
    assert fill_root_comm_id(wrapped, 2, given) is None and given == {"NEURON_RT_ROOT_COMM_ID": "root:1"}


def test_file_store_rendezvous_warns_what_trainium_needs(tmp_path):
    import torch.distributed as dist

    store = dist.FileStore(str(tmp_path / "store"), 2)
    env: dict[str, str] = {}
    with pytest.warns(RendezvousWarning, match=r"NEURON_RT_ROOT_COMM_ID=<rank-0 host>:<port>.*FileStore|"
                                               r"FileStore.*NEURON_RT_ROOT_COMM_ID=<rank-0 host>:<port>"):
        assert fill_root_comm_id(store, 2, env) is None
    assert env == {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fill_root_comm_id(dist.FileStore(str(tmp_path / "one"), 1), 1, env) is None  # one rank: no root


def test_tp_degree_not_dividing_heads_is_caught_before_the_forward(tmp_path):
    # transformers shards q/k/v of an 8-head model over 3 ranks unevenly and would fail in a reshape;
    # the device sees the "tp" mesh and the sharded parameters and raises check_tp_degree's error.
    proc = torchrun("tp_degree", 3, str(tmp_path / "llama8"))
    assert proc.returncode == 0, report(proc)
    for kind in ("ERROR", "COMPILED_ERROR"):
        errors = dict(re.findall(rf"\[rank (\d)\] {kind} (.*)", proc.stdout))
        assert sorted(errors) == ["0", "1", "2"], report(proc)
        for message in errors.values():
            assert message.startswith("TensorParallelDegreeError: tp_size=3 does not divide num_attention_heads=8")
            assert "Use a tp_size among [1, 2, 4, 8]" in message
