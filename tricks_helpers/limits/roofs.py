"""One machine's limits as a value: its lines, its record, raised by a page (04, 07).

A :class:`Limits` holds what :func:`tricks_helpers.limits.measure_limits` measured (or what a
results file recorded, :meth:`Limits.from_record`); :meth:`Limits.lines` prints it as
``[hardware]`` lines, the percent methods hold a kernel's rate against it, and
:meth:`Limits.raised` lifts a limit to a faster rate a page measured, appending that rate to
the file :data:`RATES_ENV` names (the book's runner collects them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tricks_helpers._checks import check_int, check_number, check_type
from tricks_helpers.bench.verdicts import fmt_measured

__all__ = ["RATES_ENV", "PROBE_VERSION", "Limits"]

#: the file a chapter appends the rates it holds against its limits to (JSON lines), runner-set
RATES_ENV = "TRICKS_RATES"
#: what :func:`measure_limits` measures; a recorded set of another version is measured again
PROBE_VERSION = 2


@dataclass(frozen=True)
class Limits:
    """This machine's measured limits (how they are measured: :mod:`tricks_helpers.limits`).

    Attributes:
        threads: torch's intra-op threads while measuring.
        cache_bytes: the last-level cache size, and ``cache_source`` where it was read.
        buffer_bytes: the size of each buffer of the bandwidth copy.
        bandwidth: copy bandwidth, bytes/s.
        matmul: dtype name -> operations per second (FLOP/s; int8: integer ops/s).
        matmul_size: dtype name -> ``n`` of the square matmul measured.
        skipped: dtype name -> why it was not measured.
        raised_by: limit name (``"bandwidth"`` or a dtype) -> what raised it above the probe's
            rate (see :meth:`raised`): a roof is the highest rate this machine reached.
        where: dtype name -> the kernel and shape that reached its limit (``"mm 1024^3"``,
            ``"Linear 64x1024->4096"``, ``"07_quantization"``); without it the square size.
        origin: where these limits come from, for the first ``[hardware]`` line
            (:func:`machine_limits`: recorded for this machine, or measured by this page).
    """

    threads: int
    cache_bytes: int
    cache_source: str
    buffer_bytes: int
    bandwidth: float
    matmul: Mapping[str, float]
    matmul_size: Mapping[str, int]
    skipped: Mapping[str, str] = field(default_factory=dict)
    raised_by: Mapping[str, str] = field(default_factory=dict)
    where: Mapping[str, str] = field(default_factory=dict)
    origin: str = "measured"

    def __post_init__(self) -> None:
        """Refuse limits no measurement can give: the ratios below divide by them.

        Raises:
            TypeError: a field of the wrong type.
            ValueError: a count, size, bandwidth or rate that is not positive and finite.
        """
        where = "Limits"
        check_int(where, "threads", self.threads, minimum=1)
        check_int(where, "cache_bytes", self.cache_bytes, minimum=1)
        check_type(where, "cache_source", self.cache_source, str)
        check_int(where, "buffer_bytes", self.buffer_bytes, minimum=1)
        check_number(where, "bandwidth", self.bandwidth, minimum=0.0, strict_minimum=True)
        for name, rate in dict(self.matmul).items():
            check_number(where, f"matmul[{name!r}]", rate, minimum=0.0, strict_minimum=True)
        for name, n in dict(self.matmul_size).items():
            check_int(where, f"matmul_size[{name!r}]", n, minimum=1)

    def percent_of_bandwidth(self, nbytes: float, seconds: float) -> float:
        """Achieved bandwidth of moving ``nbytes`` in ``seconds``, in % of :attr:`bandwidth`."""
        nbytes = check_number("percent_of_bandwidth", "nbytes", nbytes, minimum=0.0)
        seconds = check_number(
            "percent_of_bandwidth", "seconds", seconds, minimum=0.0, strict_minimum=True
        )
        return 100 * nbytes / seconds / self.bandwidth

    def percent_of_matmul(self, dtype: str, operations: float, seconds: float) -> float:
        """Achieved throughput of ``operations`` in ``seconds``, in % of ``dtype``'s limit.

        Raises:
            ValueError: on a dtype that was not measured, or a non-positive time.
        """
        if dtype not in self.matmul:
            raise ValueError(
                f"percent_of_matmul: no measured limit for {dtype!r}; have {list(self.matmul)}"
            )
        operations = check_number("percent_of_matmul", "operations", operations, minimum=0.0)
        seconds = check_number(
            "percent_of_matmul", "seconds", seconds, minimum=0.0, strict_minimum=True
        )
        return 100 * operations / seconds / self.matmul[dtype]

    def lines(self) -> list[str]:
        """The limits as ``[hardware]`` lines (machine facts, masked by the sanitize file)."""
        out = [
            f"[hardware] limits on {self.threads} thread(s), {self.origin}; last-level cache "
            f"{self.cache_bytes / 2**20:g} MiB ({self.cache_source})",
            f"[hardware] memory bandwidth (copy, 2 buffers of {self.buffer_bytes / 2**20:g} MiB): "
            f"{fmt_measured(self.bandwidth / 1e9)} GB/s",
        ]
        for name, rate in self.matmul.items():
            unit = "GOP/s" if name == "int8" else "GFLOP/s"
            n = self.matmul_size.get(name, 0)
            shape = self.where.get(name) or f"{n}x{n}x{n}"
            out.append(f"[hardware] matmul {name} ({shape}): {fmt_measured(rate / 1e9)} {unit}")
        out += [
            f"[hardware] matmul {name}: not measured ({why})" for name, why in self.skipped.items()
        ]
        out += [
            f"[hardware] {name} limit raised to the rate of {source} (faster than the probe)"
            for name, source in self.raised_by.items()
        ]
        return out

    def raised(
        self,
        source: str,
        *,
        bandwidth: float | None = None,
        matmul: Mapping[str, float] | None = None,
    ) -> Limits:
        """These limits with each one raised to a rate the page measured, where that is higher.

        A limit is an upper bound: the highest rate this machine reached for that dtype, over
        the probe's sizes **and** every kernel the page times (chapter 07's bf16 ``Linear``
        beat the 128^3 probe 5x). Pass the page's rates; a limit a rate beats becomes that
        rate, and :attr:`raised_by` names ``source`` for it (a ``[hardware]`` line says so).
        Rates at or below a limit change nothing. After this, no rate passed here is above
        its limit (no point above its roof).

        Args:
            source: what the rates are, for the line (``"the transformer block"``).
            bandwidth: an achieved bandwidth, bytes/s.
            matmul: dtype name -> achieved operations/s.

        Raises:
            TypeError: on a non-mapping ``matmul``; ValueError: on a non-positive rate or a
                dtype with no measured limit.
        """
        check_type("Limits.raised", "source", source, str)
        new_bw, new_mm = self.bandwidth, dict(self.matmul)
        raised_by = dict(self.raised_by)
        if bandwidth is not None:
            rate = check_number(
                "Limits.raised", "bandwidth", bandwidth, minimum=0.0, strict_minimum=True
            )
            if rate > new_bw:
                new_bw, raised_by["bandwidth"] = rate, source
        check_type("Limits.raised", "matmul", matmul or {}, Mapping)
        for name, rate in (matmul or {}).items():
            if name not in new_mm:
                raise ValueError(
                    f"Limits.raised: no measured limit for {name!r}; have {list(new_mm)}"
                )
            rate = check_number(
                "Limits.raised", f"matmul {name!r}", rate, minimum=0.0, strict_minimum=True
            )
            if rate > new_mm[name]:
                new_mm[name], raised_by[name] = rate, source
        _append_rates(source, bandwidth, matmul or {})
        return replace(self, bandwidth=new_bw, matmul=new_mm, raised_by=raised_by)

    def record(self) -> dict[str, Any]:
        """What a results file stores of these limits (``limits`` of ``results/<id>.json``):
        ``threads``, ``cache_bytes``, ``bandwidth`` (bytes/s), ``matmul`` (operations/s),
        ``skipped``, ``probe`` (:data:`PROBE_VERSION`) and ``where`` (dtype -> kernel)."""
        where = {k: self.where.get(k) or f"mm {v}^3" for k, v in self.matmul_size.items()}
        return {
            "threads": self.threads,
            "cache_bytes": self.cache_bytes,
            "bandwidth": float(self.bandwidth),
            "matmul": {k: float(v) for k, v in self.matmul.items()},
            "skipped": dict(self.skipped),
            "probe": PROBE_VERSION,
            "where": {k: where.get(k, "") for k in self.matmul},
        }

    @classmethod
    def from_record(cls, data: Mapping[str, Any], origin: str = "recorded") -> Limits:
        """The limits a results file recorded (:meth:`record`), as :class:`Limits`.

        Raises:
            TypeError, ValueError: on a record that lacks a field or holds a bad value.
        """
        check_type("Limits.from_record", "record", data, Mapping)
        missing = {"threads", "cache_bytes", "bandwidth", "matmul", "skipped"} - set(data)
        if missing:
            raise ValueError(f"Limits.from_record: the record lacks {sorted(missing)}")
        check_type("Limits.from_record", "matmul", data["matmul"], Mapping)
        where = dict(data.get("where") or {})
        return cls(
            threads=data["threads"],
            cache_bytes=data["cache_bytes"],
            cache_source="recorded",
            buffer_bytes=max(4 * data["cache_bytes"], 32 * 2**20),
            bandwidth=data["bandwidth"],
            matmul=dict(data["matmul"]),
            matmul_size={k: 1 for k in data["matmul"]},
            skipped=dict(data["skipped"]),
            where={k: where.get(k) or "recorded" for k in data["matmul"]},
            origin=origin,
        )


def _append_rates(source: str, bandwidth: float | None, matmul: Mapping[str, float]) -> None:
    """Append the rates a chapter reached to :data:`RATES_ENV`'s file (nothing when unset)."""
    target = os.environ.get(RATES_ENV)
    if not target:
        return
    from tricks_helpers.bench.records import CHAPTER_ENV

    chapter = os.environ.get(CHAPTER_ENV) or "unknown"
    rates = {**({"bandwidth": bandwidth} if bandwidth is not None else {}), **dict(matmul)}
    with open(target, "a", encoding="utf-8") as out:
        for name, rate in rates.items():
            line = {"chapter": chapter, "name": name, "rate": float(rate), "source": source}
            out.write(json.dumps(line) + "\n")
