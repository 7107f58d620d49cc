"""One platform table: the device, its topology, the NKI simulator and its cost model, and the estimator
(``torch_neuronx.estimate``) read the same numbers for every platform, and those numbers are the published ones.

The checks that need a device of each platform run in one fresh interpreter that reloads the
topology per case with ``torch_neuronx._state.load_topology()`` (what ``import torch`` does), so the
``neuron`` device of the test process is never changed.
"""
import json

import pytest

from torch_neuronx.runtime.platforms import PLATFORMS, SOURCES, get_platform, platform_from_env

KiB, GiB = 1 << 10, 1 << 30

# (platform, LNC) cases the device is loaded with in the subprocess; LNC None = the platform default.
CASES = [("trn1", None), ("trn2", None), ("trn2", "1"), ("trn3", None), ("inf2", None)]

_PROBE = r"""
import json, os
import numpy as np
import torch
import torch_neuronx
from torch_neuronx import _state, nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki.simulator import NeuronCoreSim

from torch_neuronx.nki.errors import err_buffer_capacity_exceeded
from torch_neuronx.nki.platforms import default_platform
from torch_neuronx.runtime.platforms import get_platform
from torch_neuronx.estimate.roofline import Roofline
from torch_neuronx.estimate.calibration import default_constants

@nki.jit
def copy_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out

@nki.jit
def big_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    scratch = nl.zeros((128, 50 * 1024), dtype=nl.float32)      # 200 KiB per partition
    nl.store(out, value=nl.load(a))
    return out

@torch_neuronx.nki_op("probe::big", mutates_args=())
def big_op(a: torch.Tensor) -> torch.Tensor:
    return big_kernel(a)

def load(platform, lnc=None, chips=None):
    os.environ["TORCH_NEURONX_PLATFORM"] = platform
    for var, value in (("NEURON_LOGICAL_NC_CONFIG", lnc), ("TORCH_NEURONX_CHIPS", chips)):
        os.environ.pop(var, None)
        if value:
            os.environ[var] = value
    _state.load_topology()

result = {"cases": [], "nki_op": {}}
for name, lnc in json.loads(os.environ["CASES"]):
    load(name, lnc)
    props = torch.neuron.get_device_properties(0)
    sim = NeuronCoreSim()                                  # the default platform: the device's
    bench = nki.benchmark(copy_kernel)
    bench(np.zeros((128, 512), np.float32))
    r = bench.benchmark_result
    result["cases"].append(dict(
        name=name, lnc=props.lnc, platform=props.platform, core_version=props.core_version,
        capability=list(torch.neuron.get_device_capability(0)),
        total_memory=props.total_memory, topology_hbm=_state.topology.hbm_bytes_per_core,
        sbuf_bytes=props.sbuf_bytes, psum_bytes=props.psum_bytes,
        bf16_tflops=props.bf16_tflops, fp32_tflops=props.fp32_tflops, hbm_bandwidth=props.hbm_bandwidth,
        sim_platform=sim.platform.name, sim_capacity=sim.allocator.capacity,
        sim_ns_per_1000_cycles={e: sim.timeline.cycles_to_ns(e, 1000)
                                for e in ("tensor", "vector", "scalar", "gpsimd")},
        bench_platform=r.platform, bench_peak_bf16_tflops=r.peak_tflops_bf16,
        nc_version=nisa.get_nc_version().value,
        arch_list=torch.neuron.get_arch_list(),
        # the estimator's roofline of one logical core of the same platform and LNC
        est=(lambda rf: dict(peak_bf16=rf.peak_flops("bfloat16"), capacity=rf.hbm_capacity_bytes,
                             hbm_bandwidth=rf.hbm_peak_bytes_per_s,
                             tensor_ns_512_cycles=rf.matmul_seconds(512, 128, 128, "bfloat16") * 1e9 * props.lnc,
                             vector_ns_1000_fp32=rf.engine_seconds("vector", 1000 * 256, "float32") * 1e9 * props.lnc))(
            Roofline(get_platform(name), props.lnc, default_constants())),
    ))

# an nki_op on the device is checked against the device platform's SBUF
for name in ("trn1", "trn2"):
    load(name)
    try:
        y = big_op(torch.ones(128, 4, device="neuron"))
        result["nki_op"][name] = ["ok", float(y.sum())]
    except err_buffer_capacity_exceeded as e:
        result["nki_op"][name] = ["rejected", f"on {name}" in str(e)]

# no valid device (0 chips): NKI reads TORCH_NEURONX_PLATFORM when asked, not at import
load("trn1", chips="0")
first = [torch.neuron.is_available(), default_platform().name]
os.environ["TORCH_NEURONX_PLATFORM"] = "trn3"
result["no_device"] = first + [default_platform().name, nisa.get_nc_version().name]
print(json.dumps(result))
"""


