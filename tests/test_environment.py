"""The environment variables: ``READ`` / ``NO_EFFECT`` of ``torch_neuronx/runtime/environment.py`` are the
README's tables and the variables the code reads; the variables with no effect are reported, and
``NEURON_CC_FLAGS`` warns only where Trainium's results would differ."""
from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path

import pytest

from torch_neuronx.runtime import environment
from torch_neuronx.runtime.environment import MISSPELLED, NO_EFFECT, READ, NoEffectWarning

REPO = Path(__file__).resolve().parents[1]
_NAME = re.compile(r"`([A-Z][A-Z0-9_]{3,})(?:=[^`]*)?`")


def _readme_section() -> str:
    text = (REPO / "README.md").read_text()
    return text[text.index("### Environment variables"):text.index("### Logging")]


def _table_names(section: str) -> set[str]:
    """Names in the first cell of each table row."""
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(_NAME.findall(line.split(" | ")[0]))
    return names


def test_readme_tables_are_the_code_tables():
    section = _readme_section()
    in_tables = _table_names(section)
    assert in_tables == set(READ) | set(NO_EFFECT), (
        f"in the README only: {sorted(in_tables - set(READ) - set(NO_EFFECT))}; "
        f"in the code only: {sorted(set(READ) | set(NO_EFFECT) - in_tables)}")
    assert not set(READ) & set(NO_EFFECT)
    for wrong, right in MISSPELLED.items():
        assert wrong in section and right in READ


def test_every_variable_the_code_reads_is_listed():
    read_call = re.compile(r"""(?:getenv|environ\.get|environ\[|env\.get|env_off|_int_env\(env,|_int_var\(env,)"""
                           r"""\(?\s*["']((?:TORCH_NEURONX|NEURON|NKI)_[A-Z0-9_]+)["']""")
    found: dict[str, str] = {}
    for path in [*(REPO / "torch_neuronx").rglob("*.py"), *(REPO / "csrc").rglob("*.cpp")]:
        if path.name == "environment.py":
            continue
        for name in read_call.findall(path.read_text()):
            found.setdefault(name, str(path.relative_to(REPO)))
    assert found, "the pattern finds the reads"
    missing = {n: p for n, p in found.items() if n not in READ}
    assert not missing, f"read by the code but not in READ (and the README): {missing}"


def test_each_read_variable_is_named_by_the_files_said_to_read_it():
    for name, where in READ.items():
        for part in where.split(", "):
            rel = part.split(" ")[0]
            if not rel.endswith((".py", ".cpp")) or rel.startswith("torch/"):
                continue
            path = REPO / rel if rel.startswith("csrc/") else REPO / "torch_neuronx" / rel
            assert name in path.read_text(), (name, path)


def test_set_variables_without_effect_are_logged_with_their_reason(caplog):
    env = {"NEURON_RT_EXEC_TIMEOUT": "10", "COLLECTIVE_BUCKETSIZE_IN_MB": "64", "NEURON_RT_VISIBLE_CORES": "0",
           "NEURON_LAUNCH_BLOCKING": "1", "NEURON_CC_FLAGS": "--model-type=transformer -O1"}
    logger = logging.getLogger("torch_neuronx.runtime.environment")
    logger.addHandler(caplog.handler)     # also when TORCH_NEURONX_LOG_LEVEL stopped propagation to the root
    try:
        with caplog.at_level(logging.INFO, logger=logger.name), warnings.catch_warnings():
            warnings.simplefilter("error")                     # harmless flags: no warning
            found = environment.report_no_effect(env, lnc=2)
    finally:
        logger.removeHandler(caplog.handler)
    assert found == ["NEURON_LAUNCH_BLOCKING", "COLLECTIVE_BUCKETSIZE_IN_MB", "NEURON_RT_EXEC_TIMEOUT",
                     "NEURON_CC_FLAGS"]
    # each record once (the handler may see it twice: on this logger and, propagated, on the root)
    messages = list(dict.fromkeys(r.getMessage() for r in caplog.records if r.name == logger.name))
    assert len(messages) == 4
    assert messages[2] == ("NEURON_RT_EXEC_TIMEOUT=10 has no effect on the software NeuronCore: "
                           + NO_EFFECT["NEURON_RT_EXEC_TIMEOUT"])
    assert messages[3].startswith("NEURON_CC_FLAGS=--model-type=transformer -O1 has no effect")


