"""NumPy array subclasses: refused with a TypeError naming them, or taken for a tested reason.

``np.matrix`` makes ``*`` a matrix product and a masked array's ``mean`` divides by the
unmasked entries only: differentiated with a plain array's rules, both gave wrong
gradients.  Every ndarray subclass reachable from NumPy's public namespace is listed here
(a new one fails the first test until it is classified) and checked at every place an array
enters: differentiated arguments, pytree leaves, arguments not differentiated, tangents and
cotangents, values the function reads, the eager engine's Tensors and operands.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
import warnings

import numpy as np
import numpy.ma.mrecords  # noqa: F401  (a public module of NumPy's, imported on demand)
import pytest

import srcgrad
from srcgrad.runtime.subclasses import PLAIN_SUBCLASSES


def _public_subclasses() -> set[type]:
    """Every ndarray subclass found in NumPy's public modules (none under a private name)."""
    modules = [np]
    for info in pkgutil.walk_packages(np.__path__, "numpy."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") or p in ("tests", "testing", "f2py", "distutils")
               for p in parts):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                modules.append(importlib.import_module(info.name))
        except Exception:  # noqa: BLE001 - a module that needs what is not installed
            continue
    found = set()
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, np.ndarray) and \
                    value is not np.ndarray:
                found.add(value)
    return found


def _memmap(tmp_path):
    m = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(3,))
    m[:] = [0.3, -0.7, 1.1]
    return m


# each subclass: how to make one, and whether it is refused (True) or taken (False)
MAKERS = {
    np.matrix: (lambda tmp: np.matrix([[0.3, -0.7], [1.1, 0.5]]), True),
    np.ma.MaskedArray: (lambda tmp: np.ma.masked_array([0.3, -0.7, 1.1], mask=[0, 1, 0]),
                        True),
    np.ma.core.MaskedConstant: (lambda tmp: np.ma.masked, True),
    np.ma.mvoid: (lambda tmp: np.ma.array([(0.3, 1.0)], dtype=[("a", float),
                                                               ("b", float)])[0], True),
    np.ma.mrecords.MaskedRecords: (
        lambda tmp: np.ma.mrecords.fromarrays([np.array([0.3, -0.7])], names="a"), True),
    np.recarray: (lambda tmp: np.array([0.3, -0.7, 1.1]).view(np.recarray), True),
    np.char.chararray: (lambda tmp: np.char.array(["a", "bc", "d"]), True),
    np.memmap: (_memmap, False),
}


def test_every_public_ndarray_subclass_is_classified():
    unknown = _public_subclasses() - set(MAKERS)
    assert not unknown, f"classify these ndarray subclasses: {unknown}"
    assert {k for k, (_, refused) in MAKERS.items() if not refused} == set(PLAIN_SUBCLASSES)


def test_a_subclass_not_known_to_numpy_is_refused_too():
    class Mine(np.ndarray):
        pass
    with pytest.raises(TypeError, match="Mine"):
        srcgrad.grad(lambda x: np.sum(x * x))(np.ones(3).view(Mine))


def _f_two(x, y):
    return np.sum(np.sin(x) * y)


def _f_list(p):
    return np.sum(np.sin(p[0]) * p[1])


def _f_dict(p):
    return np.sum(np.sin(p["a"]) * p["b"])


_box = types.SimpleNamespace()


def _f_two_fallback(x, y):
    _box.v = x                        # an attribute assignment: the compiler refuses it
    return np.sum(np.sin(_box.v) * y)


def _arguments(where: str, value):
    plain = np.ones(np.shape(value))
    return {"wrt": (_f_two, (value, plain)), "other": (_f_two, (plain, value)),
            "fallback": (_f_two_fallback, (value, plain)),
            "list": (_f_list, ([value, plain],)),
            "dict": (_f_dict, ({"a": value, "b": plain},))}[where]


