"""Tests of scripts/book/machine_records.py: machine facts, results files, verdict comparison."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from scripts.book import machine_records
from tricks_helpers import bench, env
from tricks_helpers.env import cpu as env_cpu


def facts(**kw):
    args = dict(cpu="Intel(R) Xeon(R) Platinum 8488C", flags=frozenset({"avx2", "avx512f"}))
    args.update(environ={}, threads=2, gpu="none", arch="x86_64")
    args.update(kw)
    return machine_records.machine_facts(**args)


def rec(label="a", chapter="01_x", verdict_times=(2e-3, 1e-3)):
    b, t = verdict_times
    c = bench.comparison_from_times(label, [b] * 6, [t] * 6, threads=2, show=False)
    return c.record(chapter=chapter)


def test_machine_id_names_isa_cap_threads_and_gpu():
    assert facts()["id"] == "intel-xeon-platinum-8488c-avx512-2t"
    amx = facts(flags=frozenset({"amx_bf16", "avx512_bf16", "avx2"}))
    assert amx["id"].endswith("-amx-2t") and amx["isa"] == ["amx_bf16", "avx512_bf16", "avx2"]
    capped = facts(environ={"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert capped["capped"] == {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    assert capped["id"] == "intel-xeon-platinum-8488c-avx512-capped-avx2-2t"
    assert facts(flags=frozenset({"avx2"}), gpu="NVIDIA H100 80GB HBM3")["id"].endswith(
        "avx2-only-2t-nvidia-h100-80gb-hbm3"
    )


def test_merge_replaces_the_chapters_run_and_keeps_the_others(tmp_path):
    m = facts()
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    first = machine_records.merge_results(
        None, m, {"01_x": ok, "02_y": ok}, [rec(), rec("b", "02_y")], "book"
    )
    second = machine_records.merge_results(first, m, {"01_x": ok}, [rec("new")], "book")
    assert [(r["chapter"], r["label"]) for r in second["records"]] == [
        ("01_x", "new"),
        ("02_y", "b"),
    ]
    path = machine_records.write_results(second, tmp_path)
    assert path.name == f"{m['id']}.json"
    assert machine_records.read_results(path) == json.loads(path.read_text())


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"schema": 0}, ValueError, "schema"),
        ({"source": "mine"}, ValueError, "source"),
        ({"machine": {"id": "x"}}, ValueError, "machine: 'cpu' is a required property"),
        (
            {"chapters": {"01_x": {"status": "?", "error": "", "seconds": 1.0}}},
            ValueError,
            "status",
        ),
        ({"records": "none"}, TypeError, "records"),
        ({"chapters": {}}, ValueError, "not listed"),
    ],
)
def test_validate_results_refuses_bad_files(change, error, match):
    data = machine_records.merge_results(
        None, facts(), {"01_x": {"status": "ok", "error": "", "seconds": 1.0}}, [rec()], "survey"
    )
    with pytest.raises(error, match=match):
        machine_records.validate_results({**data, **change})


@pytest.mark.parametrize(
    "change",
    [
        {"schema": 0},
        {"source": "mine"},
        {"machine": {"id": "x"}},
        {"chapters": {"01_x": {"status": "?"}}},
        {"records": "none"},
        {"chapters": {}},
        {"claims": [{"chapter": "02_y"}]},
    ],
)
def test_validate_results_says_what_the_one_schema_says(change):
    """Issue 42: no second copy of the keys, sources or statuses ahead of the schema: every
    refusal is the schema's own (same type, same words)."""
    from scripts.results import schema

    data = machine_records.merge_results(
        None, facts(), {"01_x": {"status": "ok", "error": "", "seconds": 1.0}}, [rec()], "survey"
    )
    bad = {**data, **change}
    with pytest.raises((TypeError, ValueError)) as mine:
        machine_records.validate_results(bad, "f.json")
    with pytest.raises((TypeError, ValueError)) as theirs:
        schema.check_results(bad, "f.json")
    assert (type(mine.value), str(mine.value)) == (type(theirs.value), str(theirs.value))


def test_claims_of_unlisted_chapters_and_repeated_claims_are_the_schemas_refusals():
    from scripts.results import schema

    claim = {
        "chapter": "01_x",
        "key": "k",
        "advice": "a",
        "condition": "c",
        "evidence": "e",
        "status": "HELD",
        "measured": True,
    }
    data = machine_records.merge_results(
        None, facts(), {"01_x": {"status": "ok", "error": "", "seconds": 1.0}}, [rec()], "survey"
    )
    with pytest.raises(ValueError, match="claim 1 .*repeats"):
        schema.check_results({**data, "claims": [claim, claim]})
    with pytest.raises(ValueError, match="claim 0: chapter '02_y' is not listed"):
        schema.check_results({**data, "claims": [{**claim, "chapter": "02_y"}]})


def test_a_bad_record_is_named_by_its_index(tmp_path):
    data = machine_records.merge_results(
        None, facts(), {"01_x": {"status": "ok", "error": "", "seconds": 1.0}}, [rec()], "survey"
    )
    data["records"][0]["verdict"] = "FAST"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"records\[0\]\.verdict: 'FAST' is not one of"):
        machine_records.read_results(path)
    path.write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        machine_records.read_results(path)


