"""Software NeuronCore topology from the environment (platform, chips, LNC, visible cores, HBM)."""
import pytest

from torch_neuronx.runtime import TopologyError, parse_bytes, parse_core_list, read_topology

GiB = 1 << 30


def test_defaults_trn2_lnc2():
    t = read_topology({})
    assert (t.platform.name, t.chips, t.lnc, t.device_count) == ("trn2", 1, 2, 4)
    assert t.hbm_bytes_per_core == 24 * GiB


@pytest.mark.parametrize("env,count,hbm", [
    ({"NEURON_LOGICAL_NC_CONFIG": "1"}, 8, 12 * GiB),
    ({"NEURON_RT_VIRTUAL_CORE_SIZE": "1"}, 8, 12 * GiB),          # the runtime's name for the LNC
    ({"NEURON_RT_VIRTUAL_CORE_SIZE": "2", "NEURON_LOGICAL_NC_CONFIG": "2"}, 4, 24 * GiB),
    ({"NEURON_RT_VIRTUAL_CORE_SIZE": "2", "NEURON_RT_NUM_CORES": "4", "TORCH_NEURONX_CHIPS": "2"}, 4, 24 * GiB),
    ({"TORCH_NEURONX_CHIPS": "2"}, 8, 24 * GiB),
    ({"TORCH_NEURONX_PLATFORM": "trn1"}, 2, 16 * GiB),
    ({"TORCH_NEURONX_PLATFORM": "trn3"}, 4, 36 * GiB),
    ({"NEURON_RT_VISIBLE_CORES": "1"}, 1, 24 * GiB),
    ({"NEURON_RT_VISIBLE_CORES": "0,2"}, 2, 24 * GiB),
    ({"TORCH_NEURONX_HBM_PER_CORE": "64MiB"}, 4, 64 << 20),
])
def test_variables(env, count, hbm):
    t = read_topology(env)
    assert t.device_count == count
    assert t.hbm_bytes_per_core == hbm


def test_visible_cores_are_renumbered():
    t = read_topology({"NEURON_RT_VISIBLE_CORES": "2-3", "TORCH_NEURONX_CHIPS": "1"})
    assert t.visible_cores == (2, 3)


@pytest.mark.parametrize("text,expected", [
    ("64MiB", 64 << 20), ("2GiB", 2 << 30), ("1.5GB", 1_500_000_000), ("1048576", 1 << 20), ("512 kib", 512 << 10),
])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("env,needle", [
    ({"TORCH_NEURONX_PLATFORM": "trn9"}, "TORCH_NEURONX_PLATFORM"),
    ({"TORCH_NEURONX_CHIPS": "zero"}, "TORCH_NEURONX_CHIPS"),
    ({"TORCH_NEURONX_CHIPS": "0"}, "TORCH_NEURONX_CHIPS"),
    ({"NEURON_LOGICAL_NC_CONFIG": "4"}, "NEURON_LOGICAL_NC_CONFIG"),
    ({"NEURON_RT_VIRTUAL_CORE_SIZE": "4"}, "NEURON_RT_VIRTUAL_CORE_SIZE=4 is not supported on trn2"),
    ({"TORCH_NEURONX_PLATFORM": "trn1", "NEURON_RT_VIRTUAL_CORE_SIZE": "2"}, "NEURON_RT_VIRTUAL_CORE_SIZE=2"),
    ({"NEURON_RT_VIRTUAL_CORE_SIZE": "2", "NEURON_LOGICAL_NC_CONFIG": "1"}, "disagree"),
    ({"NEURON_RT_VIRTUAL_CORE_SIZE": "0"}, "NEURON_RT_VIRTUAL_CORE_SIZE"),
    ({"TORCH_NEURONX_PLATFORM": "trn1", "NEURON_LOGICAL_NC_CONFIG": "2"}, "NEURON_LOGICAL_NC_CONFIG"),
    ({"NEURON_RT_VISIBLE_CORES": "0-7"}, "NEURON_RT_VISIBLE_CORES"),
    ({"NEURON_RT_VISIBLE_CORES": "a,b"}, "NEURON_RT_VISIBLE_CORES"),
    ({"NEURON_RT_VISIBLE_CORES": "3-1"}, "NEURON_RT_VISIBLE_CORES"),
    ({"TORCH_NEURONX_HBM_PER_CORE": "lots"}, "TORCH_NEURONX_HBM_PER_CORE"),
    ({"LOCAL_RANK": "5"}, "LOCAL_RANK"),
    ({"LOCAL_RANK": "-2"}, "LOCAL_RANK=-2 is negative"),
    ({"TORCH_NEURONX_HBM_PER_CORE": "1.5"}, "must be whole"),
    ({"NEURON_RT_VISIBLE_CORES": "2,2"}, "more than once"),
])
def test_bad_values_name_the_variable(env, needle):
    with pytest.raises(TopologyError, match=needle):
        read_topology(env)


def test_local_rank_minus_one_means_a_single_process():
    """-1 is the usual "not one of several local processes" value (transformers'
    TrainingArguments.local_rank default): device 0, every core visible."""
    t = read_topology({"LOCAL_RANK": "-1"})
    assert (t.default_device, t.device_count) == (0, 4)
    assert read_topology({"LOCAL_RANK": "3"}).default_device == 3


