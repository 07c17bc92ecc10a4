"""scripts/compat/schema.py and compat_records.py: a compat record is checked, merged, kept."""

from __future__ import annotations

import copy
import json

import pytest

from scripts.compat import records as compat_records
from scripts.compat.schema import check_compat, file_name

SHA = "a" * 64


def chapter(status="ran", **kw):
    item = {
        "status": status,
        "seconds": 12.5,
        "failed_cell": None,
        "error": "",
        "skipped": [],
        "code_sha256": SHA,
        "date": "2026-11-27",
        "commit": "377e8c294d75",
    }
    if status == "failed":
        item.update(failed_cell=3, error="ImportError: no X")
    item.update(kw)
    return item


def record(release="2.10.0", chapters=None, **kw):
    out = {
        "schema": 1,
        "torch_release": release,
        "torch": f"{release}+cu128",
        "torchao": "0.16.0",
        "torchao_requirement": "torchao>=0.16,<0.17",
        "python": "3.11.7",
        "machine": "amd-epyc-avx2-only-2t",
        "chapters": chapters or {"01_a": chapter(), "07_q": chapter("failed")},
    }
    out.update(kw)
    return out


def test_a_good_record_passes():
    skipped = [{"section": "int4", "reason": "needs torchao>=0.18, this run has 0.16.0"}]
    good = record(chapters={"01_a": chapter(skipped=skipped), "07_q": chapter("failed")})
    assert check_compat(good) is good
    assert check_compat(record(chapters={"01_a": chapter("failed", failed_cell=None)}))


@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda r: r.update(extra=1), ValueError, "Additional properties"),
        (lambda r: r["chapters"]["01_a"].update(note="x"), ValueError, "Additional properties"),
        (lambda r: r["chapters"]["01_a"].update(seconds="12"), TypeError, "seconds"),
        (lambda r: r["chapters"]["01_a"].update(seconds=float("nan")), TypeError, "seconds"),
        (lambda r: r["chapters"]["07_q"].update(failed_cell=True), TypeError, "failed_cell"),
        (lambda r: r["chapters"]["07_q"].update(failed_cell=0), ValueError, "failed_cell"),
        (lambda r: r["chapters"].update({"../x": chapter()}), ValueError, "outside"),
        (lambda r: r.update(torch_release="../x"), ValueError, "outside"),
        (lambda r: r.update(machine="../m"), ValueError, "outside"),
        (lambda r: r["chapters"]["07_q"].update(error=""), ValueError, "should be non-empty"),
        (lambda r: r["chapters"]["01_a"].update(error="x"), ValueError, "expected to be empty"),
        (lambda r: r["chapters"]["01_a"].update(failed_cell=2), TypeError, "failed_cell"),
        (lambda r: r["chapters"]["07_q"].update(error="a\nb"), ValueError, "one line"),
        (lambda r: r["chapters"]["01_a"].update(code_sha256="../x"), ValueError, "outside"),
        (lambda r: r.update(torch="2.9.0"), ValueError, "is not release"),
    ],
)
def test_refuses_unknown_keys_bad_types_and_path_like_ids(change, error, match):
    bad = record()
    change(bad)
    with pytest.raises(error, match=match):
        check_compat(bad)


def test_file_name_is_never_a_path():
    assert file_name("2.10.0") == "torch-2.10.0.json"
    for bad in ("../x", "2.10.0/../../etc", "2.10.0\n", ""):
        with pytest.raises(ValueError, match="not a torch release"):
            file_name(bad)
    with pytest.raises(TypeError, match="must be a string"):
        file_name(2.1)


def test_write_read_and_name_checked(tmp_path):
    path = compat_records.write_record(record(), tmp_path / "compat")
    assert path.name == "torch-2.10.0.json"
    assert compat_records.read_record(path) == record()
    path.rename(tmp_path / "compat" / "torch-2.11.0.json")
    with pytest.raises(ValueError, match="must be named torch-2.10.0.json"):
        compat_records.read_all(tmp_path / "compat")
    (tmp_path / "compat" / "torch-2.11.0.json").write_text("{NaN")
    with pytest.raises(ValueError, match="not JSON"):
        compat_records.read_all(tmp_path / "compat")
    with pytest.raises(ValueError, match="Additional properties"):
        compat_records.write_record(record(extra=1), tmp_path / "other")
    assert not (tmp_path / "other" / "torch-2.10.0.json").exists()
    assert compat_records.read_all(tmp_path / "none") == []


def test_read_all_orders_releases_numerically(tmp_path):
    for release in ("2.9.0", "2.10.0", "2.13.0"):
        compat_records.write_record(record(release), tmp_path)
    assert [r["torch_release"] for r in compat_records.read_all(tmp_path)] == [
        "2.9.0",
        "2.10.0",
        "2.13.0",
    ]


def test_merge_replaces_the_chapters_run_and_keeps_the_others():
    old = record()
    new = record(chapters={"07_q": chapter(commit="fix07")})
    merged = compat_records.merge(old, new)
    assert merged["chapters"]["07_q"]["commit"] == "fix07"
    assert merged["chapters"]["01_a"] == old["chapters"]["01_a"]
    assert compat_records.merge(None, new) == new
    with pytest.raises(ValueError, match="torchao '0.16.0' -> '0.16.1'"):
        compat_records.merge(old, record(torchao="0.16.1"))
    assert json.dumps(old) == json.dumps(record()), "merge never changes its inputs"
    assert copy.deepcopy(merged) == merged
