"""The GitHub workflows, checked here as they cannot run here: triggers, permissions, commands."""

from __future__ import annotations

import re

import pytest
import yaml

WORKFLOWS = ("ci.yml", "pages.yml", "gpu.yml")


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
    (job,) = data["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest", "a hosted runner, never the self-hosted one"
    assert "bash .ci/run" in runs(data), "runs .ci/run unchanged"
    assert "sudo make browser-deps" in runs(data), "Chromium comes from make browser-deps"
    setup = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert setup["with"]["python-version"] == "3.11" and setup["with"]["cache"] == "pip"
    assert job["env"]["TORCH_INDEX"] == "https://download.pytorch.org/whl/cpu"


def test_pages_builds_with_make_book_and_deploys_on_main_and_tags(repo_root):
    data = load(repo_root, "pages.yml")
    assert data["on"]["push"]["branches"] == ["main"]
    assert data["on"]["push"]["tags"] == ["v*"]
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
    assert "make test" in runs(data)


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