def test_compare_verdicts_line_by_line():
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    ref = machine_records.merge_results(
        None,
        facts(),
        {"01_x": ok, "02_y": ok},
        [rec("same"), rec("flips", verdict_times=(4e-3, 1e-3)), rec("gone", "02_y")],
        "book",
    )
    mine = machine_records.merge_results(
        None,
        facts(threads=4),
        {"01_x": ok, "02_y": {"status": "failed", "error": "boom", "seconds": 1.0}},
        [rec("same"), rec("flips", verdict_times=(1e-3, 1e-3))],
        "survey",
    )
    text, bad = machine_records.compare_verdicts(mine, ref)
    assert bad == 2
    assert "agree    01_x: same: FASTER" in text
    assert "DIFFERS  01_x: flips: reference FASTER 4.00x, here SAME 1.00x" in text
    assert "missing  02_y: gone (chapter failed)" in text
    assert text.endswith("1 of 3 reference verdicts agree")


def test_compare_verdicts_prints_a_comparison_recorded_under_two_labels_once():
    """Issue 40: a verdict line and its table row record one comparison under two labels."""
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    ref = machine_records.merge_results(
        None, facts(), {"01_x": ok}, [rec("line label"), rec("table label")], "book"
    )
    text, bad = machine_records.compare_verdicts(ref, ref)
    assert bad == 0 and "line label" in text and "table label" not in text
    assert text.endswith("1 of 1 reference verdicts agree")


def test_results_path_names_a_survey_apart_from_the_book(tmp_path):
    assert machine_records.results_path(tmp_path, "m-2t", "book") == tmp_path / "m-2t.json"
    assert machine_records.results_path(tmp_path, "m-2t", "survey") == tmp_path / "m-2t-survey.json"
    with pytest.raises(ValueError, match="source must be one of"):
        machine_records.results_path(tmp_path, "m-2t", "mine")
    with pytest.raises(TypeError, match="machine_id"):
        machine_records.results_path(tmp_path, 3, "book")


def test_write_results_keeps_a_book_file_and_a_survey_file_of_one_machine(tmp_path):
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    book = machine_records.merge_results(None, facts(), {"01_x": ok}, [rec("b")], "book")
    mine = machine_records.merge_results(None, facts(), {"01_x": ok}, [rec("s")], "survey")
    p_book = machine_records.write_results(book, tmp_path)
    p_mine = machine_records.write_results(mine, tmp_path)
    assert p_book != p_mine
    assert machine_records.read_results(p_book)["records"][0]["label"] == "b"
    assert machine_records.read_results(p_mine)["records"][0]["label"] == "s"


LIMITS = {
    "threads": 2,
    "cache_bytes": 2**25,
    "bandwidth": 9e9,
    "matmul": {"float32": 5e10, "bfloat16": 2e10},
    "skipped": {"int8": "no _int_mm"},
}


def test_limits_record_keeps_what_a_results_file_stores():
    from tricks_helpers.limits import Limits

    lim = Limits(2, 2**25, "sysfs L3", 2**27, 9e9, {"float32": 5e10}, {"float32": 512}, {})
    assert machine_records.limits_record(lim) == {
        "threads": 2,
        "cache_bytes": 2**25,
        "bandwidth": 9e9,
        "matmul": {"float32": 5e10},
        "skipped": {},
        "probe": 2,
        "where": {"float32": "mm 512^3"},
    }


def test_merge_stores_new_limits_and_keeps_old_ones(tmp_path):
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    first = machine_records.merge_results(None, facts(), {"01_x": ok}, [rec()], "book", LIMITS)
    assert first["limits"] == LIMITS
    kept = machine_records.merge_results(first, facts(), {"01_x": ok}, [rec()], "book")
    assert kept["limits"] == LIMITS
    new = {**LIMITS, "bandwidth": 1e10}
    assert machine_records.merge_results(first, facts(), {}, [], "book", new)["limits"] == new
    none = machine_records.merge_results(None, facts(), {"01_x": ok}, [rec()], "book")
    assert "limits" not in none  # optional: files written before limits stay valid
    path = machine_records.write_results(first, tmp_path)
    assert machine_records.read_results(path)["limits"] == LIMITS


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"threads": 0}, ValueError, "threads must be"),
        ({"bandwidth": "fast"}, TypeError, "bandwidth must be a number"),
        ({"bandwidth": 0.0}, ValueError, "bandwidth must be >"),
        ({"matmul": {"float32": -1.0}}, ValueError, "matmul\\['float32'\\]"),
        ({"skipped": {"int8": 3}}, TypeError, "skipped"),
        ({"peak": 1}, ValueError, "unknown \\['peak'\\]"),
    ],
)
def test_validate_results_refuses_bad_limits(change, error, match):
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    data = machine_records.merge_results(None, facts(), {"01_x": ok}, [rec()], "book", LIMITS)
    data["limits"] = {**LIMITS, **change}
    with pytest.raises(error, match=match):
        machine_records.validate_results(data)


