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
