"""Conv + BatchNorm fusion for inference (introduced in chapter 06).

In eval mode a BatchNorm layer is a fixed per-channel affine map, so it can be folded into
the convolution in front of it: with ``s = gamma / sqrt(running_var + eps)``,

    W' = W * s        (scaled along the output-channel axis)
    b' = (b - running_mean) * s + beta      (b = 0 when the conv has no bias)

and ``conv'(x) == bn(conv(x))`` up to float rounding.

Guarantees:

- :func:`fuse_conv_bn` (the teaching version, one pair) works for ``Conv1d``/``Conv2d``/
  ``Conv3d`` with any stride, padding, padding mode, dilation and groups, with or without a
  conv bias, and for BatchNorm with or without ``affine``; it returns a **new** conv of the
  same class and hyper-parameters and never modifies its inputs;
- the folding is computed in float64 and cast back to the conv's dtype, so it is at least
  as accurate as ``torch.nn.utils.fusion.fuse_conv_bn_eval``;
- anything it cannot fold exactly is refused with a ``TypeError`` (wrong types) or a
  ``ValueError`` (wrong values) that says why: modules in training mode, BatchNorm without
  running statistics (``track_running_stats=False``: it normalises with batch statistics even
  in eval mode), mismatched channel counts, transposed or lazy convs, a BatchNorm of the wrong
  dimension, and **hooks**: a forward hook on the conv would see the BatchNorm's output after
  fusion, so modules carrying hooks are refused unless ``drop_hooks=True`` says to drop them;
- :func:`batchnorm_elements` counts the elements the BatchNorm layers of a model produce in
  one call (each is one read and one write that fusion removes), from ``torch.fx``'s shape
  propagation;
- :func:`fuse_model` finds the pairs with ``torch.fx``: it traces ``forward()``
  symbolically (so pairs wired in hand-written ``forward`` methods are found, as in
  ``torch.fx.experimental.optimization.fuse``) and folds every conv whose output feeds only
  the matching BatchNorm. Models ``torch.fx`` cannot trace (data-dependent control flow,
  scripted or compiled modules) are refused with an error instead of fusing nothing silently.
"""

from __future__ import annotations

import copy
import sys

import torch
from torch import fx, nn

from tricks_helpers._checks import check_bool, check_number, check_type

__all__ = [
    "fuse_conv_bn_weights",
    "fuse_conv_bn",
    "fuse_model",
    "batchnorm_elements",
    "FUSABLE_PAIRS",
]

#: Which BatchNorm class may follow which conv class.
FUSABLE_PAIRS: dict[type[nn.Module], type[nn.Module]] = {
    nn.Conv1d: nn.BatchNorm1d,
    nn.Conv2d: nn.BatchNorm2d,
    nn.Conv3d: nn.BatchNorm3d,
}