_PROBED: dict = {}


@pytest.fixture
def probed(py):
    """What the probe interpreter saw (run once for the module)."""
    if not _PROBED:
        r = py(_PROBE, env={"CASES": json.dumps(CASES), "TORCH_NEURONX_NKI_PLATFORM": "trn1"})
        assert r.returncode == 0, r.stderr
        result = json.loads(r.stdout.strip().splitlines()[-1])
        result["cases"] = dict(zip(map(tuple, CASES), result["cases"], strict=True))
        _PROBED.update(result)
    return _PROBED


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-lnc{lnc or 'default'}" for n, lnc in CASES])
def test_device_topology_and_nki_read_the_same_row(probed, case):
    got = probed["cases"][case]
    p = PLATFORMS[case[0]]
    lnc = got["lnc"]
    assert lnc == int(case[1] or p.chip.default_lnc)
    # the simulator and the benchmark follow the device's platform (TORCH_NEURONX_NKI_PLATFORM=trn1 in
    # the environment is not a variable of this project and changes nothing)
    assert got["platform"] == got["sim_platform"] == got["bench_platform"] == case[0]
    # HBM: the topology's share per logical core = the simulator's share per physical core x LNC
    assert got["total_memory"] == got["topology_hbm"] == got["sim_capacity"]["hbm"] * lnc
    assert got["topology_hbm"] == p.chip.hbm_bytes * lnc // p.chip.physical_cores
    # SBUF / PSUM: per partition in the simulator, per logical core on the device
    assert got["sbuf_bytes"] == got["sim_capacity"]["sbuf"] * p.core.partitions * lnc
    assert got["psum_bytes"] == got["sim_capacity"]["psum"] * p.core.partitions * lnc
    assert got["sim_capacity"]["sbuf"] == p.core.sbuf_bytes_per_partition
    # peak FLOPs: the cost model's Tensor Engine peak x LNC is the device's
    assert got["bf16_tflops"] == pytest.approx(got["bench_peak_bf16_tflops"] * lnc)
    assert got["bench_peak_bf16_tflops"] * 1e12 == p.core.tensor.peak_flops("bfloat16")
    assert got["fp32_tflops"] * 1e12 == pytest.approx(p.core.tensor.peak_flops("float32") * lnc)
    assert got["hbm_bandwidth"] == pytest.approx(p.chip.hbm_bytes_per_s * lnc / p.chip.physical_cores)
    # clocks of the cost model are the table's
    for engine, ns in got["sim_ns_per_1000_cycles"].items():
        assert ns == pytest.approx(1000 / p.core.clock_hz(engine) * 1e9)
    # the estimator's roofline: the device's peak, capacity and bandwidth per logical core, and the simulator's
    # Tensor Engine clock (a 512-cycle matmul tile takes 512 cycles on each of the LNC engines)
    est = got["est"]
    assert est["peak_bf16"] == pytest.approx(got["bf16_tflops"] * 1e12)
    assert est["capacity"] == got["total_memory"]
    assert est["hbm_bandwidth"] == pytest.approx(got["hbm_bandwidth"])
    assert est["tensor_ns_512_cycles"] == pytest.approx(got["sim_ns_per_1000_cycles"]["tensor"] * 512 / 1000)
    # 256 fp32 elements per Vector cycle on v3/v4, 128 on v2: 1000 cycles' worth of elements
    lanes = p.core.vector.elements_per_cycle
    assert est["vector_ns_1000_fp32"] == pytest.approx(got["sim_ns_per_1000_cycles"]["vector"] * 256 / lanes)
    # one generation number everywhere: table, device capability, nisa.get_nc_version
    assert got["nc_version"] == got["capability"][0] == p.core.generation
    assert got["core_version"] == p.core.version in got["arch_list"]


@pytest.mark.parametrize("name,sbuf_kib,tensor_ghz,vector_ghz,bf16_tflops,hbm_gib,cores,nc", [
    ("trn1", 192, 2.8, 1.12, 92, 32, 2, "NeuronCore-v2"),
    ("trn2", 224, 2.4, 0.96, 79, 96, 8, "NeuronCore-v3"),
    ("trn3", 256, 2.4, 1.2, 79, 144, 8, "NeuronCore-v4"),
    ("inf2", 192, 2.8, 1.12, 92, 32, 2, "NeuronCore-v2"),
])
def test_published_numbers(name, sbuf_kib, tensor_ghz, vector_ghz, bf16_tflops, hbm_gib, cores, nc):
    p = PLATFORMS[name]
    assert p.core.version == nc and p.chip.physical_cores == cores and p.chip.hbm_bytes == hbm_gib * GiB
    assert p.core.sbuf_bytes_per_partition == sbuf_kib * KiB and p.core.partitions == 128
    assert p.core.psum_bytes_per_partition == 16 * KiB and p.core.psum_banks == 8
    assert p.core.tensor.clock_hz == tensor_ghz * 1e9 and p.core.vector.clock_hz == vector_ghz * 1e9
    assert p.core.tensor.peak_flops("bfloat16") == bf16_tflops * 1e12
    assert p.core.min_ii_cycles == 64 and p.core.dma.engines == 16