def _call(kind: str, fun, args, strict: bool):
    if kind == "grad":
        return srcgrad.grad(fun, strict=strict)(*args)
    if kind == "value_and_grad":
        return srcgrad.value_and_grad(fun, strict=strict)(*args)[1]
    if kind == "vjp":
        return srcgrad.vjp(fun, *args, strict=strict)[1](1.0)
    if kind == "jvp":
        tangents = tuple(srcgrad_zeros(a) for a in args)
        return srcgrad.jvp(fun, args, tangents, strict=strict)[1]
    return getattr(srcgrad, kind)(fun, strict=strict)(*args)


def srcgrad_zeros(value):
    flat = value if isinstance(value, (list, tuple, dict)) else None
    if flat is None:
        return np.zeros(np.shape(value))
    if isinstance(value, dict):
        return {k: np.zeros(np.shape(v)) for k, v in value.items()}
    return type(value)(np.zeros(np.shape(v)) for v in value)


def _name_of(kind: type) -> str:
    return kind.__qualname__


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("where", ["wrt", "other", "fallback", "list", "dict"])
@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "vjp", "jvp", "hessian",
                                       "jacfwd", "jacrev"])
@pytest.mark.parametrize("kind", list(MAKERS), ids=_name_of)
def test_each_subclass_is_refused_or_taken_everywhere(kind, transform, where, strict, tmp_path):
    make, refused = MAKERS[kind]
    value = make(tmp_path)
    before = np.array(value, copy=True)
    fun, args = _arguments(where, value)
    if where == "fallback" and strict:
        return                                  # strict refuses the function itself
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        if refused:
            with pytest.raises(TypeError, match=kind.__name__):
                _call(transform, fun, args, strict)
        else:                                   # the plain array's result, nothing written
            got = _call(transform, fun, args, strict)
            plain = _arguments(where, np.array(value))[1]
            want = _call(transform, fun, plain, strict)
            for g, w in zip(_leaves(got), _leaves(want)):
                np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_array_equal(np.array(value), before)


