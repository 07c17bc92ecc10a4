"""Tests of scripts/compat/{wheelhouse,gpu_run,release_lines}.py (issue 41): the GPU host's run."""

from __future__ import annotations

import re

import pytest

from scripts.compat import gpu_run, release_lines, wheelhouse


def test_wheelhouse_needs_the_pins_and_the_host_torchs_torchao():
    reqs = wheelhouse.needs("2.11.0")
    assert "nbval==0.11.0" in reqs and "ipykernel==7.4.0" in reqs
    assert "torchao>=0.18,<0.19" in reqs  # the row of TORCHAO_FOR_TORCH for 2.11
    assert not any(r.startswith(("torch==", "numpy")) for r in reqs)


def test_wheelhouse_refuses_a_need_without_a_pin(tmp_path):
    (tmp_path / "requirements.txt").write_text("nbval==0.11.0\n")
    with pytest.raises(ValueError, match="no pin for"):
        wheelhouse.needs("2.11.0", tmp_path / "requirements.txt")


def test_wheelhouse_platform_tags_and_names():
    tags = wheelhouse.platforms("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux2014_x86_64" in tags
    assert "manylinux_2_17_x86_64" in tags and "manylinux_2_27_x86_64" in tags
    assert wheelhouse.platforms("manylinux_2_17_x86_64")[:2] == [
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
    ]
    assert wheelhouse.platforms("macosx_11_0_arm64") == ["macosx_11_0_arm64"]
    assert wheelhouse.wheel_name("Typing_Extensions-4.0-py3-none-any.whl") == "typing-extensions"


def test_wheelhouse_prunes_what_the_host_has_and_writes_its_manifest(tmp_path):
    for name in ("numpy-2.4.6-cp312-cp312-x.whl", "nbval-0.11.0-py3-none-any.whl"):
        (tmp_path / name).write_bytes(b"x" * 10)
    assert wheelhouse.prune(tmp_path) == ["numpy"]
    total = wheelhouse.write_manifest(tmp_path, ["nbval==0.11.0"], "3.12", "manylinux_2_28_x86_64")
    assert total == 10
    assert (tmp_path / "requirements.txt").read_text() == "nbval==0.11.0\n"
    manifest = (tmp_path / "MANIFEST.txt").read_text()
    assert "1 wheels, 10 bytes" in manifest and "nbval-0.11.0-py3-none-any.whl  10" in manifest


def test_gpu_run_stops_at_once_without_cuda(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(gpu_run, "cuda_or_why", lambda: "torch 2.13.0+cpu, CUDA build none")
    called = []
    monkeypatch.setattr(gpu_run, "install", lambda *a: called.append(a))
    out = tmp_path / "out"
    assert gpu_run.main(["--wheelhouse", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "torch.cuda.is_available() is False (torch 2.13.0+cpu" in err
    assert "nothing was installed or run" in err
    assert called == [] and not out.exists()


def test_gpu_run_says_which_requirements_the_host_lacks(tmp_path):
    dist = tmp_path / "needy-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: needy\nVersion: 1.0\n"
        "Requires-Dist: surely-not-installed-here>=1\n"
        "Requires-Dist: pytest\n"
        'Requires-Dist: extra-only ; extra == "docs"\n'
    )
    assert gpu_run.unmet(tmp_path) == [
        "surely-not-installed-here (needy needs surely-not-installed-here>=1; missing)"
    ]
    with pytest.raises(FileNotFoundError, match="run `make wheelhouse` first"):
        gpu_run.install(tmp_path, tmp_path / "site")


def sanitize(text, rules):
    for regex, replace in rules:
        text = re.sub(regex, replace, text)
    return text


def test_release_lines_mask_only_the_lines_naming_the_torch_release(tmp_path):
    card = (
        "environment\n  torch    2.11.0+cu130 (build cu130)\n"
        "  warning  the book's outputs were made with torch 2.13.0: what you see may differ\n"
        "  python   3.12.3\n"
    )
    stored = "environment\n  torch    2.13.0 (build cpu)\n  python   3.11.7\n"
    rules = release_lines.rules()
    assert sanitize(card, rules) == sanitize(stored, rules)
    assert sanitize(card, release_lines.rules(release=False)) != sanitize(stored, rules)
    line = "removal announced for torch 2.10; this run's torch 2.13.0 still has it"
    assert sanitize(line, rules) == "<a line naming the torch release>"
    assert sanitize("a 2.13 MiB peak", rules) == "a 2.13 MiB peak"
    # nbval reads the same pairs from the written file
    written = release_lines.write(tmp_path / "sanitize.cfg")
    text = written.read_text()
    assert re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, flags=re.M) == rules
