"""The repository stands alone and says what it does: README, CI entry, Makefile, workflow."""

from __future__ import annotations

import re

import yaml


def read(root, name):
    return (root / name).read_text(encoding="utf-8")


def test_readme_two_commands_are_make_targets_and_ci_runs_the_test_command(repo_root):
    readme = read(repo_root, "README.md")
    block = re.search(r"## The two commands.*?```bash\n(.*?)```", readme, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make book", "make test"]
    targets = re.findall(r"^([a-z-]+):", read(repo_root, "Makefile"), flags=re.M)
    assert {"book", "test"} <= set(targets)
    ci = [
        line
        for line in read(repo_root, ".ci/run").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert ci[-1] == "make test", "CI runs exactly the README's test command, last"


def test_nothing_points_outside_the_repository(repo_root):
    for name in ("Makefile", "CONTRIBUTING.md", "README.md", "DESIGN.md", ".ci/run"):
        text = read(repo_root, name)
        assert "../" not in text and "shared/" not in text, f"{name} refers outside the repo"
    for cited in re.findall(
        r"`([A-Za-z_./-]+\.(?:md|py|yml|cfg|txt|toml))`", read(repo_root, "CONTRIBUTING.md")
    ):
        if "/" in cited and not cited.startswith(("tricks_helpers/", "tests/", "scripts/")):
            continue
        if "<" in cited or "NN" in cited:
            continue
        assert (repo_root / cited).exists() or (repo_root / "book" / cited).exists(), cited


def test_gpu_workflow_never_runs_pull_request_code_on_the_self_hosted_runner(repo_root):
    wf = yaml.safe_load(read(repo_root, ".github/workflows/gpu.yml"))
    triggers = wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as True
    assert not {"pull_request", "pull_request_target"} & set(triggers)
    assert triggers["push"]["branches"] == ["main"]
    (job,) = wf["jobs"].values()
    assert "self-hosted" in job["runs-on"]
    assert job["if"] == "github.event.repository.fork == false"
    assert wf["permissions"] == {"contents": "read"}


def test_package_keeps_colab_torch_and_declares_the_tested_release(repo_root):
    pyproject = read(repo_root, "pyproject.toml")
    assert '"torch>=2.4",' in pyproject, "loose: pip must not replace Colab's torch"
    pin = re.search(r"^torch==(\S+)$", read(repo_root, "requirements.txt"), flags=re.M).group(1)
    assert f"torch {pin}" in pyproject and f"| {pin} |" in read(repo_root, "README.md")
