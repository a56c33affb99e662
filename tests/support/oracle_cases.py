"""Oracle-sweep cases: NumPy-spelled user functions for every function in the rule table.

``TABLE`` maps a NumPy-level name (``"sum"``, ``"linalg.norm"``, ``"scipy.special.expit"``) to
a builder that returns the cases for that function: every argument kind (Python float, 0-d,
1-d, 2-d, broadcast pairs, float32) and every ``axis``/``keepdims``/``ord``/``offset``/``k``
variant it takes, at points away from kinks and inside its domain.  A case is source text in
NumPy spelling (``np.``/``sp.``), so the very same code object runs with ``np`` re-bound to
``autograd.numpy`` or ``jax.numpy`` (the oracles).  ``test_oracle_sweep.py`` enumerates
``NUMPY_BINDINGS``: a bound function without an entry here fails there, so a new rule is swept
the moment it is added.  Entries for functions not (yet) bound are simply not run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

SHAPES = {"float": None, "0d": (), "1d": (4,), "2d": (3, 4), "col": (3, 1), "row": (1, 4),
          "sq": (3, 3), "3d": (2, 3, 4), "f32": (3, 4)}


@dataclass
class Case:
    """One user function and its arguments; ``wrt``: the float arguments differentiated."""

    key: str
    label: str
    source: str
    args: tuple
    wrt: tuple
    extras: dict = field(default_factory=dict)
    f32: bool = False
    index: int = 0           # its place among the cases of its function

    @property
    def id(self) -> str:
        return f"{self.key}[{self.label}]"


def _rng(key: str, label: str) -> np.random.Generator:
    seed = sum((i + 1) * ord(c) for i, c in enumerate(key + "/" + label))
    return np.random.default_rng(seed)


def _sample(rng: np.random.Generator, domain: str, shape: tuple) -> np.ndarray:
    """Values inside ``domain``, away from its edges, zero and (for ``away``) the integers."""
    if domain == "real":
        return rng.uniform(-1.5, 1.5, shape)
    if domain == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "unit":
        return rng.uniform(-0.8, 0.8, shape)
    if domain == "gt1":
        return rng.uniform(1.5, 3.0, shape)
    if domain == "away":
        sign = rng.choice([-1.0, 1.0], shape)
        return sign * (rng.integers(0, 3, shape) + rng.uniform(0.2, 0.8, shape))
    if domain == "spd":          # a well-conditioned matrix (batch): random + 3 I
        a = rng.uniform(-0.5, 0.5, shape)
        return a + 3.0 * np.eye(shape[-1])
    raise ValueError(domain)


def value(rng: np.random.Generator, kind: str, domain: str = "real"):
    """An argument of ``kind`` (a name of ``SHAPES`` or a shape tuple) inside ``domain``;
    ``"sq:spd"`` names its own domain."""
    if isinstance(kind, str) and ":" in kind:
        kind, domain = kind.split(":")
    shape = SHAPES[kind] if isinstance(kind, str) else kind
    if shape is None:
        return float(_sample(rng, domain, ()))
    out = _sample(rng, domain, shape)
    return out.astype(np.float32) if kind == "f32" else out


def weighted(key: str, label: str, params: str, expr: str, args: tuple,
             wrt: tuple | None = None, extras: dict | None = None) -> Case:
    """``def f(params): return np.sum(expr * W)`` with ``W`` fixed, shaped like ``expr``."""
    extras = dict(extras or {})
    namespace = {"np": np, **_namespaces(), **extras}
    out = eval(f"lambda {params}: {expr}", namespace)(*[_copy(a) for a in args])
    rng = _rng(key, label + "/W")
    f32 = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args)
    if np.ndim(out) == 0:
        w = float(rng.uniform(0.5, 1.5))
    else:
        w = rng.uniform(0.5, 1.5, np.shape(out))
        w = w.astype(np.float32) if f32 else w
    extras["W"] = w
    source = f"def f({params}):\n    return np.sum({expr} * W)\n"
    return _case(key, label, source, args, wrt, extras, f32)


def raw(key: str, label: str, source: str, args: tuple, wrt: tuple | None = None,
        extras: dict | None = None) -> Case:
    """A case whose whole function is written out (several statements, tuple results)."""
    f32 = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args)
    return _case(key, label, source, args, wrt, dict(extras or {}), f32)


def _case(key, label, source, args, wrt, extras, f32) -> Case:
    if wrt is None:
        wrt = tuple(i for i, a in enumerate(args)
                    if isinstance(a, float) or (isinstance(a, np.ndarray)
                                                and a.dtype.kind == "f"))
    return Case(key, label, source, tuple(args), wrt, extras, f32)


def _copy(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _namespaces() -> dict:
    try:
        return {"sp": importlib.import_module("scipy.special")}
    except ImportError:                       # pragma: no cover - scipy is a test dependency
        return {}


# --- families ---------------------------------------------------------------------------

UNARY_KINDS = ("float", "0d", "1d", "2d", "f32")
PAIRS = (("float", "float"), ("float", "2d"), ("0d", "1d"), ("1d", "1d"), ("2d", "1d"),
         ("col", "row"), ("f32", "f32"))


def unary(domain: str = "real", call: str = "np.{name}({x})") -> Callable:
    """An elementwise differentiable function of one argument, at every kind."""
    def build(key: str) -> list[Case]:
        name = key.split(".")[-1]
        cases = []
        for kind in UNARY_KINDS:
            rng = _rng(key, kind)
            expr = call.format(name=name, x="x")
            cases.append(weighted(key, kind, "x", expr, (value(rng, kind, domain),)))
        return cases
    return build


def piecewise_constant(domain: str = "away") -> Callable:
    """floor/sign/...: a zero derivative, next to a differentiable term."""
    def build(key: str) -> list[Case]:
        name = key.split(".")[-1]
        return [weighted(key, kind, "x", f"(np.{name}(x) * x + x)",
                         (value(_rng(key, kind), kind, domain),)) for kind in UNARY_KINDS]
    return build


def predicate(expr: str = "np.{name}(x)") -> Callable:
    """isnan/isfinite/logical_not: a mask that selects between two branches."""
    def build(key: str) -> list[Case]:
        name = key.split(".")[-1]
        mask = expr.format(name=name)
        return [weighted(key, kind, "x", f"np.where({mask}, x * 2.0, x * x)",
                         (value(_rng(key, kind), kind, "away"),)) for kind in UNARY_KINDS]
    return build


def binary(dx: str = "real", dy: str = "real", call: str = "np.{name}(x, y)",
           pairs: tuple = PAIRS) -> Callable:
    """An elementwise function of two arguments, at every broadcast pair."""
    def build(key: str) -> list[Case]:
        name = key.split(".")[-1]
        cases = []
        for kx, ky in pairs:
            label = f"{kx},{ky}"
            rng = _rng(key, label)
            args = (value(rng, kx, dx), value(rng, ky, dy))
            cases.append(weighted(key, label, "x, y", call.format(name=name), args))
        return cases
    return build


def comparison(call: str = "np.{name}(x, y)") -> Callable:
    """A boolean function of two arguments: it chooses between two differentiable branches."""
    return binary("away", "away", "np.where(" + call + ", x * y, x - y)",
                  (("float", "float"), ("0d", "1d"), ("2d", "1d"), ("col", "row")))


REDUCE_2D = ((None, False), (None, True), (0, False), (0, True), (1, False), (-1, True),
             ((0, 1), False), ((0, 1), True))
"""(axis, keepdims) variants of a reduction over a 2-D array."""


def reduction(domain: str = "real", extra: tuple = ("",), kinds_1d: bool = True) -> Callable:
    """A reduction: axis None/0/1/-1/(0, 1) of a 2-D array with and without keepdims, 1-D,
    float, 0-d, float32 (the ``extra`` arguments, as ddof=1, on a few of them)."""
    def build(key: str) -> list[Case]:
        name = key.split(".")[-1]
        cases = []
        for more in extra:
            for axis, keep in (REDUCE_2D if not more else REDUCE_2D[1:4]):
                label = f"2d,axis={axis},keepdims={keep}{more}"
                x = value(_rng(key, label), "2d", domain)
                expr = f"np.{name}(x, axis={axis!r}, keepdims={keep}{more})"
                cases.append(weighted(key, label, "x", expr, (x,)))
            if kinds_1d:
                for kind, axis in (("1d", None), ("1d", 0), ("float", None), ("0d", None),
                                   ("f32", 1)):
                    if more and kind != "1d":
                        continue          # (ddof=1 of one value is nan)
                    label = f"{kind},axis={axis}{more}"
                    x = value(_rng(key, label), kind, domain)
                    expr = f"np.{name}(x, axis={axis!r}{more})"
                    cases.append(weighted(key, label, "x", expr, (x,)))
        return cases
    return build


def calls(*variants: tuple) -> Callable:
    """Explicit variants: ``(label, params, expr, kinds/values, domain)`` each."""
    def build(key: str) -> list[Case]:
        name = key.split(".")[-1]
        cases = []
        for label, params, expr, kinds, *rest in variants:
            domain = rest[0] if rest else "real"
            rng = _rng(key, label)
            args = tuple(value(rng, k, domain) if isinstance(k, (str, tuple)) else k
                         for k in kinds)
            cases.append(weighted(key, label, params, expr.format(name=name), args))
        return cases
    return build


def sources(*variants: tuple) -> Callable:
    """Whole functions: ``(label, source, kinds, domain)`` each."""
    def build(key: str) -> list[Case]:
        cases = []
        for label, source, kinds, *rest in variants:
            domain = rest[0] if rest else "real"
            rng = _rng(key, label)
            args = tuple(value(rng, k, domain) if isinstance(k, (str, tuple)) else k
                         for k in kinds)
            cases.append(raw(key, label, source.replace("{name}", key.split(".")[-1]), args))
        return cases
    return build


def _u(expr: str, *kinds_labels: tuple, domain: str = "real") -> list[tuple]:
    return [(label, "x", expr, (kind,), domain) for label, kind in kinds_labels]


# --- the table ----------------------------------------------------------------------------

TABLE: dict[str, Callable] = {}

for _name, _domain in {
        "absolute": "away", "fabs": "away", "negative": "real", "positive": "real",
        "sin": "real", "cos": "real", "tan": "unit", "arcsin": "unit", "arccos": "unit",
        "arctan": "real", "sinh": "real", "cosh": "real", "tanh": "real", "arcsinh": "real",
        "arccosh": "gt1", "arctanh": "unit", "exp": "real", "exp2": "real", "expm1": "real",
        "log": "pos", "log2": "pos", "log10": "pos", "log1p": "pos", "sqrt": "pos",
        "cbrt": "away", "square": "real", "reciprocal": "away", "deg2rad": "real",
        "rad2deg": "real", "degrees": "real", "radians": "real", "sinc": "away",
        "nan_to_num": "real", "real": "real", "conj": "real", "conjugate": "real",
        "real_if_close": "real", "imag": "real", "angle": "away",
}.items():
    TABLE[_name] = unary(_domain)
for _name in ("floor", "ceil", "trunc", "rint", "sign", "signbit", "fix", "around", "round"):
    TABLE[_name] = piecewise_constant()
for _name in ("isfinite", "isinf", "isnan"):
    TABLE[_name] = predicate()
TABLE["logical_not"] = predicate("np.logical_not(x > 0.0)")

for _name, (_dx, _dy) in {
        "add": ("real", "real"), "subtract": ("real", "real"), "multiply": ("real", "real"),
        "divide": ("real", "away"), "true_divide": ("real", "away"), "power": ("pos", "real"),
        "float_power": ("pos", "real"), "arctan2": ("away", "away"), "hypot": ("away", "away"),
        "logaddexp": ("real", "real"), "logaddexp2": ("real", "real"),
        "maximum": ("real", "real"), "minimum": ("real", "real"), "fmax": ("real", "real"),
        "fmin": ("real", "real"), "fmod": ("real", "away"), "remainder": ("real", "away"),
        "mod": ("real", "away"), "copysign": ("away", "away"),
}.items():
    TABLE[_name] = binary(_dx, _dy)
TABLE["floor_divide"] = binary("real", "away", "(np.floor_divide(x, y) * x + y)")
for _name in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal"):
    TABLE[_name] = comparison()
for _name in ("logical_and", "logical_or", "logical_xor"):
    TABLE[_name] = comparison("np.{name}(x > 0.0, y > 0.0)")

_power_more = calls(
    ("int exponent", "x", "np.power(x, 2)", ("2d",), "pos"),
    ("float exponent", "x", "np.power(x, 3.0)", ("1d",), "pos"),
    ("float base", "x", "np.power(2.0, x)", ("1d",)),
    ("python floats", "x", "np.power(x, 2)", ("float",), "pos"),
)
_power_main = TABLE["power"]
TABLE["power"] = lambda key: _power_main(key) + _power_more(key)

for _name in ("sum", "mean", "max", "min", "amax", "amin", "nansum", "nanmean", "nanmax",
              "nanmin", "ptp"):
    TABLE[_name] = reduction()
for _name in ("prod", "nanprod"):
    TABLE[_name] = reduction("pos")
for _name in ("std", "var", "nanstd", "nanvar"):
    TABLE[_name] = reduction("real", ("", ", ddof=1"))
for _name in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
    TABLE[_name] = calls(*[(f"2d,axis={a}", "x", f"np.{{name}}(x, axis={a!r})", ("2d",), "pos")
                           for a in (None, 0, 1, -1)],
                         ("1d", "x", "np.{name}(x)", ("1d",), "pos"),
                         ("float", "x", "np.{name}(x)", ("float",), "pos"),
                         ("f32", "x", "np.{name}(x, axis=0)", ("f32",), "pos"))
TABLE["average"] = calls(
    *[(f"2d,axis={a}", "x", f"np.average(x, axis={a!r})", ("2d",)) for a in (None, 0, 1)],
    ("weights", "x, w", "np.average(x, axis=1, weights=w)", ("2d", "1d"), "pos"),
    ("float", "x", "np.average(x)", ("float",)))

TABLE["argmax"] = TABLE["argmin"] = sources(
    ("1d", "def f(x):\n    return np.sum(x * x) * x[np.{name}(x)]\n", ("1d",)),
    ("2d flat", "def f(x):\n    return np.ravel(x)[np.{name}(x)] * 2.0\n", ("2d",)),
    ("2d axis=1", "def f(x):\n    i = np.{name}(x, axis=1)\n"
     "    return np.sum(x[np.arange(3), i] ** 2)\n", ("2d",)),
)
TABLE["argsort"] = sources(
    ("1d", "def f(x):\n    return np.sum(x[np.argsort(x)] * np.arange(4.0))\n", ("1d",)),
    ("2d axis=-1", "def f(x):\n    i = np.argsort(x[0])\n"
     "    return np.sum(x[:, i] * np.arange(4.0))\n", ("2d",)),
)

TABLE["reshape"] = calls(("(4,3)", "x", "np.reshape(x, (4, 3))", ("2d",)),
                         ("-1", "x", "np.reshape(x, -1)", ("2d",)),
                         ("(2,-1)", "x", "np.reshape(x, (2, -1))", ("2d",)),
                         ("1d to (2,2)", "x", "np.reshape(x, (2, 2))", ("1d",)),
                         ("0d to (1,)", "x", "np.reshape(x, (1,))", ("0d",)),
                         ("f32", "x", "np.reshape(x, (2, 6))", ("f32",)))
TABLE["ravel"] = calls(*_u("np.ravel(x)", ("2d", "2d"), ("0d", "0d"), ("float", "float"),
                           ("f32", "f32")))
TABLE["copy"] = calls(*_u("np.copy(x)", ("2d", "2d"), ("0d", "0d"), ("float", "float")))
TABLE["transpose"] = calls(("2d", "x", "np.transpose(x)", ("2d",)),
                           ("3d axes", "x", "np.transpose(x, (2, 0, 1))", ("3d",)),
                           ("3d", "x", "np.transpose(x)", ("3d",)),
                           ("1d", "x", "np.transpose(x)", ("1d",)))
TABLE["squeeze"] = calls(("all", "x", "np.squeeze(x)", ("col",)),
                         ("axis=1", "x", "np.squeeze(x, axis=1)", ("col",)),
                         ("axis=0", "x", "np.squeeze(x, axis=0)", ("row",)))
TABLE["expand_dims"] = calls(("1d,0", "x", "np.expand_dims(x, 0)", ("1d",)),
                             ("2d,-1", "x", "np.expand_dims(x, -1)", ("2d",)),
                             ("2d,1", "x", "np.expand_dims(x, axis=1)", ("2d",)),
                             ("float", "x", "np.expand_dims(x, 0)", ("float",)))
TABLE["broadcast_to"] = calls(("1d", "x", "np.broadcast_to(x, (3, 4))", ("1d",)),
                              ("col", "x", "np.broadcast_to(x, (2, 3, 4))", ("col",)),
                              ("float", "x", "np.broadcast_to(x, (2, 3))", ("float",)))
TABLE["moveaxis"] = calls(("0,-1", "x", "np.moveaxis(x, 0, -1)", ("3d",)),
                          ("2,0", "x", "np.moveaxis(x, 2, 0)", ("3d",)),
                          ("2d", "x", "np.moveaxis(x, 0, 1)", ("2d",)))
TABLE["rollaxis"] = calls(("3d,2", "x", "np.rollaxis(x, 2)", ("3d",)),
                          ("3d,2,1", "x", "np.rollaxis(x, 2, 1)", ("3d",)))
TABLE["swapaxes"] = calls(("2d", "x", "np.swapaxes(x, 0, 1)", ("2d",)),
                          ("3d", "x", "np.swapaxes(x, 0, 2)", ("3d",)))
TABLE["flip"] = calls(*[(f"axis={a}", "x", f"np.flip(x, axis={a!r})", ("2d",))
                        for a in (None, 0, 1, (0, 1))], ("1d", "x", "np.flip(x)", ("1d",)))
TABLE["fliplr"] = TABLE["flipud"] = calls(*_u("np.{name}(x)", ("2d", "2d"), ("3d", "3d")))
TABLE["rot90"] = calls(("k=1", "x", "np.rot90(x)", ("2d",)),
                       ("k=2", "x", "np.rot90(x, 2)", ("2d",)),
                       ("k=-1,axes", "x", "np.rot90(x, -1, axes=(1, 2))", ("3d",)))
TABLE["roll"] = calls(*[(f"shift={s},axis={a}", "x", f"np.roll(x, {s}, axis={a!r})", ("2d",))
                        for s, a in ((1, None), (1, 0), (-2, 1), (5, -1))],
                      ("1d", "x", "np.roll(x, 2)", ("1d",)))
TABLE["repeat"] = calls(*[(f"axis={a}", "x", f"np.repeat(x, 2, axis={a!r})", ("2d",))
                          for a in (None, 0, 1)],
                        ("counts", "x", "np.repeat(x, [1, 0, 2, 1])", ("1d",)),
                        ("float", "x", "np.repeat(x, 3)", ("float",)))
TABLE["tile"] = calls(("2", "x", "np.tile(x, 2)", ("2d",)),
                      ("(2,1)", "x", "np.tile(x, (2, 1))", ("2d",)),
                      ("(1,2,2)", "x", "np.tile(x, (1, 2, 2))", ("1d",)),
                      ("float", "x", "np.tile(x, 3)", ("float",)))
TABLE["concatenate"] = calls(
    ("axis=0", "x, y", "np.concatenate([x, y])", ("2d", (2, 4))),
    ("axis=1", "x, y", "np.concatenate((x, y), axis=1)", ("2d", (3, 2))),
    ("axis=None", "x, y", "np.concatenate([x, y], axis=None)", ("2d", "1d")),
    ("same twice", "x", "np.concatenate([x, x * 2.0])", ("1d",)))
TABLE["stack"] = calls(*[(f"axis={a}", "x, y", f"np.stack([x, y], axis={a})", ("2d", "2d"))
                         for a in (0, 1, -1)],
                       ("floats", "x, y", "np.stack([x, y])", ("float", "float")))
for _name in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
    TABLE[_name] = calls(("1d", "x, y", "np.{name}([x, y])", ("1d", "1d")),
                         ("2d", "x, y", "np.{name}((x, y))", ("2d", "2d")),
                         ("one 2d array", "x", "np.{name}(x)", ("2d",)),
                         ("one 3d array", "x", "np.{name}(x)", ("3d",)))
for _name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    TABLE[_name] = calls(*_u("np.{name}(x)", ("float", "float"), ("0d", "0d"), ("1d", "1d"),
                             ("2d", "2d")))
TABLE["append"] = calls(("flat", "x, y", "np.append(x, y)", ("2d", "1d")),
                        ("axis=0", "x, y", "np.append(x, y, axis=0)", ("2d", (1, 4))))
for _name in ("split", "array_split", "hsplit", "vsplit", "dsplit"):
    TABLE[_name] = sources(
        ("2 parts", "def f(x):\n    a, b = np.{name}(x, 2)\n"
         "    return np.sum(a * a) + np.sum(np.sin(b))\n", ((4, 4, 2),)))
TABLE["split"] = sources(
    ("sections", "def f(x):\n    a, b = np.split(x, 2, axis=1)\n"
     "    return np.sum(a * a) + np.sum(np.sin(b))\n", ("2d",)),
    ("indices", "def f(x):\n    a, b, c = np.split(x, [1, 3])\n"
     "    return np.sum(a) + np.sum(b * b) + np.sum(np.exp(c))\n", ("1d",)))
TABLE["array_split"] = sources(
    ("uneven", "def f(x):\n    a, b = np.array_split(x, 2, axis=0)\n"
     "    return np.sum(a * a) + np.sum(np.sin(b))\n", ("2d",)))
TABLE["diff"] = calls(("1d", "x", "np.diff(x)", ("1d",)),
                      ("n=2", "x", "np.diff(x, n=2)", ("1d",)),
                      ("axis=0", "x", "np.diff(x, axis=0)", ("2d",)))
TABLE["gradient"] = calls(("1d", "x", "np.gradient(x)", ("1d",)))
TABLE["pad"] = calls(("1", "x", "np.pad(x, 1)", ("2d",)),
                     ("widths", "x", "np.pad(x, ((1, 0), (0, 2)))", ("2d",)),
                     ("reflect", "x", "np.pad(x, 2, mode='reflect')", ("1d",)))
TABLE["sort"] = calls(("1d", "x", "np.sort(x)", ("1d",)),
                      ("axis=0", "x", "np.sort(x, axis=0)", ("2d",)),
                      ("axis=None", "x", "np.sort(x, axis=None)", ("2d",)))
TABLE["partition"] = calls(("1d", "x", "np.partition(x, 1)[1]", ("1d",)))
TABLE["take"] = calls(("flat dup", "x", "np.take(x, [0, 2, 2])", ("2d",)),
                      ("axis=1", "x", "np.take(x, [1, 0], axis=1)", ("2d",)),
                      ("scalar", "x", "np.take(x, 3)", ("1d",)))
TABLE["take_along_axis"] = calls(
    ("axis=1", "x", "np.take_along_axis(x, np.argsort(x, axis=1), axis=1)", ("2d",)))
TABLE["tril"] = TABLE["triu"] = calls(
    *[(f"k={k}", "x", f"np.{{name}}(x, k={k})", ("sq",)) for k in (0, 1, -1)],
    ("wide", "x", "np.{name}(x)", ("2d",)))
TABLE["trace"] = calls(("sq", "x", "np.trace(x)", ("sq",)),
                       ("offset=1", "x", "np.trace(x, offset=1)", ("2d",)),
                       ("offset=-1", "x", "np.trace(x, offset=-1)", ("sq",)),
                       ("3d", "x", "np.trace(x)", ((3, 3, 2),)))
TABLE["diag"] = calls(("2d", "x", "np.diag(x)", ("sq",)), ("k=1", "x", "np.diag(x, k=1)",
                                                           ("2d",)),
                      ("1d", "x", "np.diag(x)", ("1d",)))
TABLE["diagonal"] = calls(("2d", "x", "np.diagonal(x)", ("2d",)),
                          ("offset", "x", "np.diagonal(x, offset=1)", ("2d",)))
TABLE["diagflat"] = calls(("1d", "x", "np.diagflat(x)", ("1d",)))
TABLE["where"] = calls(("2d,1d", "x, y", "np.where(x > 0.0, x, y)", ("2d", "1d")),
                       ("scalar other", "x", "np.where(x > 0.0, x, 0.0)", ("2d",)),
                       ("floats", "x, y", "np.where(x > y, x, y)", ("float", "float")),
                       ("col,row", "x, y", "np.where(x > y, x * y, y)", ("col", "row")))
TABLE["clip"] = calls(("scalars", "x", "np.clip(x, -0.5, 0.5)", ("2d",), "away"),
                      ("float", "x", "np.clip(x, -0.5, 0.5)", ("float",), "away"),
                      ("arrays", "x, lo, hi", "np.clip(x, lo - 1.0, hi + 1.0)",
                       ("2d", "1d", "col"), "unit"),
                      ("None", "x", "np.clip(x, None, 0.5)", ("1d",), "away"))
TABLE["select"] = calls(("2", "x", "np.select([x > 0.5, x < -0.5], [x * x, np.sin(x)], x)",
                         ("2d",), "away"))

TABLE["dot"] = calls(("1d,1d", "x, y", "np.dot(x, y)", ("1d", "1d")),
                     ("2d,1d", "x, y", "np.dot(x, y)", ("2d", "1d")),
                     ("2d,2d", "x, y", "np.dot(x, y)", ("2d", (4, 2))),
                     ("1d,2d", "x, y", "np.dot(x, y)", ((3,), "2d")),
                     ("float,2d", "x, y", "np.dot(x, y)", ("float", "2d")),
                     ("0d,1d", "x, y", "np.dot(x, y)", ("0d", "1d")),
                     ("3d,2d", "x, y", "np.dot(x, y)", ("3d", (4, 2))),
                     ("f32", "x, y", "np.dot(x, y)", ("f32", (4, 2))))
TABLE["vdot"] = calls(("1d", "x, y", "np.vdot(x, y)", ("1d", "1d")),
                      ("2d", "x, y", "np.vdot(x, y)", ("2d", "2d")))
TABLE["inner"] = calls(("1d,1d", "x, y", "np.inner(x, y)", ("1d", "1d")),
                       ("2d,1d", "x, y", "np.inner(x, y)", ("2d", "1d")),
                       ("2d,2d", "x, y", "np.inner(x, y)", ("2d", (2, 4))),
                       ("float,1d", "x, y", "np.inner(x, y)", ("float", "1d")))
TABLE["matmul"] = calls(("2d,2d", "x, y", "np.matmul(x, y)", ("2d", (4, 2))),
                        ("1d,2d", "x, y", "np.matmul(x, y)", ((3,), "2d")),
                        ("2d,1d", "x, y", "np.matmul(x, y)", ("2d", "1d")),
                        ("1d,1d", "x, y", "np.matmul(x, y)", ("1d", "1d")),
                        ("3d,2d", "x, y", "np.matmul(x, y)", ("3d", (4, 2))),
                        ("f32", "x, y", "np.matmul(x, y)", ("f32", (4, 2))))
TABLE["outer"] = calls(("1d,1d", "x, y", "np.outer(x, y)", ("1d", (3,))),
                       ("2d,1d", "x, y", "np.outer(x, y)", ("2d", (2,))),
                       ("float,1d", "x, y", "np.outer(x, y)", ("float", "1d")))
TABLE["tensordot"] = calls(("axes=1", "x, y", "np.tensordot(x, y, axes=1)", ("2d", (4, 2))),
                           ("axes=2 scalar", "x, y", "np.tensordot(x, y, axes=2)",
                            ("2d", "2d")),
                           ("axes lists", "x, y", "np.tensordot(x, y, axes=([0], [1]))",
                            ("2d", (2, 3))),
                           ("axes=0", "x, y", "np.tensordot(x, y, axes=0)", ("1d", (3,))),
                           ("3d", "x, y", "np.tensordot(x, y, axes=([1, 2], [0, 1]))",
                            ("3d", (3, 4, 2))))
TABLE["einsum"] = calls(("ij,j->i", "x, y", "np.einsum('ij,j->i', x, y)", ("2d", "1d")),
                        ("ij,jk->ik", "x, y", "np.einsum('ij,jk->ik', x, y)", ("2d", (4, 2))),
                        ("ii->", "x", "np.einsum('ii->', x)", ("sq",)),
                        ("ii->i", "x", "np.einsum('ii->i', x)", ("sq",)),
                        ("ij->", "x", "np.einsum('ij->', x)", ("2d",)),
                        ("ij->ji", "x", "np.einsum('ij->ji', x)", ("2d",)),
                        ("i,i->", "x, y", "np.einsum('i,i->', x, y)", ("1d", "1d")),
                        ("implicit", "x, y", "np.einsum('ij,jk', x, y)", ("2d", (4, 2))),
                        ("ellipsis", "x, y", "np.einsum('...j,j->...', x, y)", ("3d", "1d")),
                        ("sublist", "x, y", "np.einsum(x, [0, 1], y, [1], [0])",
                         ("2d", "1d")))
TABLE["cross"] = calls(("3", "x, y", "np.cross(x, y)", ((3,), (3,))),
                       ("batch", "x, y", "np.cross(x, y)", ((2, 3), (3,))))
TABLE["kron"] = calls(("2d", "x, y", "np.kron(x, y)", ((2, 2), (2, 3))))
TABLE["convolve"] = TABLE["correlate"] = calls(
    *[(mode, "x, y", f"np.{{name}}(x, y, mode='{mode}')", ((5,), (3,)))
      for mode in ("full", "same", "valid")])
TABLE["polyval"] = calls(("1d", "p, x", "np.polyval(p, x)", ((3,), "1d")))
TABLE["cov"] = calls(("2d", "x", "np.cov(x)", ("2d",)),
                     ("rowvar", "x", "np.cov(x, rowvar=False)", ("2d",)))
TABLE["corrcoef"] = calls(("2d", "x", "np.corrcoef(x)", ("2d",)))
TABLE["linalg.det"] = calls(("3x3", "x", "np.linalg.det(x)", ("sq",), "spd"),
                            ("batch", "x", "np.linalg.det(x)", ((2, 3, 3),), "spd"))
TABLE["linalg.slogdet"] = sources(
    ("3x3", "def f(x):\n    s, l = np.linalg.slogdet(x)\n    return s * l\n", ("sq",), "spd"))
TABLE["linalg.inv"] = calls(("3x3", "x", "np.linalg.inv(x)", ("sq",), "spd"),
                            ("batch", "x", "np.linalg.inv(x)", ((2, 3, 3),), "spd"))
TABLE["linalg.pinv"] = calls(("3x3", "x", "np.linalg.pinv(x)", ("sq",), "spd"))
TABLE["linalg.solve"] = calls(("vector", "a, b", "np.linalg.solve(a, b)", ("sq:spd", (3,))),
                              ("matrix", "a, b", "np.linalg.solve(a, b)", ("sq:spd", (3, 2))))
TABLE["linalg.cholesky"] = sources(
    ("3x3", "def f(x):\n    return np.sum(np.linalg.cholesky(x @ x.T) * np.arange(9.0)"
     ".reshape(3, 3))\n", ("sq",), "spd"))
TABLE["linalg.eigh"] = sources(
    ("values", "def f(x):\n    w, v = np.linalg.eigh(x + x.T)\n"
     "    return np.sum(w * np.arange(3.0)) + np.sum(v ** 2 * np.arange(9.0).reshape(3, 3))\n",
     ("sq",), "spd"))
TABLE["linalg.svd"] = sources(
    ("values", "def f(x):\n    return np.sum(np.linalg.svd(x, compute_uv=False) * "
     "np.arange(1.0, 4.0))\n", ("2d",)))
TABLE["linalg.qr"] = sources(
    ("r", "def f(x):\n    q, r = np.linalg.qr(x)\n"
     "    return np.sum(r * np.arange(9.0).reshape(3, 3)) + np.sum(q[:, 0] ** 3)\n",
     ((4, 3),), "real"))
TABLE["linalg.matrix_power"] = calls(("3", "x", "np.linalg.matrix_power(x, 3)", ("sq",)))
TABLE["linalg.multi_dot"] = calls(("3", "x, y", "np.linalg.multi_dot([x, y, x.T])",
                                   ("2d", (4, 4))))
TABLE["linalg.lstsq"] = sources(
    ("tall", "def f(a, b):\n    return np.sum(np.linalg.lstsq(a, b, rcond=None)[0] ** 2)\n",
     ((4, 3), (4,))))
TABLE["linalg.norm"] = calls(
    *[(f"1d,ord={o}", "x", f"np.linalg.norm(x, ord={o})", ("1d",), "away")
      for o in ("None", "1", "2", "3", "np.inf", "-np.inf", "0.5")],
    *[(f"2d,ord={o}", "x", f"np.linalg.norm(x, ord={o})", ("2d",), "away")
      for o in ("None", "'fro'", "'nuc'", "1", "-1", "2", "-2", "np.inf", "-np.inf")],
    *[(f"2d,axis={a},keepdims={k}", "x", f"np.linalg.norm(x, axis={a!r}, keepdims={k})",
       ("2d",), "away") for a in (None, 0, 1, -1, (0, 1)) for k in (False, True)],
    ("2d,ord=1,axis=1", "x", "np.linalg.norm(x, ord=1, axis=1)", ("2d",), "away"),
    ("float", "x", "np.linalg.norm(x)", ("float",), "away"),
    ("f32", "x", "np.linalg.norm(x)", ("f32",), "away"))
for _name in ("median", "nanmedian"):
    TABLE[_name] = reduction()
for _name, _q in (("percentile", "30.0"), ("nanpercentile", "30.0"), ("quantile", "0.3"),
                  ("nanquantile", "0.3")):
    TABLE[_name] = calls(
        *[(f"2d,axis={a},keepdims={k}", "x", f"np.{_name}(x, {_q}, axis={a!r}, keepdims={k})",
           ("2d",)) for a, k in ((None, False), (0, True), (1, False))],
        ("1d", "x", f"np.{_name}(x, {_q})", ("1d",)),
        ("several q", "x", f"np.{_name}(x, [{_q}, {_q} * 2], axis=1)", ("2d",)))
TABLE["cumulative_sum"] = calls(("2d,axis=0", "x", "np.cumulative_sum(x, axis=0)", ("2d",)),
                                ("1d", "x", "np.cumulative_sum(x)", ("1d",)))
TABLE["full"] = calls(("float", "x", "np.full((2, 3), x)", ("float",)),
                      ("0d", "x", "np.full((2, 3), x)", ("0d",)),
                      ("1d fill", "x", "np.full((3, 4), x)", ("1d",)))
TABLE["full_like"] = calls(("float", "x, y", "np.full_like(y, x)", ("float", "2d")),
                           ("0d", "x, y", "np.full_like(y, x)", ("0d", "1d")))
TABLE["linspace"] = calls(("floats", "x, y", "np.linspace(x, y, 5)", ("float", "float")),
                          ("endpoint", "x, y", "np.linspace(x, y, 4, endpoint=False)",
                           ("float", "float")),
                          ("arrays", "x, y", "np.linspace(x, y, 3)", ("1d", "1d")),
                          ("axis=1", "x, y", "np.linspace(x, y, 3, axis=1)", ("1d", "1d")))
TABLE["logspace"] = calls(("floats", "x, y", "np.logspace(x, y, 4)", ("float", "float")),
                          ("base", "x, y", "np.logspace(x, y, 3, base=2.0)",
                           ("float:unit", "float")))
TABLE["geomspace"] = calls(("floats", "x, y", "np.geomspace(x, y, 4)", ("float", "float"),
                            "pos"))
TABLE["array"] = calls(("list", "x", "np.array([x, 2.0])", ("float",)),
                       ("nested", "x, y", "np.array([[x, y], [y, x * 2.0]])", ("float", "0d")),
                       ("copy", "x", "np.array(x)", ("2d",)),
                       ("arrays", "x, y", "np.array([x, y])", ("1d", "1d")))
TABLE["asarray"] = TABLE["ascontiguousarray"] = TABLE["asfortranarray"] = calls(
    *_u("np.{name}(x)", ("2d", "2d"), ("float", "float")))
TABLE["asanyarray"] = TABLE["asarray"]
TABLE["float64"] = calls(("float", "x", "np.float64(x)", ("float",)),
                         ("0d", "x", "np.float64(x)", ("0d",)))
TABLE["heaviside"] = binary("away", "real", "(np.heaviside(x, y) * x + y)")
TABLE["vecdot"] = TABLE["linalg.vecdot"] = calls(
    ("1d", "x, y", "np.{name}(x, y)", ("1d", "1d")),
    ("2d,1d", "x, y", "np.{name}(x, y)", ("2d", "1d")))
TABLE["linalg.matmul"] = calls(("2d", "x, y", "np.linalg.matmul(x, y)", ("2d", (4, 2))))
TABLE["linalg.outer"] = calls(("1d", "x, y", "np.linalg.outer(x, y)", ("1d", (3,))))
TABLE["linalg.eigvalsh"] = sources(
    ("sym", "def f(x):\n    return np.sum(np.linalg.eigvalsh(x + x.T) * np.arange(3.0))\n",
     ("sq",), "spd"))
TABLE["linalg.svdvals"] = sources(
    ("2d", "def f(x):\n    return np.sum(np.linalg.svdvals(x) * np.arange(1.0, 4.0))\n",
     ("2d",)))
TABLE["linalg.vector_norm"] = calls(
    *[(f"ord={o}", "x", f"np.linalg.vector_norm(x, ord={o})", ("2d",), "away")
      for o in ("2", "1", "3", "np.inf")],
    ("axis=1", "x", "np.linalg.vector_norm(x, axis=1, keepdims=True)", ("2d",), "away"))
TABLE["linalg.matrix_norm"] = calls(
    *[(f"ord={o}", "x", f"np.linalg.matrix_norm(x, ord={o})", ("2d",), "away")
      for o in ("'fro'", "'nuc'", "1", "2", "np.inf")])
TABLE["linalg.trace"] = calls(("sq", "x", "np.linalg.trace(x)", ("sq",)),
                              ("offset", "x", "np.linalg.trace(x, offset=1)", ("2d",)))
TABLE["linalg.diagonal"] = calls(("sq", "x", "np.linalg.diagonal(x)", ("2d",)))
TABLE["linalg.tensordot"] = calls(("axes=1", "x, y", "np.linalg.tensordot(x, y, axes=1)",
                                   ("2d", (4, 2))))
TABLE["linalg.matrix_transpose"] = TABLE["matrix_transpose"] = calls(
    ("3d", "x", "np.{name}(x)", ("3d",)))
TABLE["permute_dims"] = calls(("3d", "x", "np.permute_dims(x, (2, 0, 1))", ("3d",)))
TABLE["concat"] = calls(("axis=0", "x, y", "np.concat([x, y])", ("2d", (2, 4))))
TABLE["scipy.special.softmax"] = calls(
    ("axis=None", "x", "sp.softmax(x)", ("2d",)), ("axis=1", "x", "sp.softmax(x, axis=1)",
                                                    ("2d",)))
TABLE["scipy.special.log_softmax"] = calls(("axis=1", "x", "sp.log_softmax(x, axis=1)",
                                            ("2d",)))
TABLE["scipy.special.logit"] = calls(*_u("sp.logit(x * 0.4 + 0.5)", ("1d", "1d"),
                                         ("float", "float"), domain="unit"))
TABLE["scipy.special.erfinv"] = unary("unit", "sp.{name}({x})")
TABLE["scipy.special.xlogy"] = binary("real", "pos", "sp.xlogy(x, y)")
TABLE["linalg.cross"] = calls(("3", "x, y", "np.linalg.cross(x, y)", ((3,), (3,))),
                              ("batch", "x, y", "np.linalg.cross(x, y)", ((2, 3), (3,))))
TABLE["ediff1d"] = calls(("1d", "x", "np.ediff1d(x)", ("1d",)),
                         ("2d", "x", "np.ediff1d(x)", ("2d",)))
TABLE["trapezoid"] = calls(("1d", "x", "np.trapezoid(x)", ("1d",)),
                           ("dx,axis", "x", "np.trapezoid(x, dx=0.5, axis=0)", ("2d",)),
                           ("x points", "y, t", "np.trapezoid(y, t)", ("1d", "1d")))
TABLE["interp"] = calls(("values", "fp", "np.interp(np.array([0.3, 1.7]), np.arange(4.0), fp)",
                         ("1d",)))
TABLE["vander"] = calls(("N", "x", "np.vander(x, 3)", ("1d",)),
                        ("increasing", "x", "np.vander(x, increasing=True)", ((3,),)))
TABLE["lib.stride_tricks.sliding_window_view"] = calls(
    ("2d", "x", "np.lib.stride_tricks.sliding_window_view(x, (2, 2))", ("2d",)),
    ("axis", "x", "np.lib.stride_tricks.sliding_window_view(x, 2, axis=0)", ("2d",)))
TABLE["cumulative_prod"] = calls(("2d,axis=1", "x", "np.cumulative_prod(x, axis=1)", ("2d",),
                                  "pos"))
TABLE["matvec"] = calls(("2d,1d", "x, y", "np.matvec(x, y)", ("2d", "1d")))
TABLE["vecmat"] = calls(("1d,2d", "x, y", "np.vecmat(x, y)", ((3,), "2d")))
TABLE["compress"] = calls(("axis=1", "x", "np.compress([True, False, True, True], x, axis=1)",
                           ("2d",)))
TABLE["resize"] = calls(("grow", "x", "np.resize(x, (3, 3))", ("1d",)))
TABLE["choose"] = calls(("2", "x, y", "np.choose([0, 1, 1, 0], [x, y])", ("1d", "1d")))
TABLE["extract"] = calls(("mask", "x", "np.extract(x > 0.0, x)", ("2d",), "away"))
for _name, _domain in {"expit": "real", "erf": "real", "erfc": "real", "gammaln": "pos",
                       "digamma": "pos", "log_ndtr": "real", "ndtr": "real"}.items():
    TABLE[f"scipy.special.{_name}"] = unary(_domain, "sp.{name}({x})")
TABLE["scipy.special.logsumexp"] = calls(
    *[(f"axis={a}", "x", f"sp.logsumexp(x, axis={a!r})", ("2d",)) for a in (None, 0, 1)],
    ("keepdims", "x", "sp.logsumexp(x, axis=1, keepdims=True)", ("2d",)))
del _name, _domain, _dx, _dy


def key_of(fun) -> str:
    """The table key of a bound NumPy-level function: its name in numpy (or a submodule)."""
    for prefix, module in _modules():
        for name in (getattr(fun, "__name__", None), *dir(module)):
            if name and getattr(module, name, None) is fun:
                return prefix + name
    return repr(fun)


def _modules():
    found = [("", np), ("linalg.", np.linalg), ("fft.", np.fft),
             ("lib.stride_tricks.", np.lib.stride_tricks)]
    try:
        found.append(("scipy.special.", importlib.import_module("scipy.special")))
    except ImportError:                       # pragma: no cover
        pass
    return found


def cases_for(key: str) -> list[Case]:
    """Every case of the function named ``key`` (KeyError: no entry in the table)."""
    cases = TABLE[key](key)
    for i, case in enumerate(cases):
        case.index = i
    return cases