def test_parse_core_list():
    assert parse_core_list("0-1,4", 8) == (0, 1, 4)


def test_local_rank_sets_current_device(py):
    r = py("import torch; print(torch.neuron.current_device(), torch.empty(1, device='neuron').device)",
           env={"LOCAL_RANK": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2 neuron:2"


def test_environment_reaches_device_properties(py):
    r = py("""
        import torch
        p = torch.neuron.get_device_properties(0)
        print(torch.neuron.device_count(), p.platform, p.lnc, p.total_memory, p.global_core_id)
    """, env={"TORCH_NEURONX_PLATFORM": "trn2", "NEURON_LOGICAL_NC_CONFIG": "1",
              "TORCH_NEURONX_CHIPS": "2", "NEURON_RT_VISIBLE_CORES": "9-12"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["4", "trn2", "1", str(12 * GiB), "9"]


def test_current_device_raises_for_an_invalid_environment(py):
    r = py("""
        import torch
        assert not torch.neuron.is_available() and torch.neuron.device_count() == 0
        try:
            torch.neuron.current_device()
        except RuntimeError as err:
            print("ERR", err)
    """, env={"LOCAL_RANK": "9"})
    assert r.returncode == 0, r.stderr
    assert "ERR neuron device unavailable: LOCAL_RANK=9" in r.stdout, r.stdout


@pytest.mark.parametrize("env,visible,default", [
    ({"NEURON_RT_NUM_CORES": "0"}, (0, 1, 2, 3), 0),                                   # 0 means all
    ({"NEURON_RT_NUM_CORES": "2"}, (0, 1), 0),                                         # first N
    ({"NEURON_RT_NUM_CORES": "1", "LOCAL_RANK": "2"}, (2,), 0),                        # block r
    ({"NEURON_RT_NUM_CORES": "2", "LOCAL_RANK": "1"}, (2, 3), 0),
    ({"NEURON_RT_NUM_CORES": "2", "LOCAL_RANK": "-1"}, (0, 1), 0),                     # -1: single process
    ({"NEURON_RT_NUM_CORES": "2", "NEURON_RT_VISIBLE_CORES": "1-3"}, (1, 2), 0),       # first N of the list
    ({"NEURON_RT_NUM_CORES": "2", "NEURON_RT_VISIBLE_CORES": "2-3", "LOCAL_RANK": "1"}, (2, 3), 0),
    ({"NEURON_RT_NUM_CORES": "3", "NEURON_LOGICAL_NC_CONFIG": "1", "LOCAL_RANK": "1"}, (3, 4, 5), 0),
])
def test_num_cores_takes_the_process_its_own_cores(env, visible, default):
    """NEURON_RT_NUM_CORES=N: the runtime reserves N free cores per process; under a launcher each
    LOCAL_RANK takes its own block [r*N, (r+1)*N), and the process drives the first of them."""
    t = read_topology(env)
    assert (t.visible_cores, t.default_device, t.device_count) == (visible, default, len(visible))
    assert t.core_block_from_rank == ("LOCAL_RANK" in env and env["LOCAL_RANK"] != "-1"
                                      and "NEURON_RT_VISIBLE_CORES" not in env)


def test_num_cores_blocks_of_a_launcher_never_overlap():
    blocks = [read_topology({"NEURON_RT_NUM_CORES": "2", "LOCAL_RANK": str(r), "TORCH_NEURONX_CHIPS": "2"})
              for r in range(4)]
    cores = [c for t in blocks for c in t.visible_cores]
    assert cores == list(range(8))


@pytest.mark.parametrize("env,needle", [
    ({"NEURON_RT_NUM_CORES": "two"}, "NEURON_RT_NUM_CORES='two' is not an integer: it is the number of logical "
                                     "NeuronCores the process takes, e.g. NEURON_RT_NUM_CORES=1"),
    ({"NEURON_RT_NUM_CORES": "-1"}, "NEURON_RT_NUM_CORES='-1' must be at least 0"),
    ({"NEURON_RT_NUM_CORES": "5"}, r"NEURON_RT_NUM_CORES=5 but the instance has only 4 .*lower it to at most 4"),
    ({"NEURON_RT_NUM_CORES": "3", "NEURON_RT_VISIBLE_CORES": "0,2"},
     r"NEURON_RT_NUM_CORES=3 but NEURON_RT_VISIBLE_CORES='0,2' names only 2"),
    ({"NEURON_RT_NUM_CORES": "2", "LOCAL_RANK": "2"},
     r"NEURON_RT_NUM_CORES=2 with LOCAL_RANK=2: this process would take logical NeuronCores 4-5, .* only 4"
     r".*at most 2 process\(es\) per node"),
])
def test_bad_num_cores_names_the_variable_and_the_fix(env, needle):
    with pytest.raises(TopologyError, match=needle):
        read_topology(env)


def test_num_cores_reaches_the_device_count(py):
    r = py("""
        import torch
        p = torch.neuron.get_device_properties(0)
        print(torch.neuron.device_count(), torch.neuron.current_device(), p.global_core_id)
    """, env={"NEURON_RT_NUM_CORES": "2", "LOCAL_RANK": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2", "0", "2"]
