"""Why a quantized model is (or is not) faster, as invariants (introduced in chapter 07).

A latency verdict is a measurement; what explains it does not change from machine to machine:

- :func:`transformer_mlp`: the feed-forward block of a transformer,
  ``Linear(h, 4h) -> GELU -> Linear(4h, h)``, the Linear-heavy model int8 is made for;
- :func:`weight_bytes`: the bytes of the tensors a model holds (weights, biases, scales, zero
  points), counting the int8/int4 payloads inside quantized tensor subclasses and legacy
  packed parameters: what one forward pass must read at least once;
- :func:`payload`: the integer data inside a quantized weight, whichever tensor subclass a
  torchao release wraps it in;
- :func:`matmul_flops`: the floating-point *and integer* matrix-multiply operations of a call,
  counted by :class:`torch.utils.flop_counter.FlopCounterMode`, which knows ``aten.mm`` and
  ``aten.addmm`` but not the quantized kernels; they are added here through its
  ``custom_mapping``, so the counts show that quantization keeps the multiply-adds and
  changes the kernel that does them;
- :data:`TORCHAO_NEEDED`, :func:`torchao_supports`, :func:`torchao_needs` and
  :func:`require_torchao`: which sections of chapter 07 need which torchao release, decided
  section by section before an import fails deep inside torchao;
- :func:`profiled_kernels`: the matrix-multiply kernels that actually ran, read from
  :mod:`torch.profiler` events (this sees inside ``torch.compile``-d graphs, which
  ``FlopCounterMode`` does not), and :func:`kernel_kind` to say whether each is a float,
  int8 or int4 kernel.

Nothing here changes global state: the counting modes and the profiler are active only
during the call.
"""

from __future__ import annotations

import collections
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from tricks_helpers._checks import check_callable, check_choice, check_int, check_type
from tricks_helpers.memory.peaks import without_profiler_backend_lines

__all__ = [
    "transformer_mlp",
    "weight_bytes",
    "payload",
    "matmul_flops",
    "profiled_kernels",
    "kernel_kind",
    "INT8_KERNELS",
    "INT4_KERNELS",
    "FLOAT_KERNELS",
    "TORCHAO_NEEDED",
    "torchao_supports",
    "torchao_needs",
    "require_torchao",
]

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

#: Profiler names of int8 matrix-multiply kernels (eager and Inductor-lowered).
INT8_KERNELS = frozenset(
    {
        "aten::_int_mm",
        "quantized::linear_dynamic",
        "quantized::linear",
        "onednn::qlinear_pointwise",
        "aten::_weight_int8pack_mm",
    }
)
#: Profiler names of int4-weight matrix-multiply kernels.
INT4_KERNELS = frozenset(
    {
        "aten::_weight_int4pack_mm_for_cpu",
        "aten::_weight_int4pack_mm",
        "torchao::da8w4_linear_cpu",
    }
)
#: Profiler names of floating-point matrix-multiply kernels.
FLOAT_KERNELS = frozenset(
    {
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::_addmm_activation",
        "mkl::_mkl_linear",
        "mkldnn::_linear_pointwise",
    }
)
# Composite operators that only call one of the kernels above (not counted themselves).
_COMPOSITES = frozenset({"aten::linear", "aten::matmul"})
_MATMUL_NAME = re.compile(r"mm|linear|gemm", re.IGNORECASE)


def transformer_mlp(hidden: int, *, expansion: int = 4, seed: int = 0) -> nn.Sequential:
    """The feed-forward block of a transformer layer: ``Linear(h, e*h) -> GELU -> Linear(e*h, h)``.

    Args:
        hidden: the model width ``h`` (>= 1).
        expansion: the width factor of the inner layer (>= 1; 4 in most transformers).
        seed: the weights are drawn from ``torch.manual_seed(seed)`` inside
            :func:`torch.random.fork_rng`, so the global random state is not touched.

    Returns:
        The block in eval mode, float32, on the CPU; the same arguments give bitwise-equal
        weights on every call.

    Raises:
        TypeError: on non-integer arguments.
        ValueError: on a width or expansion < 1, or a seed outside ``[0, 2**63)``.
    """
    check_int("transformer_mlp", "hidden", hidden, minimum=1)
    check_int("transformer_mlp", "expansion", expansion, minimum=1)
    check_int("transformer_mlp", "seed", seed, minimum=0, maximum=2**63 - 1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = nn.Sequential(
            nn.Linear(hidden, expansion * hidden), nn.GELU(), nn.Linear(expansion * hidden, hidden)
        )
    return block.eval()


def _plain_tensors(value: Any) -> list[torch.Tensor]:
    """The plain tensors inside ``value``: tensor subclasses are flattened recursively."""
    if isinstance(value, torch.Tensor):
        if hasattr(value, "__tensor_flatten__") and type(value) not in (torch.Tensor, nn.Parameter):
            names, _ = value.__tensor_flatten__()
            found: list[torch.Tensor] = []
            for name in names:
                found += _plain_tensors(getattr(value, name))
            return found
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _plain_tensors(v)]
    return []


