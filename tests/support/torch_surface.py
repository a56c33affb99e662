"""The Tensor surface the PyTorch sweep covers: a table of names → sample calls.

``CASES`` lists ``(name, label, call, spec)`` (see ``torch_sweep_runner``): ``call(m, *args)``
runs the same code on ``torch`` and on ``srcgrad``.  Functions (``torch.exp``, ``F.relu``) are
in ``torch_surface_functions``; every other public name of ``torch.Tensor`` is in
``srcgrad.runtime.eager.not_offered.NOT_OFFERED``, and srcgrad raises AttributeError for it.
"""

from __future__ import annotations

from typing import Any

CASES: list[tuple[str, str, Any, str]] = []


def case(name: str, call: Any, spec: str = "f", label: str = "") -> None:
    CASES.append((name, label, call, spec))


def method(name: str, spec: str = "f", *args: Any, label: str = "", **kwargs: Any) -> None:
    """A case calling ``x.name(*args, **kwargs)`` on the first argument, others appended."""
    def call(m: Any, x: Any, *more: Any) -> Any:
        return getattr(x, name)(*more, *args, **kwargs)
    label = label or (f"{args}{kwargs}" if args or kwargs else "")
    case(name, call, spec, label)
    _METHOD_ARGS[(name, label)] = (args, kwargs)


_METHOD_ARGS: dict = {}


def attribute(name: str, spec: str = "f") -> None:
    case(name, lambda m, x: getattr(x, name), spec)


# ------------------------------------------------------------------------------- elementwise
for _n in ("exp expm1 exp2 sin cos tan sinh cosh tanh atan arctan sigmoid relu abs absolute neg "
           "negative square sign sgn floor ceil trunc fix round deg2rad rad2deg erf erfc "
           "asinh arcsinh positive isnan isinf isfinite isposinf isneginf signbit logical_not "
           "nan_to_num sinc isreal").split():
    method(_n, "f")
for _n in "log log2 log10 log1p sqrt rsqrt reciprocal lgamma digamma".split():
    method(_n, "p")
for _n in "asin acos atanh arcsin arccos arctanh".split():
    method(_n, "u")
method("acosh", "p", label="")     # NaN below 1, as in PyTorch, and silent
method("arccosh", "p")
method("logit", "h")
method("logit", "p", label="outside (0, 1)")     # nan, value and gradient, as PyTorch
for _n in "sqrt log rsqrt reciprocal log2 log10 log1p".split():
    method(_n, "z", label="at 0")
method("acos", "z", label="edges")
method("nan_to_num", "z", 0.0, 1.0, -1.0, label="values")
method("clamp", "f", -0.5, 0.5)
method("clamp", "f", min=-0.5, label="min only")
method("clamp", "f", max=0.5, label="max only")
method("clip", "f", -0.5, 0.5)
method("clamp_min", "f", 0.1)
method("clamp_max", "f", 0.1)
method("clamp", "fff", label="tensor bounds")
method("pow", "p", 2.5)
method("pow", "pf", label="tensor exponent")
method("pow", "f", 2)
method("float_power", "p", 2.0)
for _n in ("add sub mul div true_divide divide multiply subtract atan2 arctan2 hypot maximum "
           "minimum fmax fmin logaddexp logaddexp2 eq ne lt le gt ge greater greater_equal less "
           "less_equal not_equal logical_and logical_or logical_xor isclose allclose equal"
           ).split():
    method(_n, "ff")
for _n in "add mul sub div eq lt maximum fmod remainder floor_divide".split():
    method(_n, "f", 0.5, label="scalar")
