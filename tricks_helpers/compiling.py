"""What ``torch.compile`` does to a training step: cold start, graphs, breaks (chapter 06).

Invariant partners for the chapter's compiled training step:

- :func:`time_cold_start` times the first call of a function (which compiles) apart from the
  later calls (which run the compiled code): a measurement, to print with ``~``.
- :class:`GraphCounter` is a ``torch.compile`` backend that counts the graphs TorchDynamo hands
  it (one per compilation: a recompilation on a new shape is one more) and runs them eagerly,
  so counting costs no Inductor compilation.
- :func:`graph_breaks` runs ``torch._dynamo.explain`` and keeps the counts and the first line of
  each break reason.
- :func:`params_max_diff` is the largest absolute difference between two models' parameters.

For a given torch version, function and input shapes the counts are deterministic. These rely
on TorchDynamo internals (``torch._dynamo.explain``'s result fields) that the unit tests pin for
the torch version of ``requirements.txt``. None of them changes global state after it returns,
except that :func:`graph_breaks` leaves TorchDynamo's caches reset, as ``explain`` does.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from tricks_helpers._checks import check_callable, check_int, check_type

__all__ = [
    "ColdStart",
    "GraphBreaks",
    "GraphCounter",
    "graph_breaks",
    "params_max_diff",
    "time_cold_start",
]


@dataclass(frozen=True)
class ColdStart:
    """Durations of the first call and of the later calls of one function, in seconds.

    Attributes:
        first: the first call (for a fresh compiled function: tracing plus compilation, or
            loading Inductor's on-disk cache, plus one run).
        later: each later call, in order.
    """

    first: float
    later: tuple[float, ...]

    @property
    def steady(self) -> float:
        """Median of the later calls: the steady-state time per call."""
        return statistics.median(self.later)

    @property
    def ratio(self) -> float:
        """How many steady-state calls the first call costs (``first / steady``)."""
        return self.first / self.steady


def time_cold_start(
    fn: Callable[[], Any], *, calls: int = 10, first: Callable[[], Any] | None = None
) -> ColdStart:
    """Call ``fn()`` ``calls`` times and time the first call apart from the others.

    Use it on a freshly compiled function (after ``torch._dynamo.reset()`` where an earlier
    cell compiled the same code). Times are wall-clock (``time.perf_counter``); for CUDA work
    synchronise inside ``fn``.

    Args:
        fn: a function of no arguments.
        calls: total calls (>= 3: the first and at least two later ones).
        first: called instead of ``fn`` for the first call, e.g. ``lambda:
            kernels.compiled_code(fn)`` to capture the code compiled; ``None`` calls ``fn``.

    Returns:
        A :class:`ColdStart`.

    Raises:
        TypeError: on a non-callable ``fn`` or ``first``, or a non-integer ``calls``.
        ValueError: when ``calls`` is below 3.
        RuntimeError: when the clock does not advance during a call.
    """
    check_callable("time_cold_start", "fn", fn)
    check_int("time_cold_start", "calls", calls, minimum=3)
    if first is not None:
        check_callable("time_cold_start", "first", first)
    times = []
    for i in range(calls):
        start = time.perf_counter()
        (first if i == 0 and first is not None else fn)()
        times.append(time.perf_counter() - start)
    if min(times) <= 0.0:
        raise RuntimeError("time_cold_start: the clock did not advance during a call")
    return ColdStart(first=times[0], later=tuple(times[1:]))


@dataclass
class GraphCounter:
    """A ``torch.compile`` backend that counts the graphs it is given and runs them eagerly.

    ``torch.compile(fn, backend=counter)``: every compilation TorchDynamo makes (the first
    call, and each recompilation when a guard fails, e.g. on a new input shape) hands one graph
    to the backend. Introduced in chapter 06.

    Attributes:
        graphs: graphs received so far.
        symbolic: for each graph, how many of its inputs are symbolic sizes (``torch.SymInt``):
            0 for a graph specialised to its input shapes, 1 or more where TorchDynamo made a
            size dynamic (``dynamic=True``, ``mark_dynamic``, or automatically after a
            recompilation).
    """

    graphs: int = 0
    symbolic: list[int] = field(default_factory=list)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs += 1
        self.symbolic.append(sum(isinstance(x, torch.SymInt) for x in example_inputs))
        return gm.forward


@dataclass(frozen=True)
class GraphBreaks:
    """What ``torch._dynamo.explain`` found in one call.

    Attributes:
        graphs: graphs captured (breaks + 1 when every piece holds an operator).
        breaks: graph breaks.
        reasons: the first line of each break's reason, in order.
    """

    graphs: int
    breaks: int
    reasons: tuple[str, ...]


def graph_breaks(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> GraphBreaks:
    """Run ``fn(*args, **kwargs)`` under ``torch._dynamo.explain`` and count its graph breaks.

    ``fn`` runs once (its side effects happen). TorchDynamo's caches are reset before and
    after, so what other compiled functions already hold is compiled again on their next call.

    Args:
        fn: the function to explain (not yet compiled).
        args, kwargs: its arguments.

    Returns:
        A :class:`GraphBreaks`.

    Raises:
        TypeError: on a non-callable ``fn``.
    """
    check_callable("graph_breaks", "fn", fn)
    import torch._dynamo

    torch._dynamo.reset()
    try:
        result = torch._dynamo.explain(fn)(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    reasons = tuple(str(b.reason).strip().splitlines()[0] for b in result.break_reasons)
    return GraphBreaks(graphs=result.graph_count, breaks=result.graph_break_count, reasons=reasons)


def params_max_diff(a: nn.Module, b: nn.Module) -> float:
    """Largest absolute difference between the parameters of two models of the same structure.

    Args:
        a, b: the models (e.g. one trained eagerly, one trained compiled).

    Returns:
        ``max |a.p - b.p|`` over all parameters, as a float (0.0 when they are equal). NaN is
        the largest difference: a NaN in either model (a diverged run), even at the same place
        in both, gives ``nan``, never a finite number; an infinity facing a finite value
        gives ``inf``.

    Raises:
        TypeError: when ``a`` or ``b`` is not an ``nn.Module``.
        ValueError: when their parameter names or shapes differ, or they have no parameters.
    """
    check_type("params_max_diff", "a", a, nn.Module)
    check_type("params_max_diff", "b", b, nn.Module)
    pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
    if not pa:
        raise ValueError("params_max_diff: the models have no parameters")
    if list(pa) != list(pb):
        raise ValueError(f"params_max_diff: parameter names differ: {list(pa)} vs {list(pb)}")
    diff = 0.0
    for name, p in pa.items():
        q = pb[name]
        if p.shape != q.shape:
            raise ValueError(
                f"params_max_diff: {name!r} has shape {tuple(p.shape)} vs {tuple(q.shape)}"
            )
        d = (p.detach() - q.detach()).abs()
        if d.numel() == 0:
            continue
        if torch.isnan(d).any():  # max() would drop NaN: it is the largest difference
            return float("nan")
        diff = max(diff, d.max().item())
    return diff