def weight_bytes(model: nn.Module | Mapping[str, Any]) -> int:
    """Bytes of the tensors in a model's ``state_dict``, each storage counted once.

    Quantized weights count at their stored size: the ``int8`` / packed ``int4`` payload and
    the scales and zero points of torchao tensor subclasses (flattened with
    ``__tensor_flatten__``), and the ``qint8`` weight of legacy ``torch.ao`` packed
    parameters (1 byte per element). Unlike :func:`tricks_helpers.memory.state_dict_bytes`
    (the serialized size), this is the in-memory size of the data, i.e. the bytes a forward
    pass that uses every weight must read at least once.

    Args:
        model: an ``nn.Module`` (its ``state_dict(keep_vars=True)`` is read) or a state_dict.

    Returns:
        The number of bytes, an ``int``. Non-tensor entries (e.g. a stored dtype) count 0.
        A model on ``device="meta"`` counts the bytes it would take (meta storages are told
        apart by identity, since all of them report address 0).

    Raises:
        TypeError: when ``model`` is neither a module nor a mapping.
    """
    if isinstance(model, nn.Module):
        state: Mapping[str, Any] = model.state_dict(keep_vars=True)
    elif isinstance(model, Mapping):
        state = model
    else:
        raise TypeError(
            f"weight_bytes: expected an nn.Module or a state_dict mapping, got "
            f"{type(model).__name__}"
        )
    seen: dict[tuple[int, int], int] = {}
    alive = []  # keep each keyed tensor alive, so a storage's identity is not reused
    for value in state.values():
        for t in _plain_tensors(value):
            nbytes = t.numel() * t.element_size()
            if t.is_quantized:  # qint8 & co: no plain untyped storage to key on
                key = (id(t), 0)
            elif t.device.type == "meta":  # every meta storage has data_ptr() == 0
                key = (t.untyped_storage()._cdata, t.storage_offset() * t.element_size())
            else:
                key = (t.untyped_storage().data_ptr(), t.storage_offset() * t.element_size())
            alive.append(t)
            seen[key] = max(seen.get(key, 0), nbytes)
    return sum(seen.values())


def payload(weight: torch.Tensor) -> torch.Tensor:
    """The integer payload of a quantized weight: its largest integer tensor inside.

    torchao releases wrap the same data differently (torchao 0.18's ``Int8Tensor`` keeps it
    as ``.qdata``; before, ``AffineQuantizedTensor`` kept it as ``.tensor_impl.int_data``):
    this reads it through ``__tensor_flatten__``, whatever the subclass, so a chapter can show
    the stored dtype and shape (``int8`` weights, or two 4-bit weights per ``uint8``) on any
    release.

    Args:
        weight: a quantized weight (a tensor subclass) or a plain tensor.

    Returns:
        The inner tensor of an integer dtype with the most elements (the weight itself when
        it is a plain integer tensor).

    Raises:
        TypeError: when ``weight`` is not a tensor.
        ValueError: when it holds no integer tensor (e.g. a float weight).
    """
    check_type("payload", "weight", weight, torch.Tensor)
    found = [
        t
        for t in _plain_tensors(weight)
        if not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool
    ]
    if not found:
        raise ValueError(
            f"payload: a {type(weight).__name__} of dtype {weight.dtype} holds no integer data"
        )
    return max(found, key=lambda t: t.numel())