# machine_facts refuses a thread count no machine has (issue 32: threads=0 named "0t").
@pytest.mark.parametrize(
    ("threads", "error", "match"),
    [
        (0, ValueError, "machine_facts: threads must be"),
        (-2, ValueError, "machine_facts: threads must be"),
        (2.0, TypeError, "machine_facts: threads must be"),
        ("2", TypeError, "machine_facts: threads must be"),
        (True, TypeError, "machine_facts: threads must be"),
    ],
)
def test_machine_facts_refuses_a_thread_count_below_one(threads, error, match):
    with pytest.raises(error, match=match):
        machine_records.machine_facts(cpu="x", flags=frozenset(), environ={}, threads=threads)


def test_machine_facts_keeps_a_positive_thread_count():
    facts = machine_records.machine_facts(cpu="x", flags=frozenset(), environ={}, threads=3)
    assert facts["threads"] == 3 and "-3t" in facts["id"]


# The machine id off x86 Linux (issue 31 part 2): an Apple-silicon Mac was once named
# "arm-no-avx2" (cpu_flags read /proc/cpuinfo only, platform.processor() says "arm").
def as_machine(monkeypatch, tmp_path, *, system, machine, caps, brand="", mps=False):
    monkeypatch.setattr(env_cpu, "CPUINFO", tmp_path / "absent")
    monkeypatch.setattr(env_cpu.platform, "system", lambda: system)
    monkeypatch.setattr(env_cpu.platform, "machine", lambda: machine)
    monkeypatch.setattr(env_cpu.platform, "processor", lambda: "arm" if "arm" in machine else "")
    monkeypatch.setattr(env_cpu, "_torch_capabilities", lambda: dict(caps))
    monkeypatch.setattr(
        env_cpu.subprocess,
        "run",
        lambda args, **kw: subprocess.CompletedProcess(args, 0 if brand else 1, brand, ""),
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    return machine_records.machine_facts(environ={}, threads=8)


def test_an_apple_silicon_mac_is_named_apple_arm64_with_its_gpu(monkeypatch, tmp_path):
    caps = {"architecture": "arm64", "neon": True, "bf16": True, "i8mm": True, "sme": True}
    facts = as_machine(
        monkeypatch, tmp_path, system="Darwin", machine="arm64", caps=caps, brand="Apple M4\n"
    )
    assert facts["id"] == "apple-m4-arm64-sme-bf16-8t"
    assert facts["cpu"] == "Apple M4" and facts["arch"] == "arm64"
    assert facts["isa"] == ["sme", "bf16", "i8mm"] and "avx2" not in facts["id"]
    mps = as_machine(
        monkeypatch,
        tmp_path,
        system="Darwin",
        machine="arm64",
        caps=caps,
        brand="Apple M4",
        mps=True,
    )
    assert mps["gpu"] == "Apple MPS" and mps["id"] == "apple-m4-arm64-sme-bf16-8t-apple-mps"
    machine_records.validate_results(
        machine_records.merge_results(None, mps, {}, [], "survey")
    )  # the schema takes the new facts


def test_linux_on_arm_and_windows_are_named_by_torch(monkeypatch, tmp_path):
    caps = {"cpu_name": "Neoverse-V1", "architecture": "arm64", "sve": True, "bf16": True}
    arm = as_machine(monkeypatch, tmp_path, system="Linux", machine="aarch64", caps=caps)
    assert arm["id"] == "neoverse-v1-arm64-sve-bf16-8t" and arm["gpu"] == "none"
    bare = as_machine(monkeypatch, tmp_path, system="Linux", machine="aarch64", caps={})
    assert bare["id"] == "aarch64-arm64-8t"  # no name anywhere but the platform's
    caps = {"cpu_name": "Intel Core i7-12700H", "avx2": True, "avx512_f": False}
    win = as_machine(monkeypatch, tmp_path, system="Windows", machine="AMD64", caps=caps)
    assert win["arch"] == "x86_64" and win["id"] == "intel-core-i7-12700h-avx2-only-8t"


def test_machine_facts_refuses_an_arch_that_is_not_text():
    with pytest.raises(TypeError, match="cpu_arch: machine"):
        facts(arch=64)


RESULTS = Path(__file__).resolve().parents[2] / "results"


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.name)
def test_the_stored_x86_ids_are_unchanged(path):
    stored = json.loads(path.read_text())["machine"]
    assert machine_records.machine_id(stored) == stored["id"]
    if "arch" not in stored:  # written on x86 Linux before the fact: the same id with it
        assert machine_records.machine_id({**stored, "arch": "x86_64"}) == stored["id"]


def test_this_x86_linux_machine_keeps_its_id():
    if env.cpu_arch() != "x86_64" or not env.CPUINFO.exists():
        pytest.skip("not x86 Linux")
    facts = machine_records.machine_facts(environ={}, threads=2, gpu="none")
    assert facts["arch"] == "x86_64" and facts["cpu"] == env.cpu_model(env.CPUINFO)
    if facts["cpu"] == "AMD EPYC" and facts["isa"] == ["avx2"]:  # the book's reference machine
        assert facts["id"] == "amd-epyc-avx2-only-2t"
