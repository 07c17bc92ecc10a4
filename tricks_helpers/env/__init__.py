"""The environment a chapter runs in (chapter 01): the card every setup cell prints, what the
CPU is, and which low-precision math the device does natively.

A face: its modules hold the code, ``from tricks_helpers import env`` hands on their names.

- :mod:`~tricks_helpers.env.card`: the environment card (:func:`print_environment`), the torch
  release the stored outputs were made with, the source commit.
- :mod:`~tricks_helpers.env.cpu`: the CPU's model, flags and architecture (Linux, macOS,
  Windows), Apple's GPU.
- :mod:`~tricks_helpers.env.precision`: bfloat16 and autocast: native or emulated, and the
  ``[hardware]`` line chapter 04 prints.
"""

from __future__ import annotations

from tricks_helpers.env.card import (
    EXECUTED_WITH_TORCH,
    EnvCard,
    environment_card,
    print_environment,
    source_commit,
)
from tricks_helpers.env.cpu import CPUINFO, cpu_arch, cpu_flags, cpu_model, mps_available
from tricks_helpers.env.precision import (
    autocast_dtypes,
    bf16_support,
    cpu_bf16_flags,
    hardware_line,
    native_autocast,
    native_bf16,
)

__all__ = [
    "autocast_dtypes",
    "bf16_support",
    "cpu_arch",
    "cpu_bf16_flags",
    "cpu_flags",
    "cpu_model",
    "CPUINFO",
    "EnvCard",
    "environment_card",
    "EXECUTED_WITH_TORCH",
    "hardware_line",
    "mps_available",
    "native_autocast",
    "native_bf16",
    "print_environment",
    "source_commit",
]