@pytest.mark.parametrize("flags,needles", [
    ("--auto-cast=matmult --auto-cast-type=bf16", ["--auto-cast=matmult --auto-cast-type=bf16"]),
    ("--auto-cast all", ["--auto-cast=all"]),
    ("--auto-cast=none", []),
    ("-O1 --logical-nc-config=1", ["--logical-nc-config=1 but the runtime's LNC is 2"]),
    ("-lnc 1 --auto-cast=all", ["--auto-cast=all", "--logical-nc-config=1 but the runtime's LNC is 2"]),
    ("--logical-nc-config=2 --model-type=transformer", []),
])
def test_compiler_flags_warn_only_where_trainium_would_differ(flags, needles):
    messages = environment.compiler_flag_warnings({"NEURON_CC_FLAGS": flags}, lnc=2)
    assert len(messages) == len(needles), messages
    for message, needle in zip(messages, needles, strict=True):
        assert needle in message and message.startswith("NEURON_CC_FLAGS"), message
    if needles:
        with pytest.warns(NoEffectWarning, match="NEURON_CC_FLAGS"):
            environment.report_no_effect({"NEURON_CC_FLAGS": flags}, lnc=2)


def test_the_misspelled_cache_switch_warns_and_names_the_right_one():
    with pytest.warns(NoEffectWarning, match=r"TORCH_NEURONX_DISABLE_NEFF_CACHE=1 is not read: .* "
                                             r"TORCH_NEURONX_NEFF_DISABLE_CACHE=1"):
        environment.report_no_effect({"TORCH_NEURONX_DISABLE_NEFF_CACHE": "1"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        environment.report_no_effect({"TORCH_NEURONX_DISABLE_NEFF_CACHE": "1",
                                      "TORCH_NEURONX_NEFF_DISABLE_CACHE": "1"})


def test_info_and_import_torch_show_what_is_set(py):
    r = py("""
        import torch
        from torch_neuronx.cli.info import info_text
        print(info_text())
    """, env={"NEURON_RT_NUM_CORES": "1", "NEURON_RT_EXEC_TIMEOUT": "5", "TORCH_NEURONX_LOG_LEVEL": "2",
              "NEURON_CC_FLAGS": "--auto-cast=all"})
    assert r.returncode == 0, r.stderr
    assert "visible       1 of 4 logical NeuronCores: 0" in r.stdout, r.stdout
    # Other variables the test process itself carries (e.g. launcher variables left by earlier tests) may be
    # listed too: check that every variable set here is on the line.
    env_line = next(line for line in r.stdout.splitlines() if line.startswith("environment   "))
    for item in ("NEURON_RT_NUM_CORES=1", "TORCH_NEURONX_LOG_LEVEL=2", "NEURON_CC_FLAGS=--auto-cast=all"):
        assert item in env_line.split(), (item, env_line)
    assert "no effect     NEURON_RT_EXEC_TIMEOUT=5" in r.stdout, r.stdout
    assert "INFO torch_neuronx.runtime.environment: NEURON_RT_EXEC_TIMEOUT=5 has no effect" in r.stderr, r.stderr
    assert "NoEffectWarning: NEURON_CC_FLAGS asks neuronx-cc for --auto-cast=all" in r.stderr, r.stderr


@pytest.mark.parametrize("value, expected", [("1", True), (" TRUE ", True), ("yes", True), ("On", True),
                                             ("0", False), ("False", False), ("no", False), ("OFF", False)])
def test_boolean_switches_read_every_spelling(monkeypatch, value, expected):
    from torch_neuronx.compile.cache import cache_disabled
    from torch_neuronx.compile.fallback import fallback_execution_allowed
    from torch_neuronx.nki.dtypes import env_keep_fp32

    monkeypatch.setenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", value)
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", value)
    monkeypatch.setenv("TORCH_NEURONX_NKI_KEEP_FP32", value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache_disabled() is expected
        assert fallback_execution_allowed() is (not expected)
        assert env_keep_fp32() is expected


@pytest.mark.parametrize("value", ["maybe", "2", "enable"])
def test_a_boolean_switch_that_is_not_a_boolean_warns_and_keeps_the_default(monkeypatch, value):
    # "maybe" used to read as true for the NKI switch and as false for the other two, silently.
    from torch_neuronx.compile.cache import cache_disabled
    from torch_neuronx.compile.fallback import fallback_execution_allowed
    from torch_neuronx.nki.dtypes import env_keep_fp32, get_keep_fp32

    monkeypatch.setenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", value)
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", value)
    monkeypatch.setenv("TORCH_NEURONX_NKI_KEEP_FP32", value)
    monkeypatch.delenv("NKI_PRECISE_FP", raising=False)
    for read, default, name in [(cache_disabled, False, "TORCH_NEURONX_NEFF_DISABLE_CACHE"),
                                (fallback_execution_allowed, False, "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"),
                                (env_keep_fp32, None, "TORCH_NEURONX_NKI_KEEP_FP32")]:
        getattr(environment, "_bad_flag_warned", set()).clear()  # warned once per value: start fresh
        with pytest.warns(UserWarning, match=f"{name}='{value}' is not a boolean") as caught:
            assert read() is default
        assert "1/true/yes/on or 0/false/no/off" in str(caught[0].message)
    assert get_keep_fp32(default=False) is False and get_keep_fp32(default=True) is True
