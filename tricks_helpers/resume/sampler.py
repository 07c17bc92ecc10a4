"""A shuffling sampler that saves the current epoch's order and its position in it (chapter 02).

Resumes mid-epoch without replaying the skipped batches; exact with ``num_workers=0``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import Sampler

from tricks_helpers._checks import check_int, check_type

__all__ = ["ResumableSampler"]


class ResumableSampler(Sampler[int]):
    """A shuffling sampler that saves the current epoch's order and its position in it.

    Each epoch draws a permutation from ``generator``; :meth:`state_dict` returns that order
    and how many of its indices were handed out, :meth:`load_state_dict` makes the next
    iteration hand out the rest of it (then new epochs draw from ``generator`` again).
    Exact with ``num_workers=0``, where the loader takes indices only as it builds batches.
    (``torchdata.stateful_dataloader.StatefulDataLoader`` does the same for any loader.)

    Args:
        num_samples: size of the data set (>= 1).
        generator: the generator the order is drawn from.

    Raises:
        TypeError: on a non-integer size or a generator that is not a ``torch.Generator``.
        ValueError: on a size below 1.
    """

    def __init__(self, num_samples: int, generator: torch.Generator) -> None:
        self.num_samples = check_int("ResumableSampler", "num_samples", num_samples, minimum=1)
        self.generator = check_type("ResumableSampler", "generator", generator, torch.Generator)
        self.order: list[int] = []
        self.position = 0
        self._pending = False

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        if not self._pending:
            self.order = torch.randperm(self.num_samples, generator=self.generator).tolist()
            self.position = 0
        self._pending = False
        while self.position < len(self.order):
            index = self.order[self.position]
            self.position += 1
            yield index

    def state_dict(self) -> dict[str, Any]:
        """The current epoch's order and the number of indices already handed out."""
        return {"order": list(self.order), "position": self.position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume inside the saved epoch at the saved position (``{"order": [], "position":
        0}``, saved before the first epoch began, starts afresh).

        Raises:
            TypeError: when ``state`` is not a dict.
            ValueError: when its order is not a permutation of the data set or the position
                is outside it.
        """
        check_type("ResumableSampler.load_state_dict", "state", state, dict)
        order, position = state.get("order"), state.get("position")
        if order == [] and position == 0:  # saved before its first epoch began
            self.order, self.position, self._pending = [], 0, False
            return
        if not isinstance(order, list) or sorted(order) != list(range(self.num_samples)):
            raise ValueError(
                f"ResumableSampler.load_state_dict: order must be a permutation of "
                f"range({self.num_samples})"
            )
        check_int("ResumableSampler.load_state_dict", "position", position, minimum=0)
        if position > self.num_samples:
            raise ValueError(
                f"ResumableSampler.load_state_dict: position must be <= {self.num_samples}, "
                f"got {position}"
            )
        self.order, self.position, self._pending = list(order), position, True