_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def fuse_conv_bn_weights(
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    eps: float,
    gamma: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fold BatchNorm statistics and affine parameters into a conv's weight and bias.

    Args:
        weight: conv weight, shape ``(out_channels, in_channels / groups, *kernel)``.
        bias: conv bias of shape ``(out_channels,)``, or ``None`` (treated as zeros).
        running_mean, running_var: BatchNorm running statistics, shape ``(out_channels,)``.
        eps: BatchNorm epsilon (a finite number >= 0).
        gamma, beta: BatchNorm weight and bias, or ``None`` for a non-affine BatchNorm
            (treated as ones and zeros).

    Returns:
        ``(fused_weight, fused_bias)`` in ``weight``'s dtype, computed in float64, detached.

    Raises:
        TypeError: when a tensor argument is not a tensor, or ``eps`` is not a number.
        ValueError: when a per-channel tensor does not have ``out_channels`` elements, or
            ``eps`` is negative or not finite.
    """
    where = "fuse_conv_bn_weights"
    check_type(where, "weight", weight, torch.Tensor)
    per_channel = (
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("gamma", gamma),
        ("beta", beta),
    )
    for name, t in per_channel:
        if t is None and name in ("running_mean", "running_var"):
            raise TypeError(f"{where}: {name} must be a Tensor, got NoneType")
        if t is not None:
            check_type(where, name, t, torch.Tensor)
    eps = check_number(where, "eps", eps, minimum=0.0)
    out_channels = weight.shape[0]
    for name, t in per_channel:
        if t is not None and tuple(t.shape) != (out_channels,):
            raise ValueError(
                f"{where}: {name} has shape {tuple(t.shape)}, "
                f"expected ({out_channels},) to match the conv's out_channels"
            )
    f64 = dict(dtype=torch.float64, device=weight.device)
    w = weight.detach().to(**f64)
    b = torch.zeros(out_channels, **f64) if bias is None else bias.detach().to(**f64)
    g = torch.ones(out_channels, **f64) if gamma is None else gamma.detach().to(**f64)
    be = torch.zeros(out_channels, **f64) if beta is None else beta.detach().to(**f64)
    scale = g / torch.sqrt(running_var.detach().to(**f64) + eps)
    fused_w = w * scale.reshape(-1, *([1] * (w.dim() - 1)))
    fused_b = (b - running_mean.detach().to(**f64)) * scale + be
    return fused_w.to(weight.dtype), fused_b.to(weight.dtype)


def _hooks(module: nn.Module) -> list[str]:
    """Names of the hook kinds registered on ``module`` itself (not its children)."""
    return [
        kind.strip("_").replace("_", " ") for kind in _HOOK_DICTS if getattr(module, kind, None)
    ]


def _check_pair(conv: nn.Module, bn: nn.Module, drop_hooks: bool) -> None:
    conv_kind = type(conv)
    if conv_kind not in FUSABLE_PAIRS:
        raise TypeError(
            f"fuse_conv_bn: expected nn.Conv1d/Conv2d/Conv3d, got "
            f"{conv_kind.__name__} (transposed, lazy and other conv subclasses are "
            f"not supported)"
        )
    expected_bn = FUSABLE_PAIRS[conv_kind]
    if type(bn) is not expected_bn:
        raise TypeError(
            f"fuse_conv_bn: {conv_kind.__name__} must be followed by "
            f"{expected_bn.__name__}, got {type(bn).__name__}"
        )
    if conv.training or bn.training:
        raise ValueError(
            "fuse_conv_bn: conv and BatchNorm must be in eval mode (call "
            ".eval()); in training mode BatchNorm normalises with batch "
            "statistics, which cannot be folded into weights"
        )
    if not bn.track_running_stats or bn.running_mean is None or bn.running_var is None:
        raise ValueError(
            "fuse_conv_bn: BatchNorm has no running statistics "
            "(track_running_stats=False): it normalises with batch statistics "
            "even in eval mode, so it cannot be folded into the conv"
        )
    if bn.num_features != conv.out_channels:
        raise ValueError(
            f"fuse_conv_bn: channel mismatch: conv has out_channels="
            f"{conv.out_channels} but BatchNorm has num_features={bn.num_features}"
        )
    if not drop_hooks:
        for name, m in (("conv", conv), ("BatchNorm", bn)):
            kinds = _hooks(m)
            if kinds:
                raise ValueError(
                    f"fuse_conv_bn: the {name} has hooks ({', '.join(kinds)}) "
                    f"that the fused conv cannot keep faithfully (a conv forward "
                    f"hook would see the BatchNorm's output); remove them, or "
                    f"pass drop_hooks=True to drop them"
                )


def fuse_conv_bn(conv: nn.Module, bn: nn.Module, *, drop_hooks: bool = False) -> nn.Module:
    """Return a new conv computing ``bn(conv(x))`` of two eval-mode modules.

    Args:
        conv: an ``nn.Conv1d``, ``nn.Conv2d`` or ``nn.Conv3d`` in eval mode (any stride,
            padding, padding mode, dilation, groups; bias optional).
        bn: the matching ``nn.BatchNorm1d/2d/3d`` in eval mode, with
            ``track_running_stats=True``; ``affine`` may be True or False.
        drop_hooks: when ``conv`` or ``bn`` carry forward/backward (pre-)hooks, drop them
            instead of raising. The fused conv never carries hooks.

    Returns:
        A new conv of the same class and hyper-parameters (same device and dtype, eval mode)
        whose weight and bias hold the folded BatchNorm; it always has a bias and no hooks,
        and ``requires_grad`` of its parameters follows ``conv.weight``. ``conv`` and ``bn``
        are untouched.

    Raises:
        TypeError: on an unsupported conv class, a BatchNorm class that does not match it, or
            a non-bool ``drop_hooks``.
        ValueError: on modules in training mode, a BatchNorm without running statistics,
            ``bn.num_features != conv.out_channels``, or hooks (unless ``drop_hooks``).
    """
    check_bool("fuse_conv_bn", "drop_hooks", drop_hooks)
    _check_pair(conv, bn, drop_hooks)
    gamma, beta = (bn.weight, bn.bias) if bn.affine else (None, None)
    w, b = fuse_conv_bn_weights(
        conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, gamma, beta
    )
    fused = type(conv)(
        conv.in_channels,
        conv.out_channels,
        conv.kernel_size,
        stride=conv.stride,
        padding=conv.padding,
        dilation=conv.dilation,
        groups=conv.groups,
        bias=True,
        padding_mode=conv.padding_mode,
        device=w.device,
        dtype=w.dtype,
    )
    requires_grad = conv.weight.requires_grad
    fused.weight = nn.Parameter(w, requires_grad=requires_grad)
    fused.bias = nn.Parameter(b, requires_grad=requires_grad)
    return fused.eval()


def _refuse_untraceable(model: nn.Module, where: str) -> None:
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError(
            f"{where}: got a scripted module ({type(model).__name__}); torch.fx "
            f"cannot trace TorchScript, so no pair would be found. Pass the eager "
            f"module, then script the result"
        )
    # a compiled module exists only once torch._dynamo was imported: never import it here
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    if eval_frame is not None and isinstance(model, eval_frame.OptimizedModule):
        raise TypeError(
            f"{where}: got a torch.compile'd module (OptimizedModule); pass the "
            f"eager module (model._orig_mod), then compile the result"
        )


def _check_eval(where: str, model: nn.Module) -> None:
    training = [name or "<model>" for name, m in model.named_modules() if m.training]
    if training:
        raise ValueError(
            f"{where}: model must be in eval mode (call .eval()); in training "
            f"mode: {', '.join(training[:3])}{' ...' if len(training) > 3 else ''}"
        )


def _trace(where: str, model: nn.Module, hint: str = "") -> fx.GraphModule:
    try:
        return fx.symbolic_trace(model)
    except Exception as err:  # TraceError, TypeError, ... from user code under tracing
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ValueError(
            f"{where}: torch.fx cannot trace {type(model).__name__}.forward "
            f"({type(err).__name__}: {first}){hint}"
        ) from err


def batchnorm_elements(model: nn.Module, *example: torch.Tensor) -> int:
    """Elements produced by the BatchNorm layers of ``model`` in one call on ``example``.

    Each element is one read and one write (8 bytes in float32) and a few float operations
    that folding BatchNorm into the conv removes. ``model`` is traced with ``torch.fx`` and run
    once under ``torch.no_grad()`` by :class:`torch.fx.passes.shape_prop.ShapeProp`, which
    records the shape of every intermediate tensor; the BatchNorm modules' outputs are summed.

    Args:
        model: the model, every submodule in eval mode (a run in training mode would update
            the running statistics).
        example: its input tensor(s).

    Returns:
        The number of elements (an ``int``; 0 when the model has no BatchNorm).

    Raises:
        TypeError: when ``model`` is not an ``nn.Module``, or is scripted or compiled.
        ValueError: when a submodule is in training mode, or ``forward`` cannot be traced.
    """
    from torch.fx.passes.shape_prop import ShapeProp

    check_type("batchnorm_elements", "model", model, nn.Module)
    _refuse_untraceable(model, "batchnorm_elements")
    _check_eval("batchnorm_elements", model)
    traced = _trace("batchnorm_elements", model)
    with torch.no_grad():
        ShapeProp(traced).propagate(*example)
    return sum(
        node.meta["tensor_meta"].shape.numel()
        for node in traced.graph.nodes
        if node.op == "call_module"
        and isinstance(traced.get_submodule(node.target), nn.modules.batchnorm._BatchNorm)
    )


def fuse_model(model: nn.Module, *, drop_hooks: bool = False) -> tuple[fx.GraphModule, int]:
    """Fuse every conv + BatchNorm pair of ``model`` into single convs, found with ``torch.fx``.

    ``model`` is traced with :func:`torch.fx.symbolic_trace`, which records the calls of
    ``forward()``, hand-written ones included. A pair is a ``call_module`` node of a
    ``Conv1d/2d/3d`` whose output feeds **only** the matching ``BatchNorm1d/2d/3d`` node
    (a conv output also used elsewhere needs its pre-BatchNorm value, and a conv module called
    at several places cannot be replaced for one of them: both are left alone, as in
    ``torch.fx.experimental.optimization.fuse``). Each pair becomes one conv made by
    :func:`fuse_conv_bn`; the BatchNorm node is removed from the graph.

    Args:
        model: the model, every submodule in eval mode; its ``forward`` must be traceable
            by ``torch.fx`` (no control flow that depends on tensor values).
        drop_hooks: tracing keeps the hooks of modules called as leaves (``nn.Conv2d``,
            ``nn.ReLU``...), but not those of the fused conv and BatchNorm nor of modules
            whose ``forward`` is inlined (containers, custom blocks, the root): by default
            such hooks are refused with ``ValueError``; ``True`` drops them.

    Returns:
        ``(fused_model, pairs_fused)``: a ``torch.fx.GraphModule`` built from a deep copy of
        ``model`` (``model`` is untouched; unfused submodules keep their names, e.g.
        ``fused.get_submodule("layer1.0.conv1")``), in eval mode, and the number of pairs
        folded. Check that number against the pairs you expect.

    Raises:
        TypeError: when ``model`` is not an ``nn.Module``, or is a scripted
            (``torch.jit.ScriptModule``) or compiled (``torch.compile``) module, which
            ``torch.fx`` cannot trace; or on a non-bool ``drop_hooks``.
        ValueError: when any submodule is in training mode, ``forward`` cannot be traced, a
            pair found cannot be folded (e.g. a BatchNorm with ``track_running_stats=False``),
            or hooks would be lost (unless ``drop_hooks``).
    """
    check_type("fuse_model", "model", model, nn.Module)
    check_bool("fuse_model", "drop_hooks", drop_hooks)
    _refuse_untraceable(model, "fuse_model")
    _check_eval("fuse_model", model)
    traced = _trace(
        "fuse_model", copy.deepcopy(model), "; fuse its pairs one by one with fuse_conv_bn instead"
    )
    graph = traced.graph
    modules = dict(traced.named_modules())
    calls: dict[str, int] = {}
    for node in graph.nodes:
        if node.op == "call_module":
            calls[node.target] = calls.get(node.target, 0) + 1
    count = 0
    fused_targets: set[str] = set()
    for node in list(graph.nodes):
        if node.op != "call_module" or len(node.args) != 1 or node.kwargs:
            continue
        prev = node.args[0]
        if not isinstance(prev, fx.Node) or prev.op != "call_module":
            continue
        conv, bn = modules[prev.target], modules[node.target]
        if type(conv) not in FUSABLE_PAIRS or type(bn) is not FUSABLE_PAIRS[type(conv)]:
            continue
        if len(prev.users) > 1 or calls[prev.target] > 1:
            continue
        fused = fuse_conv_bn(conv, bn, drop_hooks=drop_hooks)
        traced.set_submodule(prev.target, fused, strict=True)
        node.replace_all_uses_with(prev)
        graph.erase_node(node)
        fused_targets.update((prev.target, node.target))
        count += 1
    called = {n.target for n in graph.nodes if n.op == "call_module"} | fused_targets
    lost = [
        name or "<model>" for name, m in model.named_modules() if name not in called and _hooks(m)
    ]
    if lost and not drop_hooks:
        raise ValueError(
            f"fuse_model: torch.fx inlines the forward of {', '.join(lost[:3])}"
            f"{' ...' if len(lost) > 3 else ''}, so its hooks would be lost; "
            f"remove them, or pass drop_hooks=True to drop them"
        )
    graph.lint()
    traced.delete_all_unused_submodules()
    traced.recompile()
    return traced.eval(), count