def _leaves(tree):
    if isinstance(tree, dict):
        return [v for k in sorted(tree) for v in _leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [v for t in tree for v in _leaves(t)]
    return [np.asarray(tree)]


@pytest.mark.parametrize("strict", [False, True])
def test_the_matrix_product_and_the_masked_mean_are_refused(strict):
    m = np.matrix([[0.3, -0.7], [1.1, 0.5]])
    with pytest.raises(TypeError, match=r"numpy.matrix.*matrix products.*np.asarray"):
        srcgrad.grad(lambda x: np.sum(x * x), strict=strict)(m)
    masked = np.ma.masked_array([0.3, -0.7, 1.1], mask=[0, 1, 0])
    with pytest.raises(TypeError, match=r"MaskedArray.*masked entries"):
        srcgrad.grad(lambda x: np.mean(x), strict=strict)(masked)


M = np.matrix([[0.3, -0.7], [1.1, 0.5]])


def _reads_a_matrix(x):
    return np.sum(M * x)


@pytest.mark.parametrize("transform", ["grad", "vjp", "jvp", "hessian", "jacrev"])
def test_a_subclass_the_function_reads_is_refused(transform):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        with pytest.raises(TypeError, match="matrix"):
            _call(transform, _reads_a_matrix, (np.ones((2, 2)),), False)


def test_a_subclass_tangent_or_cotangent_is_refused():
    with pytest.raises(TypeError, match="matrix"):
        srcgrad.jvp(lambda x: x * 2.0, (np.ones((2, 2)),), (np.matrix(np.ones((2, 2))),))
    for fun in (lambda x, y: x * y, _f_two_fallback):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", srcgrad.FallbackWarning)
            out, back = srcgrad.vjp(fun, np.ones((2, 2)), np.ones((2, 2)))
        with pytest.raises(TypeError, match="matrix"):
            back(np.matrix(np.ones(np.shape(out))))


@pytest.mark.parametrize("kind", list(MAKERS), ids=_name_of)
def test_the_eager_engine_refuses_them_as_tensors_and_operands(kind, tmp_path):
    make, refused = MAKERS[kind]
    value = make(tmp_path)
    t = srcgrad.tensor(np.ones(np.shape(value)), dtype=srcgrad.float64, requires_grad=True)
    for build in (srcgrad.Tensor, srcgrad.tensor, srcgrad.as_tensor, srcgrad.from_numpy):
        if refused:
            with pytest.raises(TypeError, match=kind.__name__):
                build(value)
        else:
            made = build(value).numpy()
            np.testing.assert_array_equal(made, np.asarray(value, dtype=made.dtype))
    # an operand of a recorded operation (NumPy's dispatch included) is refused by the engine;
    # where the subclass's own operator runs first (``v * t``), it cannot read a Tensor that
    # requires grad, except a masked array's, which reads the Tensor's data without asking it
    if refused and not issubclass(kind, np.ma.MaskedArray):
        with pytest.raises((TypeError, RuntimeError), match=f"{kind.__name__}|requires grad"):
            value * t
    for operation in (lambda v: t * v, lambda v: np.multiply(v, t), lambda v: np.multiply(t, v)):
        if refused:
            with pytest.raises(TypeError, match=kind.__name__):
                operation(value)
        else:
            np.testing.assert_array_equal(operation(value).detach().numpy(), np.asarray(value))


def _compiled_product(x, m):
    return np.sum(x * m)


def test_srcgrad_compile_refuses_a_subclass_beside_tensors():
    f = srcgrad.compile(_compiled_product)
    t = srcgrad.tensor(np.ones((2, 2)), dtype=srcgrad.float64, requires_grad=True)
    assert float(f(t, np.full((2, 2), 2.0)).detach().numpy()) == 8.0
    with pytest.raises(TypeError, match="matrix"):
        f(t, np.matrix(np.full((2, 2), 2.0)))


class _Model:
    """A model whose weights are a subclass, reached as an attribute (not an argument)."""

    def __init__(self, weights):
        self.W = weights
        self.layers = [np.ones((2, 2)), weights]

    def loss(self, x):
        return np.sum(self.W * x)

    def deep(self, x):
        return np.sum(self.layers[1] * x)


_WEIGHTS = {"matrix": lambda: np.matrix([[1.0, 2.0], [3.0, 4.0]]),
            "masked": lambda: np.ma.array(np.ones((2, 2)), mask=[[0, 1], [0, 0]])}


@pytest.mark.parametrize("transform", ["grad", "jvp", "hessian"])
@pytest.mark.parametrize("weights", list(_WEIGHTS))
@pytest.mark.parametrize("method", ["loss", "deep"])
@pytest.mark.parametrize("strict", [True, False])
def test_a_subclass_read_through_an_attribute_is_refused(method, strict, weights, transform):
    """``self.W * x`` with ``W`` an np.matrix is a matrix product, with a masked array it
    leaves entries out: the compiler refuses the attribute at its line, in both modes (the
    eager engine would not see it: np.ma reads an eager array's data behind its back)."""
    model = _Model(_WEIGHTS[weights]())
    fn, x = getattr(model, method), np.array([[0.5, 1.0], [1.5, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(srcgrad.CompileError, match="numpy.ma|numpy.matrix"):
            if transform == "jvp":
                srcgrad.jvp(fn, (x,), (np.ones_like(x),), strict=strict)
            else:
                getattr(srcgrad, transform)(fn, strict=strict)(x)


_MADE_INSIDE = {
    "np.ma.array": "m = np.ma.array(np.ones(3), mask=[0, 1, 0])\n    return np.sum(m * x)",
    "np.ma.masked_less": "m = np.ma.masked_less(x, 0.5)\n    return m.mean()",
    "np.asmatrix": "m = np.asmatrix(np.ones((3, 3)))\n    return np.sum(m * x[:, None])",
    "np.matrix": "m = np.matrix(np.eye(3))\n    return np.sum(m * x[:, None])",
    "ma alias": "m = ma.masked_array(np.ones(3), mask=[0, 1, 0])\n    return np.sum(m * x)",
    "from-import": "m = masked_array(np.ones(3), mask=[0, 1, 0])\n    return np.sum(m * x)",
}


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("case", list(_MADE_INSIDE))
def test_a_subclass_made_inside_the_function_is_refused(case, strict):
    """A masked array or matrix made inside the function: both engines refuse the call that
    makes it (np.ma reads an eager array's data behind its back: the gradient was zero)."""
    from compiled_helpers import define
    source = ("import numpy as np\nimport numpy.ma as ma\nfrom numpy.ma import masked_array\n"
              f"\n\ndef f(x):\n    {_MADE_INSIDE[case]}\n")
    fn = define(source, {}, name="f")
    x = np.array([0.2, 0.7, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(x)                                                 # NumPy runs it
        with pytest.raises((srcgrad.CompileError, TypeError), match="subclass"):
            srcgrad.grad(fn, strict=strict)(x)


_LATER = {"list": [np.eye(2)], "dict": {"W": np.eye(2)}}


def _reads_a_list(x):
    return np.sum(_LATER["list"][0] * x)


def _reads_a_dict(x):
    return np.sum(_LATER["dict"]["W"] * x)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("fn", [_reads_a_list, _reads_a_dict])
def test_a_subclass_put_into_a_container_after_the_first_call_is_refused(fn, strict):
    """The list or dict a function reads is read again at every call: a matrix put in later
    (no name rebound) is refused, not multiplied elementwise."""
    g, x = srcgrad.grad(fn, strict=strict), np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(g(x), np.eye(2))
    saved = _LATER["list"][0], _LATER["dict"]["W"]
    try:
        _LATER["list"][0] = _LATER["dict"]["W"] = np.matrix([[1.0, 2.0], [0.0, 5.0]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(TypeError, match="numpy.matrix"):
                g(x)
    finally:
        _LATER["list"][0], _LATER["dict"]["W"] = saved
    np.testing.assert_allclose(g(x), np.eye(2))


def _averages(x):
    return np.sum(np.mean([x, x * 2.0], axis=0))


def test_the_eager_runs_refusals_are_its_own_thread_s():
    """While an eager run shows its NumPy stand-ins in the module, another thread's np.ma
    code of the same module runs as NumPy's."""
    import threading
    errors: list = []

    def other() -> None:
        for _ in range(300):
            try:
                np.ma.masked_invalid(np.array([1.0, np.nan])).mean()
            except Exception as exc:  # noqa: BLE001 - what the test counts
                errors.append(exc)
    thread = threading.Thread(target=other)
    thread.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(30):
            got = srcgrad.grad(_averages)(srcgrad.tensor(np.ones(3)))
    thread.join()
    assert not errors
    np.testing.assert_allclose(np.asarray(got), 1.5 * np.ones(3))


class _Holder:
    W = None


_HELD = _Holder()
_HELD.W = np.eye(2)


def _reads_an_attribute(x):
    return np.sum(_HELD.W * x)


@pytest.mark.parametrize("strict", [True, False])
def test_a_subclass_set_on_an_attribute_after_the_first_call_is_refused(strict):
    """An array attribute the compiled code reads when it runs: rebinding it to another
    array is followed, to a matrix refused (its type is checked at every call)."""
    g, x = srcgrad.grad(_reads_an_attribute, strict=strict), np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(g(x), np.eye(2))
    a = np.array([[1.0, 2.0], [0.0, 5.0]])
    try:
        _HELD.W = a
        np.testing.assert_allclose(g(x), a)
        _HELD.W = np.matrix(a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(TypeError, match="numpy.matrix"):
                g(x)
    finally:
        _HELD.W = np.eye(2)
