"""The repository stands alone and says what it does: README, CI entry, Makefile, workflow."""

from __future__ import annotations

import re

import pytest
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
    # never in a fork, and only where a GPU runner is registered (issue 31)
    assert job["if"] == "github.event.repository.fork == false && vars.GPU_RUNNER == 'true'"
    assert wf["permissions"] == {"contents": "read"}


def test_package_keeps_colab_torch_and_declares_the_tested_release(repo_root):
    pyproject = read(repo_root, "pyproject.toml")
    assert '"torch>=2.4",' in pyproject, "loose: pip must not replace Colab's torch"
    pin = re.search(r"^torch==(\S+)$", read(repo_root, "requirements.txt"), flags=re.M).group(1)
    assert f"torch {pin}" in pyproject and f"| {pin} |" in read(repo_root, "README.md")


def test_licences_are_named_in_readme_footer_and_pyproject(repo_root):
    import tomllib

    assert "MIT License" in read(repo_root, "LICENSE")
    assert "CC BY 4.0" in read(repo_root, "LICENSE-CONTENT.md")
    readme = read(repo_root, "README.md")
    assert "`LICENSE`" in readme and "`LICENSE-CONTENT.md`" in readme
    config = yaml.safe_load(read(repo_root, "_config.yml"))
    footer = config["html"]["extra_footer"]
    assert "MIT" in footer and "CC BY 4.0" in footer
    url = config["repository"]["url"]
    for href in re.findall(r'href="([^"]+)"', footer):
        assert href.startswith((url + "/", "https://creativecommons.org/")), href
    assert config["html"]["use_issues_button"] is True
    # ... and it opens the template chooser, not a blank issue (scripts/release/issue_chooser.py)
    # (and page_header: the chapter header line, edit button, description, PDF link, sitemap)
    assert config["sphinx"]["local_extensions"] == {
        "issue_chooser": "scripts/release/",
        "page_header": "scripts/release/",
        "other_machines": "scripts/results/",  # other machines' decisions on chapter pages
    }
    with open(repo_root / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE", "LICENSE-CONTENT.md"]


def test_citation_cff_has_the_required_keys(repo_root):
    cff = yaml.safe_load(read(repo_root, "CITATION.cff"))
    assert isinstance(cff, dict)
    for key in ("cff-version", "message", "title", "authors"):
        assert cff.get(key), f"CITATION.cff: no {key}"
    assert all(a.get("name") or a.get("family-names") for a in cff["authors"])
    config = yaml.safe_load(read(repo_root, "_config.yml"))
    assert cff["repository-code"] == config["repository"]["url"]


def test_changelog_lists_every_chapter_under_the_first_release(repo_root):
    from scripts.book.find_notebooks import chapter_notebooks

    changelog = read(repo_root, "CHANGELOG.md")
    first = changelog.split("\n## ")[-1]
    assert first.startswith("0.1.0")
    for path in chapter_notebooks(repo_root):
        assert f"`book/{path.name}`" in first, path.name


def issue_templates(repo_root):
    """Template name -> its front matter (Markdown templates) or its form (YAML issue forms)."""
    folder = repo_root / ".github" / "ISSUE_TEMPLATE"
    found = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".md":
            meta = yaml.safe_load(path.read_text(encoding="utf-8").split("---")[1])
        elif path.suffix in (".yml", ".yaml") and path.stem != "config":
            meta = yaml.safe_load(path.read_text(encoding="utf-8"))
        else:
            continue
        found[meta["name"]] = {**meta, "path": path}
    return found


def test_issue_templates_exist_and_the_chooser_names_them(repo_root):
    from scripts.release import issue_chooser

    templates = issue_templates(repo_root)
    assert set(templates) == {
        "A claim is wrong on my machine",
        "Colab failed",
        "My machine's survey",
    }
    claim = templates["A claim is wrong on my machine"]["path"].read_text(encoding="utf-8")
    assert "environment card" in claim
    doc = " ".join(issue_chooser.__doc__.split())
    for name in templates:
        assert f'"{name}"' in doc, name


def test_the_survey_issue_form_asks_for_the_file_and_its_schema_check(repo_root):
    form = issue_templates(repo_root)["My machine's survey"]
    assert form["path"].name == "machine-survey.yml"
    assert {"name", "description", "title", "labels", "body"} <= set(form)
    kinds = {"markdown", "input", "textarea", "dropdown", "checkboxes"}
    fields = {}
    for item in form["body"]:
        assert item["type"] in kinds and item["attributes"], item
        if item["type"] != "markdown":
            assert re.fullmatch(r"[a-z0-9_-]+", item["id"]) and item["id"] not in fields
            assert item["attributes"]["label"].strip()
            fields[item["id"]] = item
    required = {k for k, v in fields.items() if v.get("validations", {}).get("required")}
    assert {"machine-id", "machine", "torch", "survey-file", "schema-check"} <= required
    [check] = [o for o in fields["checks"]["attributes"]["options"] if o.get("required")]
    assert "schema check printed `ok`" in check["label"]
    command = "python -m scripts.results.check --contributed results/<machine-id>-survey.json"
    assert command in fields["schema-check"]["attributes"]["description"]
    assert command in read(repo_root, "CONTRIBUTING.md")  # one command, documented there


def test_issues_button_opens_the_template_chooser():
    from scripts.release import issue_chooser

    url = "https://github.com/o/r"
    assert issue_chooser.chooser_url(url + "/") == url + "/issues/new/choose"
    with pytest.raises(ValueError, match="not a GitHub repository url"):
        issue_chooser.chooser_url("https://gitlab.com/o/r")
    blank = f"{url}/issues/new?title=Issue%20on%20page"
    buttons = [
        {"label": "launch-buttons", "buttons": [{"label": "colab", "url": "c"}]},
        {
            "label": "source-buttons",
            "buttons": [
                {"label": "repository-button", "url": url},
                {"label": "source-issues-button", "url": blank},
            ],
        },
    ]
    assert issue_chooser.point_at_chooser(buttons, url + "/issues/new/choose") == 1
    assert buttons[1]["buttons"][1]["url"] == url + "/issues/new/choose"
    assert buttons[1]["buttons"][0]["url"] == url and buttons[0]["buttons"][0]["url"] == "c"