@pytest.mark.parametrize("name", list(PLATFORMS))
def test_tensor_engine_peak_is_what_its_array_and_clock_give(name):
    # The per-core figure AWS publishes (92 on v2, 79 on v3/v4) is 128 x 128 x 2 FLOP x clock within 1 %;
    # the chip figure is higher than cores x per-core (trn2: 667 > 8 x 79 = 632), as the table explains.
    p = PLATFORMS[name]
    assert p.core.tensor.peak_flops("bf16") == pytest.approx(p.core.tensor.array_flops, rel=0.01)
    assert p.chip.peak_flops("bfloat16") >= p.core.tensor.peak_flops("bfloat16") * p.chip.physical_cores


def test_every_number_cites_a_source():
    seen = set()

    def check(spec):
        for key in spec.sources:
            assert key in SOURCES, f"{type(spec).__name__} cites unknown source {key!r}"
            seen.add(key)

    for p in PLATFORMS.values():
        core = p.core
        for spec in (p.chip, core, core.tensor, core.vector, core.scalar, core.gpsimd, core.dma,
                     p.interconnect, p.runtime, *p.instances):
            check(spec)
            assert spec.sources, f"{type(spec).__name__} of {p.name} cites nothing"
    assert seen == set(SOURCES), f"sources no spec cites: {sorted(set(SOURCES) - seen)}"


def test_instances():
    assert PLATFORMS["trn2"].instance("trn2.48xlarge").chips == 16
    assert PLATFORMS["trn2"].instance("trn2.3xlarge").chips == 1
    assert PLATFORMS["trn1"].instance("trn1n.32xlarge").efa_bits_per_s == 1600e9
    assert PLATFORMS["trn1"].instance("trn1.32xlarge").ri_effective_usd_per_hour == 8.197
    assert [i.chips for i in PLATFORMS["trn3"].instances] == [64, 144]
    # on-demand prices where AWS (or, for trn1n, Hugging Face) published them; none for Trn2/Trn3
    assert {i.name: i.on_demand_usd_per_hour for p in PLATFORMS.values() for i in p.instances
            if i.on_demand_usd_per_hour is not None} == {
        "trn1.2xlarge": 1.34, "trn1.32xlarge": 21.50, "trn1n.32xlarge": 24.78, "inf2.xlarge": 0.758,
        "inf2.8xlarge": 1.97, "inf2.24xlarge": 6.49, "inf2.48xlarge": 12.981}
    assert all(p.runtime.sync_launch_overhead_s == 437e-6 for p in PLATFORMS.values())
    with pytest.raises(ValueError, match="trn2.48xlarge"):
        PLATFORMS["trn2"].instance("trn2.96xlarge")


def test_platform_variable_is_read_when_asked():
    assert platform_from_env({}).name == "trn2"
    assert platform_from_env({"TORCH_NEURONX_PLATFORM": " TRN3 "}).name == "trn3"
    with pytest.raises(ValueError, match="TORCH_NEURONX_PLATFORM='trn9' is not a platform: use one of trn1"):
        platform_from_env({"TORCH_NEURONX_PLATFORM": "trn9"})
    with pytest.raises(ValueError, match="unknown platform 'p5'"):
        get_platform("p5")
    with pytest.raises(ValueError, match="float64"):
        PLATFORMS["trn3"].chip.peak_flops("float64")


def test_nki_op_on_a_trn1_device_is_checked_against_trn1_sbuf(probed):
    # 200 KiB per partition fits trn2's 224 KiB SBUF partitions, not trn1's 192 KiB.
    assert probed["nki_op"] == {"trn1": ["rejected", True], "trn2": ["ok", 512.0]}


def test_nki_without_a_device_follows_the_variable_at_call_time(probed):
    # An invalid topology (0 chips) leaves no device: NKI then reads TORCH_NEURONX_PLATFORM when a
    # kernel runs, not when it was imported.
    assert probed["no_device"] == [False, "trn1", "trn3", "gen4"]


def test_nc_version_knows_every_listed_arch():
    import torch
    import torch_neuronx.nki.isa as nisa

    listed = torch.neuron.get_arch_list()
    assert listed == sorted({p.core.version for p in PLATFORMS.values()}) == \
        ["NeuronCore-v2", "NeuronCore-v3", "NeuronCore-v4"]
    assert [nisa.nc_version(int(a.rsplit("v", 1)[1])).name for a in listed] == ["gen2", "gen3", "gen4"]
