"""The functions the PyTorch sweep covers (``torch.*``, ``F.*``, ``torch.autograd.*``), and the
known differences, each with its reason.

``FUNCTION_CASES`` holds the function form of every method case of ``torch_surface`` (``m.exp(x)``
for ``x.exp()``) and calls of their own.  ``STRUCTURE_DIFFERS``: same values, gradients and
errors, but PyTorch records a different graph.  ``REFUSED``: srcgrad raises rather than answer
differently.  ``TESTED_ELSEWHERE``: offered, compared by another test.
"""

from __future__ import annotations

from typing import Any

from torch_surface import _METHOD_ARGS, CASES

FUNCTION_CASES: list[tuple[str, str, Any, str]] = []


def function(name: str, call: Any, spec: str = "f", label: str = "") -> None:
    FUNCTION_CASES.append((name, label, call, spec))


def _functional_calls() -> None:
    """The function form of each method case: ``srcgrad.exp(x)`` for ``x.exp()``."""
    for name, label, _, spec in list(CASES):
        if name.startswith("_") or name.endswith("_") or (name, label) not in _METHOD_ARGS:
            continue
        args, kwargs = _METHOD_ARGS[(name, label)]
        function(name, (lambda n, a, k: lambda m, x, *more: getattr(m, n)(x, *more, *a, **k))(
            name, args, kwargs), spec, label)




_functional_calls()
function("tensor", lambda m, x: m.tensor([[1, 2], [3, 4]]), "f")
function("tensor", lambda m, x: m.tensor([1.5, 2.0], dtype=m.float64, requires_grad=True), "f",
         "float64")
function("tensor", lambda m, x: m.tensor(x), "f", "from tensor")
function("as_tensor", lambda m, x: m.as_tensor([1.0, 2.0]), "f")
function("zeros", lambda m, x: m.zeros(2, 3), "f")
function("zeros", lambda m, x: m.zeros((2,), dtype=m.int64), "f", "int")
function("ones", lambda m, x: m.ones(2, requires_grad=True), "f")
function("empty", lambda m, x: m.empty(2, 3).shape, "f")
function("full", lambda m, x: m.full((2, 2), 1.5), "f")
function("full", lambda m, x: m.full((2,), 3), "f", "int")
function("zeros_like", lambda m, x: m.zeros_like(x), "f")
function("ones_like", lambda m, x: m.ones_like(x), "f")
function("empty_like", lambda m, x: m.empty_like(x).shape, "f")
function("full_like", lambda m, x: m.full_like(x, 2.0), "f")
function("rand_like", lambda m, x: m.rand_like(x).shape, "f")
function("randn_like", lambda m, x: m.randn_like(x).dtype, "f")
function("rand", lambda m, x: m.rand(2, 3).shape, "f")
function("randn", lambda m, x: m.randn(2, 3, dtype=m.float64).dtype, "f")
function("randint", lambda m, x: m.randint(0, 5, (3,)).dtype, "f")
function("randperm", lambda m, x: m.randperm(5).sort()[0], "f")
function("arange", lambda m, x: m.arange(5), "f")
function("arange", lambda m, x: m.arange(0.0, 1.0, 0.25), "f", "float")
function("linspace", lambda m, x: m.linspace(0, 1, 5), "f")
function("eye", lambda m, x: m.eye(3), "f")
function("eye", lambda m, x: m.eye(2, 3), "f", "rectangular")
function("cat", lambda m, x, y: m.cat([x, y]), "ff")
function("cat", lambda m, x, y: m.cat((x, y), dim=1), "ff", "dim")
function("stack", lambda m, x, y: m.stack([x, y], 1), "ff")
function("where", lambda m, c, x, y: m.where(c, x, y), "bff")
function("is_tensor", lambda m, x: m.is_tensor(x), "f")
function("is_grad_enabled", lambda m, x: m.is_grad_enabled(), "f")
function("is_inference_mode_enabled", lambda m, x: m.is_inference_mode_enabled(), "f")
function("is_anomaly_enabled", lambda m, x: m.is_anomaly_enabled(), "f")
function("is_anomaly_check_nan_enabled", lambda m, x: m.is_anomaly_check_nan_enabled(), "f")
function("get_default_dtype", lambda m, x: m.get_default_dtype(), "f")
function("from_numpy", lambda m, x: m.from_numpy(x.detach().numpy()), "f")
function("numel", lambda m, x: m.numel(x), "f")
function("manual_seed", lambda m, x: type(m.manual_seed(0)).__name__ != "", "f")
function("seed", lambda m, x: isinstance(m.seed(), int), "f")
function("pow", lambda m, x: m.pow(2.0, x), "f", "scalar base")
function("grad", lambda m, x: m.autograd.grad((x * x).sum(), x), "f")
function("grad", lambda m, x: m.autograd.grad((x * x).sum(), x, create_graph=True), "f",
         "create_graph")
