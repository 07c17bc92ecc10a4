"""Which sections of chapter 07 need which torchao release, decided before an import fails.

:data:`TORCHAO_NEEDED` is the one source of what runs where; :func:`torchao_supports`,
:func:`torchao_needs` and :func:`require_torchao` read it.
"""

from __future__ import annotations

import re

from tricks_helpers._checks import check_choice, check_type

__all__ = ["TORCHAO_NEEDED", "torchao_supports", "torchao_needs", "require_torchao"]

#: What chapter 07 needs from torchao, section by section: section -> (the first torchao
#: release with every name the section imports and every keyword it passes them, those names).
#: The one source of what runs where: read from the wheels of torchao 0.13 to 0.18
#: (``scripts/compat/torchao_api.json``, names and keywords; ``tests/scripts/test_torchao_api.py``
#: checks each release here against that record). The sections whose release is the oldest
#: here hold the recipe and are required (:func:`require_torchao` refuses an older torchao);
#: every other one is skipped, with one ``[skipped]`` line, where :func:`torchao_supports`
#: says this torchao lacks it.
TORCHAO_NEEDED: dict[str, tuple[str, tuple[str, ...]]] = {
    "int8 quantize_": (
        "0.13",
        ("quantize_", "Int8WeightOnlyConfig", "Int8DynamicActivationInt8WeightConfig"),
    ),
    "PT2E static int8": ("0.13", ("prepare_pt2e", "convert_pt2e", "x86_inductor_quantizer")),
    "QAT": ("0.13", ("QATConfig", "IntxFakeQuantizeConfig")),
    "int4 weight-only": ("0.18", ("PrototypeInt4WeightOnlyConfig",)),
    # Int4WeightOnlyConfig's int4_packing_format keyword was packing_format in 0.13.
    "configs without a CPU path": (
        "0.14",
        (
            "Int4WeightOnlyConfig",
            "Float8DynamicActivationFloat8WeightConfig",
            "IntxWeightOnlyConfig",
        ),
    ),
}


def _release(version: str) -> tuple[int, ...]:
    """``"0.18.0+cu126"`` -> ``(0, 18, 0)``: the leading numeric parts of a version."""
    parts = []
    for part in version.split("+")[0].split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def _checked_release(where: str, version: str) -> tuple[int, ...]:
    check_type(where, "version", version, str)
    have = _release(version)
    if not have:
        raise ValueError(f"{where}: version must start with a number, got {version!r}")
    return have


def torchao_supports(version: str) -> dict[str, bool]:
    """Which sections of chapter 07 a torchao release runs: section -> True/False.

    A section runs when ``version`` is at least the release :data:`TORCHAO_NEEDED` names for
    it (local tags such as ``+cu126`` and pre-release suffixes are ignored: ``0.18.0rc1``
    counts as ``0.18.0``).

    Args:
        version: ``torchao.__version__``.

    Returns:
        Every section of :data:`TORCHAO_NEEDED`, in its order, with whether it runs.

    Raises:
        TypeError: if ``version`` is not a string.
        ValueError: if it does not start with a number.
    """
    have = _checked_release("torchao_supports", version)
    return {section: have >= _release(need) for section, (need, _) in TORCHAO_NEEDED.items()}


def torchao_needs(section: str) -> str:
    """What a section of chapter 07 needs, in words: ``"torchao >= 0.18"``.

    Raises:
        TypeError: if ``section`` is not a string.
        ValueError: if it is not a section of :data:`TORCHAO_NEEDED` (the message lists them).
    """
    check_type("torchao_needs", "section", section, str)
    check_choice("torchao_needs", "section", section, list(TORCHAO_NEEDED))
    return f"torchao >= {TORCHAO_NEEDED[section][0]}"


def require_torchao(version: str) -> dict[str, bool]:
    """Refuse a torchao too old for chapter 07's recipe; else say which sections it runs.

    The required sections are those whose release in :data:`TORCHAO_NEEDED` is the oldest
    there (the recipe's ``quantize_`` and int8 configs among them): below it the chapter
    cannot run at all, and this raises before an import fails deep inside torchao. From it
    on, the chapter runs, and each section that needs a newer release is skipped.

    Args:
        version: ``torchao.__version__``.

    Returns:
        :func:`torchao_supports` of ``version`` (every required section is True).

    Raises:
        TypeError: if ``version`` is not a string.
        ValueError: if it does not start with a number.
        RuntimeError: if it is older than the required release; the message names each
            section that needs a newer torchao, the names it imports, and what to install.
    """
    _checked_release("require_torchao", version)
    runs = torchao_supports(version)
    releases = [need for need, _ in TORCHAO_NEEDED.values()]
    floor, newest = min(releases, key=_release), max(releases, key=_release)
    if all(runs[s] for s, (need, _) in TORCHAO_NEEDED.items() if need == floor):
        return runs
    lines = [
        f"- {section} needs torchao >= {need} ({', '.join(names)})"
        for section, (need, names) in TORCHAO_NEEDED.items()
        if not runs[section]
    ]
    raise RuntimeError(
        f"This chapter needs a newer torchao than {version}:\n"
        + "\n".join(lines)
        + f"\nInstall torchao>={floor} (torchao>={newest} runs every section; 0.18 needs torch"
        " >= 2.11), then restart the runtime."
    )
