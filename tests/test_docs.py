"""The documents of ``docs/`` stay true to the code they describe.

* ``docs/TRAINIUM.md`` holds the platform table (:data:`torch_neuronx.runtime.platforms.PLATFORMS`)
  and the NKI tile limits (``nl.tile_size``) as Markdown tables. This file generates those tables
  from the code and checks that each appears in the document verbatim, so a number changed in the
  code and not in the document (or the other way round) fails here. To refresh the document after
  changing the table, print the tables and paste them over the old ones::

      python -m tests.test_docs

* ``docs/ARCHITECTURE.md`` describes every file of the package and of the C++ core: each Python
  module under ``torch_neuronx/`` must be named there by its path inside the package
  (``compile/cache_key.py``; a top-level module as ``torch_neuronx/_state.py``), each C++ file under
  ``csrc/`` by its path inside ``csrc/`` without the suffix (``aten/Fallback`` covers the header and
  the source; a file directly in ``csrc/`` by its repository path). A new file without a line in the
  architecture document fails here.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from torch_neuronx.runtime.platforms import GiB, KiB, MiB, PLATFORMS, SOURCES

REPO = Path(__file__).resolve().parents[1]


# --- formatting ----------------------------------------------------------------------------------
def _num(x: float) -> str:
    """A number without a trailing ``.0`` (``2.4``, ``79``, ``0.38``)."""
    return f"{x:g}" if float(x) != int(x) or abs(x) >= 1e6 else str(int(x))


def _bytes(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def _rate(bps: float | None) -> str:
    """Bytes per second as AWS states it: GiB/s when the value is a whole number of GiB/s, else
    decimal TB/s (at most two decimals) or GB/s."""
    if bps is None:
        return "—"
    if bps % GiB == 0:
        return f"{_num(bps / GiB)} GiB/s"
    if bps >= 1e12 and round(bps / 1e10, 6).is_integer():       # AWS's "1.28 TB/sec", not 1.024
        return f"{_num(round(bps / 1e12, 6))} TB/s"
    return f"{_num(round(bps / 1e9, 6))} GB/s"


def _ghz(hz: float) -> str:
    return f"{_num(hz / 1e9)} GHz"


def _tflops(table, key: str) -> str:
    return _num(table[key] / 1e12) if key in table else "—"


def _row(label: str, cells) -> str:
    return "| " + " | ".join([label, *map(str, cells)]) + " |"


def _table(header: list[str], rows: list[str]) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *rows])


def _sources(keys) -> str:
    return ", ".join(f"`{k}`" for k in keys)


# --- the tables ------------------------------------------------------------------------------------
def chip_table() -> str:
    """One column per platform: the chip, LNC and HBM numbers the device reads."""
    ps = list(PLATFORMS.values())
    rows = [
        _row("chip", [p.chip.name for p in ps]),
        _row("NeuronCore", [p.core.version for p in ps]),
        _row("physical NeuronCores per chip", [p.chip.physical_cores for p in ps]),
        _row("`NEURON_LOGICAL_NC_CONFIG` (LNC) allowed", [" or ".join(map(str, p.chip.lnc_choices)) for p in ps]),
        _row("LNC default", [p.chip.default_lnc for p in ps]),
        _row("logical NeuronCores per chip at the default LNC",
             [p.chip.physical_cores // p.chip.default_lnc for p in ps]),
        _row("HBM per chip", [_bytes(p.chip.hbm_bytes) for p in ps]),
        _row("HBM per logical core at the default LNC",
             [_bytes(p.chip.hbm_bytes // (p.chip.physical_cores // p.chip.default_lnc)) for p in ps]),
        _row("HBM per physical core (the NKI simulator's HBM)", [_bytes(p.hbm_bytes_per_physical_core) for p in ps]),
        _row("HBM bandwidth per chip", [_rate(p.chip.hbm_bytes_per_s) for p in ps]),
        _row("chip dense BF16/FP16/TF32 TFLOPS", [_tflops(p.chip.dense_flops, "bfloat16") for p in ps]),
        _row("chip dense FP8 TFLOPS", [_tflops(p.chip.dense_flops, "float8_e4m3") for p in ps]),
        _row("chip dense MXFP8/MXFP4 TFLOPS", [_tflops(p.chip.dense_flops, "mxfp8") for p in ps]),
        _row("chip FP32 TFLOPS", [_tflops(p.chip.dense_flops, "float32") for p in ps]),
        _row("DMA engines per chip", [p.chip.dma_engines for p in ps]),
        _row("DMA bandwidth per chip", [_rate(p.chip.dma_bytes_per_s) for p in ps]),
        _row("sources", [_sources(p.chip.sources) for p in ps]),
    ]
    return _table(["", *[f"`{p.name}`" for p in ps]], rows)


def _cores():
    """Each NeuronCore generation once, with the platforms that use it."""
    cores: dict[str, tuple] = {}
    for p in PLATFORMS.values():
        core, names = cores.get(p.core.version, (p.core, []))
        cores[p.core.version] = (core, names + [p.name])
    return list(cores.values())


def core_table() -> str:
    """One column per NeuronCore generation: engines, on-chip memories, DMA queues."""
    cs = _cores()

    def eng(e):
        lanes = str(e.elements_per_cycle)
        if e.fast_dtypes:
            lanes = f"{e.fast_elements_per_cycle} ({'/'.join(e.fast_dtypes)}), {e.elements_per_cycle} other"
        return lanes

    rows = [
        _row("platforms", [", ".join(f"`{n}`" for n in names) for _, names in cs]),
        _row("generation (`nisa.nc_version`, device capability)", [c.generation for c, _ in cs]),
        _row("partitions (SBUF and PSUM)", [c.partitions for c, _ in cs]),
        _row("SBUF per partition", [_bytes(c.sbuf_bytes_per_partition) for c, _ in cs]),
        _row("SBUF per core", [_bytes(c.sbuf_bytes) for c, _ in cs]),
        _row("PSUM per partition", [_bytes(c.psum_bytes_per_partition) for c, _ in cs]),
        _row("PSUM banks per partition", [f"{c.psum_banks} × {_bytes(c.psum_bank_bytes)}" for c, _ in cs]),
        _row("PSUM per core", [_bytes(c.psum_bytes) for c, _ in cs]),
        _row("Tensor Engine array", [f"{c.tensor.rows} × {c.tensor.cols}" for c, _ in cs]),
        _row("Tensor Engine clock", [_ghz(c.tensor.clock_hz) for c, _ in cs]),
        _row("Tensor Engine dense BF16/FP16/TF32 TFLOPS", [_tflops(c.tensor.dense_flops, "bfloat16") for c, _ in cs]),
        _row("Tensor Engine dense FP8 TFLOPS", [_tflops(c.tensor.dense_flops, "float8_e4m3") for c, _ in cs]),
        _row("Tensor Engine dense MXFP8/MXFP4 TFLOPS", [_tflops(c.tensor.dense_flops, "mxfp8") for c, _ in cs]),
        _row("Tensor Engine FP32 TFLOPS", [_tflops(c.tensor.dense_flops, "float32") for c, _ in cs]),
        _row("Tensor Engine input elements per cycle",
             [", ".join(f"{k} {v}" for k, v in c.tensor.input_elements_per_cycle.items()) for c, _ in cs]),
        _row("Tensor Engine output elements per cycle", [c.tensor.output_elements_per_cycle for c, _ in cs]),
        _row("matmul initiation interval (MM_INIT_LATENCY), cycles", [c.tensor.mm_init_cycles for c, _ in cs]),
        _row("Vector Engine clock", [_ghz(c.vector.clock_hz) for c, _ in cs]),
        _row("Vector Engine elements per cycle", [eng(c.vector) for c, _ in cs]),
        _row("Vector Engine FP32 TFLOPS", [_num(c.vector.fp32_flops / 1e12) for c, _ in cs]),
        _row("Scalar Engine clock", [_ghz(c.scalar.clock_hz) for c, _ in cs]),
        _row("Scalar Engine elements per cycle", [eng(c.scalar) for c, _ in cs]),
        _row("Scalar Engine FP32 TFLOPS", [_num(c.scalar.fp32_flops / 1e12) for c, _ in cs]),
        _row("GpSimd Engine clock", [_ghz(c.gpsimd.clock_hz) for c, _ in cs]),
        _row("GpSimd Engine elements per cycle", [eng(c.gpsimd) for c, _ in cs]),
        _row("MIN_II (Vector/Scalar/GpSimd), cycles", [c.min_ii_cycles for c, _ in cs]),
        _row("DMA engines per core", [c.dma.engines for c, _ in cs]),
        _row("DMA peak per engine", [_rate(c.dma.bytes_per_s_per_engine) for c, _ in cs]),
        _row("DMA peak per core", [_rate(c.dma.peak_bytes_per_s) for c, _ in cs]),
        _row("DMA fixed latency per transfer", [f"{_num(c.dma.fixed_latency_s * 1e6)} µs" for c, _ in cs]),
        _row("DMA efficiency (fitted)", [_num(c.dma.efficiency) for c, _ in cs]),
        _row("DMA sustained rate (the cost model's)", [_rate(c.dma.sustained_bytes_per_s) for c, _ in cs]),
        _row("sources", [_sources(c.sources) for c, _ in cs]),
        _row("Tensor Engine sources", [_sources(c.tensor.sources) for c, _ in cs]),
        _row("DMA sources", [_sources(c.dma.sources) for c, _ in cs]),
    ]
    return _table(["", *[f"{c.version}" for c, _ in cs]], rows)


def interconnect_table() -> str:
    """One column per platform: chip-to-chip links and collective latencies."""
    ps = list(PLATFORMS.values())

    def lat(v):
        if v is None:
            return "—"
        if isinstance(v, tuple):
            return "–".join(_num(x * 1e6) for x in v) + " µs"
        return f"{_num(v * 1e6)} µs"

    rows = [
        _row("link", [p.interconnect.link for p in ps]),
        _row("links per chip", [p.interconnect.links_per_chip for p in ps]),
        _row("chip-to-chip bandwidth per chip", [_rate(p.interconnect.chip_bytes_per_s) for p in ps]),
        _row("per chip inside an instance", [_rate(p.interconnect.intra_instance_bytes_per_s) for p in ps]),
        _row("per chip between instances", [_rate(p.interconnect.inter_instance_bytes_per_s) for p in ps]),
        _row("topology", [p.interconnect.topology for p in ps]),
        _row("collective cores per chip", [p.interconnect.collective_cores for p in ps]),
        _row("ring collective hop latency inside a node", [lat(p.interconnect.intra_node_hop_latency_s) for p in ps]),
        _row("collective hop latency between nodes", [lat(p.interconnect.inter_node_hop_latency_s) for p in ps]),
        _row("EFA per chip", [_rate(p.interconnect.efa_bytes_per_s_per_chip) for p in ps]),
        _row("sources", [_sources(p.interconnect.sources) for p in ps]),
    ]
    return _table(["", *[f"`{p.name}`" for p in ps]], rows)


def instance_table() -> str:
    """One row per instance or UltraServer."""
    def opt(v, fmt):
        return "—" if v is None else fmt(v)

    rows = []
    for p in PLATFORMS.values():
        for i in p.instances:
            rows.append(_row(f"`{p.name}`", [
                i.name, i.chips, opt(i.vcpus, str), opt(i.host_memory_bytes, _bytes),
                opt(i.efa_bits_per_s, lambda b: f"{_num(b / 1e9)} Gbps"),
                _rate(i.neuronlink_bytes_per_s_per_chip),
                opt(i.on_demand_usd_per_hour, lambda d: f"{d:.3f}"),
                opt(i.ri_effective_usd_per_hour, lambda d: f"{d:.3f}"),
                _sources(i.sources)]))
    return _table(["platform", "instance", "chips", "vCPUs", "host memory", "EFA",
                   "NeuronLink per chip", "on-demand USD/h", "RI-effective USD/h", "sources"], rows)


def sources_table() -> str:
    """Every source key of the platform table and what it cites."""
    return _table(["key", "source"], [_row(f"`{k}`", [v]) for k, v in SOURCES.items()])


def tile_size_table() -> str:
    """``nl.tile_size``: the tile limits kernels read."""
    import torch_neuronx.nki.language as nl

    names = [n for n, v in vars(type(nl.tile_size)).items() if not n.startswith("_") and isinstance(v, int)]
    names.append("psum_num_banks")  # a property: the platform row's psum_banks
    return _table(["`nl.tile_size.`", "value"], [_row(f"`{n}`", [getattr(nl.tile_size, n)]) for n in names])


TABLES = {
    "chips": chip_table,
    "NeuronCores": core_table,
    "interconnect": interconnect_table,
    "instances": instance_table,
    "sources": sources_table,
    "tile sizes": tile_size_table,
}


# --- the checks ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(TABLES))
def test_trainium_doc_holds_the_table_of_the_code(name):
    doc = (REPO / "docs/TRAINIUM.md").read_text(encoding="utf-8")
    table = TABLES[name]()
    assert table in doc, (
        f"docs/TRAINIUM.md does not hold the {name} table the code gives; replace it with "
        f"(python -m tests.test_docs prints every table):\n{table}")


def test_generated_tables_show_the_numbers_they_are_built_from():
    # The generator itself must read the table, or the check above would compare text with text.
    assert "| HBM per logical core at the default LNC | 16 GiB | 24 GiB | 36 GiB | 16 GiB |" in chip_table()
    assert "| Tensor Engine dense BF16/FP16/TF32 TFLOPS | 92 | 79 | 79 |" in core_table()
    assert "| DMA sustained rate (the cost model's) | 103.36 GB/s | 139.84 GB/s | 200.64 GB/s |" in core_table()
    assert "| `pmax` | 128 |" in tile_size_table()


def _required_names() -> list[str]:
    names = []
    package = REPO / "torch_neuronx"
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(package).as_posix()
        names.append(f"torch_neuronx/{rel}" if "/" not in rel else rel)
    csrc = REPO / "csrc"
    for path in sorted(csrc.rglob("*")):
        if path.suffix in (".cpp", ".h"):
            rel = path.relative_to(csrc)
            names.append(f"csrc/{rel.as_posix()}" if len(rel.parts) == 1 else rel.with_suffix("").as_posix())
    return sorted(set(names))


def test_architecture_doc_names_every_file():
    doc = (REPO / "docs/ARCHITECTURE.md").read_text(encoding="utf-8")
    names = _required_names()
    assert "compile/cache_key.py" in names and "aten/Fallback" in names and "torch_neuronx/_state.py" in names
    missing = [n for n in names if n not in doc]
    assert not missing, ("files docs/ARCHITECTURE.md does not describe (add a line for each to its "
                         "layer's table):\n" + "\n".join(missing))


if __name__ == "__main__":
    for title, make in TABLES.items():
        print(f"<!-- {title} -->\n{make()}\n")