function("grad", lambda m, x: m.autograd.grad(x.tanh().sum(), x, create_graph=True), "f", "tanh")
function("grad", lambda m, x: m.autograd.grad(x.sigmoid().sum(), x, create_graph=True), "f",
         "sigmoid")
function("grad", lambda m, x: m.autograd.grad(x.exp().sum(), x, create_graph=True), "f", "exp")
function("grad", lambda m, x: m.autograd.grad((x * 2).sum(), [x, x * 1]), "f", "unused")
function("backward", lambda m, x: m.autograd.backward((x * x).sum()), "f")
function("backward", lambda m, x: m.autograd.backward([x.sum(), x.exp().sum()]), "f", "two")
function("jacobian", lambda m, x: m.autograd.functional.jacobian(lambda t: t.exp(), x[0]), "f")
function("hessian", lambda m, x: m.autograd.functional.hessian(lambda t: (t ** 3).sum(), x[0]),
         "f")
function("vjp", lambda m, x, v: m.autograd.functional.vjp(lambda t: t.sin(), x, v), "ff")
function("jvp", lambda m, x, v: m.autograd.functional.jvp(lambda t: t.sin(), x, v), "ff")
function("hvp", lambda m, x, v: m.autograd.functional.hvp(lambda t: (t ** 3).sum(), x, v), "ff")
function("vhp", lambda m, x, v: m.autograd.functional.vhp(lambda t: (t ** 3).sum(), x, v), "ff")
function("broadcast_to", lambda m, x: m.broadcast_to(x[:1], (3, 4)), "f")
function("take", lambda m, x: m.take(x, m.tensor([0, 5, 11])), "f")
function("take_along_dim", lambda m, x, i: m.take_along_dim(x, i, 0), "fc")
function("einsum", lambda m, x, y: m.einsum("ij,jk->ik", x, y), "fm")
function("einsum", lambda m, x: m.einsum("ii", x), "q", "trace")
function("F.conv1d", lambda m, x, w: m.nn.functional.conv1d(x.reshape(1, 3, 4), w), "fr")
function("F.conv2d", lambda m, x, w: m.nn.functional.conv2d(
    x.reshape(1, 1, 3, 4), w[:2, :2].reshape(1, 1, 2, 2), padding=1), "ff")
function("F.embedding", lambda m, x: m.nn.functional.embedding(m.tensor([0, 2, 1]), x), "f")
function("F.layer_norm", lambda m, x: m.nn.functional.layer_norm(x, (4,)), "f")
function("gradcheck", lambda m, x: m.autograd.gradcheck(lambda t: t.sin(), (x[0],)), "f",
         "as given")
