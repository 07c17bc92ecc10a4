"""scripts/audits/recipes.py: rules recipe-plain, recipe-first, evidence-folded on planted cells."""

from __future__ import annotations

from scripts.audits import recipes as audit_recipes

SETUP = {"cell_type": "code", "source": "import torch\nfrom tricks_helpers import bench, seeding\n"}


def md(text="prose"):
    return {"cell_type": "markdown", "source": text}


def code(src, *tags):
    return {"cell_type": "code", "source": src, "metadata": {"tags": list(tags)}}


PLAIN = code("def seed_worker(worker_id):\n    seed = torch.initial_seed() % 2**32\n", "recipe")


def test_a_plain_recipe_under_the_tip_passes():
    cells = [md("# T"), SETUP, PLAIN] + [md()] * 12
    assert audit_recipes.recipe_problems(cells) == []


def test_a_recipe_calling_a_helper_or_importing_the_package_fails():
    helper = code("loader = DataLoader(ds, worker_init_fn=seeding.seed_worker)\n", "recipe")
    imported = code("from tricks_helpers.seeding import seed_worker\n", "recipe")
    problems = audit_recipes.recipe_problems([md("# T"), SETUP, helper, imported] + [md()] * 12)
    assert problems == [
        "cell 2: recipe-plain: the recipe uses the book's helpers (seeding); "
        "a reader copies plain PyTorch",
        "cell 3: recipe-plain: the recipe uses the book's helpers (tricks_helpers); "
        "a reader copies plain PyTorch",
    ]


def test_no_recipe_or_a_late_one_fails():
    assert audit_recipes.recipe_problems([md("# T"), SETUP]) == [
        "recipe-first: no cell tagged 'recipe' (the code a reader copies)"
    ]
    late = [md("# T"), SETUP] + [md()] * 10 + [PLAIN]
    assert audit_recipes.recipe_problems(late)[0].startswith("cell 12: recipe-first")


def test_timing_code_must_be_folded():
    timed = code("c = bench.compare(f, g, device='cpu')\n")
    folded = code("c = bench.compare_many({'a': f}, device='cpu')\n", "hide-input")
    assert audit_recipes.folding_problems([timed, folded]) == [
        "cell 0: evidence-folded: times with compare() but its code is shown: "
        "tag it hide-input (its output stays visible)"
    ]


def test_shown_code_lines_counts_what_a_reader_sees_expanded():
    cells = [code("a = 1\n\nb = 2\n"), code("c = 3\n", "hide-input"), md("x = 1")]
    assert audit_recipes.shown_code_lines(cells) == 2