method("fmod", "fp")
method("remainder", "fp")
method("floor_divide", "fp")
method("add", "ff", alpha=2.0, label="alpha")
method("sub", "ff", alpha=2.0, label="alpha")
method("where", "bff", label="")
case("where", lambda m, c, x, y: x.where(c, y), "bff", "method")
method("masked_fill", "fb", 0.0)
method("logical_and", "fb", label="bool")
method("bitwise_not", "b")
method("bitwise_and", "bb")
method("bitwise_or", "bb")
method("bitwise_xor", "bb")
method("add", "fi", label="int other")
method("mul", "if", label="int self")
method("sum", "i", label="int")
method("abs", "j", label="int")
method("float", "i", label="from int")

# --------------------------------------------------------------------------------- operators
for _label, _op in (("+", lambda m, a, b: a + b), ("-", lambda m, a, b: a - b),
                    ("*", lambda m, a, b: a * b), ("/", lambda m, a, b: a / b),
                    ("**", lambda m, a, b: a ** b), ("//", lambda m, a, b: a // b),
                    ("%", lambda m, a, b: a % b), ("@", lambda m, a, b: a @ b.T),
                    ("<", lambda m, a, b: a < b), ("==", lambda m, a, b: a == b),
                    ("!=", lambda m, a, b: a != b), (">=", lambda m, a, b: a >= b)):
    case("__op__", _op, "pp", _label)
for _label, _op in (("2-x", lambda m, a: 2 - a), ("2/x", lambda m, a: 2 / a),
                    ("2**x", lambda m, a: 2 ** a), ("-x", lambda m, a: -a),
                    ("abs(x)", lambda m, a: abs(a)), ("x**2", lambda m, a: a ** 2),
                    ("x**0.5", lambda m, a: a ** 0.5), ("x+True", lambda m, a: a + True),
                    ("~b", lambda m, a: ~(a > 0)), ("b&b", lambda m, a: (a > 0) & (a < 1)),
                    ("b|b", lambda m, a: (a > 0) | (a < 1)),
                    ("b^b", lambda m, a: (a > 0) ^ (a < 1)),
                    ("x/0", lambda m, a: a / 0.0), ("1/x", lambda m, a: 1.0 / a)):
    case("__op__", _op, "p" if _label in ("x**0.5", "2**x") else "z" if "0" in _label else "f",
         _label)

# -------------------------------------------------------------------------------- reductions
for _n in "sum mean prod amax amin max min std var all any norm nansum".split():
    method(_n, "f")
    method(_n, "f", 1, label="dim 1")
for _n in "sum mean prod amax amin std var all any logsumexp nansum norm".split():
    method(_n, "f", dim=(0, 1) if _n != "norm" else 1, keepdim=True, label="keepdim")
method("max", "f", 0, True, label="dim, keepdim")
method("max", "ff", label="binary")
method("min", "ff", label="binary")
method("all", "b", label="bool")
method("any", "b", label="bool")
method("all", "i", 0, label="int dim")
method("sum", "f", dtype=None, label="dtype None")
method("sum", "f", [0, 1], label="list")
method("mean", "f", (0,), label="tuple")
method("std", "f", 0, correction=0, label="correction")
method("var", "f", 1, unbiased=False, label="unbiased")
method("norm", "f", 1, label="p=1")
method("norm", "f", p=2, dim=0, label="p=2 dim")
method("norm", "f", float("inf"), label="p=inf")
method("logsumexp", "f", 1)
method("softmax", "f", 1)
method("log_softmax", "f", 0)
method("cumsum", "f", 1)
method("cumprod", "p", 0)
method("argmax", "f")
method("argmax", "f", 1, label="dim")
method("argmin", "f", 0, True, label="keepdim")
method("count_nonzero", "b")
method("count_nonzero", "f", 0, label="dim")

# -------------------------------------------------------------------------- linear algebra
method("mm", "fm")
method("matmul", "fm")
method("matmul", "rm", label="batched")
method("matmul", "fv", label="mv")
method("mv", "fv")
method("dot", "vv")
method("vdot", "vv")
method("outer", "vv")
method("ger", "vv")
method("trace", "q")
method("det", "q")
method("inverse", "q")
method("diag", "q")
method("diag", "v", label="vector")
method("diagonal", "f")
method("tril", "f")
method("triu", "f", 1)

# ------------------------------------------------------------------------------------ shape
method("reshape", "f", 4, 3)
method("reshape", "f", (2, -1), label="tuple")
method("reshape", "f", 5, label="bad")
method("view", "f", 12)
method("view", "f", -1, 6, label="-1")
case("view", lambda m, x: x.t().view(12), "f", "non-contiguous")
method("view_as", "fm")
method("reshape_as", "fm")
method("flatten", "r")
method("flatten", "r", 1, label="start")
method("ravel", "f")
method("unflatten", "f", 1, (2, 2))
method("permute", "r", 2, 0, 1)
method("permute", "r", (1, 0, 2), label="tuple")
method("transpose", "r", 0, 2)
method("swapaxes", "r", 0, 1)
method("swapdims", "r", 0, 1)
method("movedim", "r", 0, 2)
method("moveaxis", "r", 0, -1)
method("t", "f")
method("t", "v", label="vector")
method("t", "r", label="rank 3")
attribute("T", "f")
attribute("mT", "r")
attribute("mH", "r")
attribute("H", "f")
method("adjoint", "f")
method("squeeze", "f")
case("squeeze", lambda m, x: x.reshape(3, 1, 4).squeeze(1), "f", "dim")
case("squeeze", lambda m, x: x.reshape(3, 1, 4).squeeze(0), "f", "dim not 1")
method("unsqueeze", "f", 1)
method("unsqueeze", "f", -1, label="negative")
case("expand", lambda m, x: x[:1].expand(3, 4), "f")
case("expand", lambda m, x: x[:1].expand(2, -1, 4), "f", "new dim")
case("expand_as", lambda m, x, y: x[:1].expand_as(y), "ff")
case("broadcast_to", lambda m, x: x[:1].broadcast_to((3, 4)), "f")
method("repeat", "f", 2, 1)
method("tile", "f", (2,))
method("flip", "f", 0)
method("flip", "f", (0, 1), label="both")
method("fliplr", "f")
method("flipud", "f")
method("roll", "f", 1, 1)
method("roll", "f", 2, label="flat")
method("rot90", "f")
case("gather", lambda m, x: x.gather(0, m.tensor([[0, 0, 2, 0]])), "f", "repeated")
method("clone", "f")
method("contiguous", "f")
method("narrow", "f", 1, 1, 2)
method("select", "f", 1, 2)
method("unbind", "f", 1)
method("split", "f", 2, 1)
method("split", "f", [1, 3], 1, label="sizes")
method("chunk", "f", 2, 1)
method("tensor_split", "f", 2, 1)
method("index_select", "fc", 0, label="")
case("index_select", lambda m, x: x.index_select(1, m.tensor([0, 2])), "f", "dim 1")
method("gather", "fc", 0, label="")
case("gather", lambda m, x, i: x.gather(1, i[:, :2]), "fc", "dim 1")
case("take", lambda m, x: x.take(m.tensor([0, 5, 11])), "f")
case("take_along_dim", lambda m, x, i: x.take_along_dim(i, 0), "fc")
method("masked_select", "fb")
method("argsort", "f", 1)
method("sort", "f", 1)
method("sort", "f", 0, True, label="descending")
method("topk", "f", 2)
method("nonzero", "b")
method("argwhere", "b")
method("sum_to_size", "f", 1, 4)

# ------------------------------------------------------------------------------- indexing
case("__getitem__", lambda m, x: x[1], "f", "int")
case("__getitem__", lambda m, x: x[:, 1:3], "f", "slice")
case("__getitem__", lambda m, x: x[None, 0], "f", "None")
case("__getitem__", lambda m, x: x[[0, 2]], "f", "list")
case("__getitem__", lambda m, x, b: x[b], "fb", "mask")
case("__getitem__", lambda m, x: x[..., -1], "f", "ellipsis")
case("__getitem__", lambda m, x: x[m.tensor([2, 0])], "f", "tensor")
case("__getitem__", lambda m, x: x[5], "f", "out of range")

# ------------------------------------------------------------------------ writes in place


def _inplace(name: str, spec: str, *args: Any, label: str = "") -> None:
    def call(m: Any, x: Any, *more: Any) -> Any:
        y = x * 1.0 if x.requires_grad and x.is_leaf and label == "on copy" else x
        return getattr(y, name)(*more, *args)
    case(name, call, spec, label)


for _n in ("abs_ absolute_ neg_ negative_ exp_ expm1_ sin_ cos_ tan_ tanh_ sigmoid_ relu_ "
           "floor_ ceil_ trunc_ round_ sign_ sgn_ square_ atan_ arctan_ sinh_ cosh_ "
           "asinh_ arcsinh_ deg2rad_ rad2deg_ erf_ exp2_ zero_ fix_").split():
    _inplace(_n, "f")
    _inplace(_n, "f", label="on copy")
for _n in ("sqrt_ rsqrt_ log_ log2_ log10_ log1p_ reciprocal_ acosh_ arccosh_").split():
    _inplace(_n, "p", label="on copy")
for _n in "asin_ acos_ atanh_ arcsin_ arccos_ arctanh_".split():
    _inplace(_n, "u", label="on copy")
for _n in ("add_ sub_ mul_ div_ pow_ atan2_ hypot_ maximum_ fmod_ remainder_ copy_ "
           "subtract_ multiply_ divide_ true_divide_ logaddexp_ arctan2_").split():
    if _n in ("maximum_", "logaddexp_"):
        continue
    _inplace(_n, "fp", *(() if _n != "lerp_" else (0.5,)), label="on copy")
for _n in ("clamp_ clip_").split():
    _inplace(_n, "f", -0.5, 0.5, label="on copy")
for _n in "erfc_ lgamma_ digamma_ sinc_ nan_to_num_".split():
    _inplace(_n, "p", label="on copy")
_inplace("logit_", "h", label="on copy")
_inplace("cumprod_", "p", 1, label="on copy")
_inplace("clamp_min_", "f", 0.0, label="on copy")
_inplace("clamp_max_", "f", 0.0, label="on copy")
_inplace("fill_", "f", 2.0, label="on copy")
_inplace("add_", "f", 1.0, label="leaf")
_inplace("masked_fill_", "fb", 0.0, label="on copy")
_inplace("cumsum_", "f", 0, label="on copy")
case("add_", lambda m, x: x[0:2].add_(1.0), "f", "view of leaf")
case("mul_", lambda m, x: x.view(12).mul_(2.0), "f", "view of leaf")
case("__setitem__", lambda m, x: x.__setitem__(0, 1.0), "f", "leaf")
case("__setitem__", lambda m, x, y: (x * 1.0).__setitem__((slice(None), 1), y[:, 0]), "ff",
     "copy")
case("exp_", lambda m, x: (lambda y: (y.exp_(), y.sum())[1])(x * 1.0), "f", "then use")
case("mul_", lambda m, x: (lambda y: (y.sin(), y.mul_(2.0))[1])(x.exp()), "f", "saved output")
case("__iadd__", lambda m, x: (lambda y: y.__iadd__(1.0))(x * 1.0), "f", "+=")
case("__imul__", lambda m, x: (lambda y: y.__imul__(x))(x * 1.0), "f", "*=")

# ---------------------------------------------------------------------- metadata, autograd
for _n in ("shape ndim dtype device is_leaf requires_grad is_cuda is_cpu itemsize nbytes "
           "is_sparse is_quantized is_meta").split():
    attribute(_n)
for _n in ("size dim ndimension numel nelement is_floating_point element_size tolist "
           "is_contiguous is_complex is_signed get_device is_inference is_nonzero stride "
           "storage_offset is_conj is_neg").split():
    method(_n, "f" if _n != "is_nonzero" else "s")
method("size", "f", 1, label="dim")
method("size", "f", -1, label="negative dim")
method("item", "s")
method("item", "f", label="many")
method("is_same_size", "ff")
attribute("grad_fn")
attribute("grad")
attribute("retains_grad")
attribute("data")
attribute("output_nr")
method("detach")
case("detach_", lambda m, x: (x * 1.0).detach_(), "f")
case("numpy", lambda m, x: x.numpy(), "f")
case("numpy", lambda m, x: x.detach().numpy(), "f", "detached")
method("retain_grad")
method("requires_grad_")
method("requires_grad_", "f", False, label="off")
method("requires_grad_", "i", label="int")
case("requires_grad", lambda m, x: setattr(x, "requires_grad", True), "f", "set True")
case("requires_grad", lambda m, x: setattr(x, "requires_grad", False), "f", "set False")
case("requires_grad", lambda m, x: setattr(x, "requires_grad", True), "i", "int")
case("requires_grad", lambda m, x: m.tensor([1, 2], requires_grad=True), "f", "factory int")
case("backward", lambda m, x: (x * x).sum().backward(), "f")
case("backward", lambda m, x: (x * x).backward(), "f", "non-scalar")
case("backward", lambda m, x: (x * x).backward(m.ones_like(x)), "f", "gradient")
case("backward", lambda m, x: [(x * x).sum().backward() for _ in range(2)], "f", "twice")
case("backward", lambda m, x: (lambda y: (y.backward(retain_graph=True), y.backward()))(
    x.exp().sum()), "f", "retain")
case("backward", lambda m, x: (lambda y: (y.backward(), y.backward()))(x.exp().sum()), "f",
     "freed")
case("grad", lambda m, x: ((x * 2).sum().backward(), (x * 2).grad)[1], "f", "non-leaf")
case("grad", lambda m, x: (lambda g: ((x * 3).sum().backward(), g)[1] if g is not None else g)(
    ((x * x).sum().backward(), x.grad)[1] if x.requires_grad else None), "f", "accumulates")
case("register_hook", lambda m, x: (x.register_hook(lambda g: g * 2), (x * x).sum().backward())[1],
     "f")

# ------------------------------------------------------------------------------ conversions
for _n in "float double half long int bool short".split():
    method(_n)
method("to", "f", "cpu", label="device")
case("to", lambda m, x: x.to(m.float64), "f", "dtype")
case("to", lambda m, x: x.to(dtype=m.float16), "f", "dtype kw")
case("to", lambda m, x, y: x.to(y), "fi", "other")
method("type_as", "fi")
method("cpu")
case("new_zeros", lambda m, x: x.new_zeros(2, 3), "f")
case("new_ones", lambda m, x: x.new_ones((2,)), "f")
case("new_full", lambda m, x: x.new_full((2,), 3.0), "f")
case("new_empty", lambda m, x: x.new_empty(2).shape, "f")
case("new_tensor", lambda m, x: x.new_tensor([1.0, 2.0]), "f")
case("__len__", lambda m, x: len(x), "f")
case("__float__", lambda m, x: float(x), "s")
case("__int__", lambda m, x: int(x), "s")
case("__bool__", lambda m, x: bool(x), "f")
case("__iter__", lambda m, x: list(x), "f")
case("__format__", lambda m, x: f"{x[0, 0]}", "f")
case("__format__", lambda m, x: f"{x[0, 0]:.3f}", "f", "spec")
case("__format__", lambda m, x: f"{m.tensor(3)}", "f", "int")
case("__format__", lambda m, x: f"{x}", "f", "matrix")
case("__repr__", lambda m, x: repr(x.sum()), "f", "0-d")
case("__repr__", lambda m, x: repr(x), "f")