function("broadcast_to", lambda m, x: m.broadcast_to(x[:1], (3, 4)), "f")
function("take", lambda m, x: m.take(x, m.tensor([0, 5, 11])), "f")
function("take_along_dim", lambda m, x, i: m.take_along_dim(x, i, 0), "fc")
function("einsum", lambda m, x, y: m.einsum("ij,jk->ik", x, y), "fm")
function("einsum", lambda m, x: m.einsum("ii", x), "q", "trace")
function("F.conv1d", lambda m, x, w: m.nn.functional.conv1d(x.reshape(1, 3, 4), w), "fr")
function("F.conv2d", lambda m, x, w: m.nn.functional.conv2d(
    x.reshape(1, 1, 3, 4), w[:2, :2].reshape(1, 1, 2, 2), padding=1), "ff")
function("F.embedding", lambda m, x: m.nn.functional.embedding(m.tensor([0, 2, 1]), x), "f")
function("F.layer_norm", lambda m, x: m.nn.functional.layer_norm(x, (4,)), "f")
function("gradcheck", lambda m, x: m.autograd.gradcheck(
    lambda t: t.sin(), (x[0].detach().double().requires_grad_(),)), "f", "float64")
function("gradgradcheck", lambda m, x: m.autograd.gradgradcheck(
    lambda t: t.sin(), (x[0].detach().double().requires_grad_(),)), "f")
function("set_default_dtype", lambda m, x: m.set_default_dtype(m.float32), "f")

# nn.functional: ``F.<name>`` is called on the same arguments.
for _n, _spec, _args in (
        ("relu", "f", ()), ("sigmoid", "f", ()), ("tanh", "f", ()), ("gelu", "f", ()),
        ("softplus", "f", ()), ("leaky_relu", "f", (0.1,)), ("softmax", "f", (1,)),
        ("log_softmax", "f", (1,)), ("mse_loss", "ff", ()), ("l1_loss", "ff", ()),
        ("binary_cross_entropy_with_logits", "fu", ()), ("linear", "ff", ()),
        ("dropout", "f", (0.0,)), ("binary_cross_entropy", "uu", ())):
    function(f"F.{_n}", (lambda n, a: lambda m, *xs: getattr(m.nn.functional, n)(
        *[x.sigmoid() if n == "binary_cross_entropy" else x for x in xs], *a))(_n, _args),
        _spec)
function("F.cross_entropy", lambda m, x: m.nn.functional.cross_entropy(x, m.tensor([0, 2, 1])),
         "f")
function("F.nll_loss", lambda m, x: m.nn.functional.nll_loss(x.log_softmax(1),
                                                             m.tensor([0, 2, 1])), "f")
function("F.mse_loss", lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction="sum"), "ff",
         "sum")

REFUSED = [     # calls srcgrad refuses (an error) rather than answer differently from PyTorch
    ("div", "rounding_mode", lambda m, x, y: x.div(y, rounding_mode="floor"), "ff"),
    ("round", "decimals", lambda m, x: x.round(decimals=2), "f"),
]

STRUCTURE_DIFFERS = {   # same values, gradients and errors; PyTorch records more nodes
    ("__getitem__", "None"): "PyTorch indexes key by key: UnsqueezeBackward0 then Select",
    ("add_", "view of leaf"): "PyTorch replays the view after CopySlices (AsStridedBackward0)",
    ("mul_", "view of leaf"): "PyTorch replays the view after CopySlices (AsStridedBackward0)",
    ("einsum", ""): "runtime/eager/linalg.py: PyTorch records one EinsumBackward0",
    ("einsum", "trace"): "runtime/eager/linalg.py: PyTorch records one EinsumBackward0",
    ("F.conv1d", ""): "runtime/nn: PyTorch records one ConvolutionBackward0",
    ("F.conv2d", ""): "runtime/nn: PyTorch records one ConvolutionBackward0",
    ("F.layer_norm", ""): "runtime/nn: PyTorch records one NativeLayerNormBackward0",
}


TESTED_ELSEWHERE = {
    "cuda": "tests/runtime/test_devices.py (needs a GPU to compare)",
    "compile": "srcgrad.compile is the source-transformation compiler, not torch.compile",
}