def _linear_like_flops(x_shape: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    # (..., K) input times a (K, N) weight: 2 * M * K * N, where M * K = numel of the input.
    return 2 * math.prod(x_shape) * out_shape[-1]


def _int_mm_flops(a_shape: Any, b_shape: Any, *args: Any, **kwargs: Any) -> int:
    return 2 * a_shape[0] * a_shape[1] * b_shape[1]


def _flop_mapping() -> dict[Any, Callable[..., int]]:
    aten = torch.ops.aten
    mapping: dict[Any, Callable[..., int]] = {
        aten._int_mm: _int_mm_flops,
        aten._weight_int8pack_mm: _linear_like_flops,
        aten._weight_int4pack_mm_for_cpu: _linear_like_flops,
        torch.ops.quantized.linear_dynamic: _linear_like_flops,
    }
    return mapping


def matmul_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, int]:
    """Matrix-multiply operations of ``fn(*args, **kwargs)`` per operator, float and integer.

    Runs the call once under ``torch.no_grad()`` and
    :class:`~torch.utils.flop_counter.FlopCounterMode`, extended (``custom_mapping``) with
    formulas for ``aten._int_mm``, ``aten._weight_int8pack_mm``,
    ``aten._weight_int4pack_mm_for_cpu`` and the legacy ``quantized.linear_dynamic``: a
    multiply-add counts 2 operations whether it is done in float32, int8 or int4. A call
    that is compiled by ``torch.compile`` is not seen inside (use :func:`profiled_kernels`).

    Args:
        fn: the call to count (a module or any callable).

    Returns:
        Operator name in the profiler's spelling (e.g. ``"aten::_int_mm"``, so
        :func:`kernel_kind` applies) -> operations, sorted by name; operators with no matrix
        multiply are left out.

    Raises:
        TypeError: on a non-callable ``fn``.
    """
    check_callable("matmul_flops", "fn", fn)
    counter = FlopCounterMode(display=False, custom_mapping=_flop_mapping())
    with counter, torch.no_grad():
        fn(*args, **kwargs)
    counts = counter.get_flop_counts().get("Global", {})
    named = {str(op).replace(".", "::", 1): int(n) for op, n in counts.items() if n}
    return dict(sorted(named.items()))


def profiled_kernels(
    fn: Callable[..., Any], *args: Any, runs: int = 1, **kwargs: Any
) -> collections.Counter[str]:
    """The matrix-multiply kernels that ran during ``fn(*args, **kwargs)``, with call counts.

    The call runs ``runs`` times under ``torch.no_grad()`` and :mod:`torch.profiler` (CPU
    activity). An event counts when its name looks like a matrix multiply (``mm``,
    ``linear``, ``gemm``) and no event under it does too, so a composite such as
    ``aten::linear`` is replaced by the kernel it called (``aten::addmm``). Events of
    compiled graphs (``torch.compile``) are seen, e.g. ``onednn::qlinear_pointwise``.
    Warm the call up first: a first call that compiles runs other code.

    Args:
        fn: the call to profile.
        runs: how many calls to record (>= 1); counts are totals over them.

    Returns:
        Kernel name -> calls (see :func:`kernel_kind` for what each name is).

    Raises:
        TypeError: on a non-callable ``fn`` or a non-integer ``runs``.
        ValueError: on ``runs`` < 1.
    """
    check_callable("profiled_kernels", "fn", fn)
    runs = check_int("profiled_kernels", "runs", runs, minimum=1)
    from torch.profiler import ProfilerActivity, profile

    with (
        without_profiler_backend_lines(),
        torch.no_grad(),
        profile(activities=[ProfilerActivity.CPU]) as prof,
    ):
        for _ in range(runs):
            fn(*args, **kwargs)

    def matmul_like(event: Any) -> bool:
        return bool(_MATMUL_NAME.search(event.name)) and "::" in event.name

    def has_matmul_below(event: Any) -> bool:
        return any(matmul_like(c) or has_matmul_below(c) for c in event.cpu_children)

    counts: collections.Counter[str] = collections.Counter()
    for event in prof.events():
        if matmul_like(event) and event.name not in _COMPOSITES and not has_matmul_below(event):
            counts[event.name] += 1
    return counts


def kernel_kind(name: str) -> str:
    """``"int8"``, ``"int4"`` or ``"float"`` for a kernel name of :func:`profiled_kernels`.

    Raises:
        TypeError: on a non-string name.
        ValueError: on a name this module does not know (add it to one of the sets).
    """
    check_type("kernel_kind", "name", name, str)
    for kind, names in (("int8", INT8_KERNELS), ("int4", INT4_KERNELS), ("float", FLOAT_KERNELS)):
        if name in names:
            return kind
    raise ValueError(
        f"kernel_kind: unknown kernel {name!r}; known: "
        f"{sorted(INT8_KERNELS | INT4_KERNELS | FLOAT_KERNELS)}"
    )


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
