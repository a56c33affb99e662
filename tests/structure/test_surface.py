"""NumPy's public surface is classified exactly once (a rule, no gradient, or refused) from the
compiler's own tables; no-gradient functions compile to a zero gradient that finite differences
confirm; refused functions raise a CompileError naming them; the generated reference
(``python -m srcgrad supported``, ``docs/supported.md``) is current."""

from __future__ import annotations

import ast
import io
import pathlib
import re
import warnings
from contextlib import redirect_stdout

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.frontend.tables import surface
from srcgrad.tools import cli

ENTRIES, MISSING, STALE = surface.classify()
DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "supported.md"

# How a function is called in the tiny programs below, where the default ``np.NAME(x)`` (or
# ``x.NAME()``) is not a valid call; ``x`` is a float array of shape (3,) carrying a gradient.
CALLS = {
    "np.arange": "np.arange(x.shape[0])", "np.indices": "np.indices((3,))",
    "np.tri": "np.tri(3)", "np.eye": "np.eye(3)", "np.identity": "np.identity(3)",
    "np.zeros": "np.zeros(x.shape)", "np.ones": "np.ones(3)", "np.empty": "np.empty(3)",
    "np.meshgrid": "np.meshgrid(np.arange(3), np.arange(2))",
    "np.dtype": "np.dtype(x.dtype)", "np.can_cast": "np.can_cast(x.dtype, np.float32)",
    "np.promote_types": "np.promote_types(x.dtype, np.float32)",
    "np.logical_and": "np.logical_and(x > 0.5, x < 1.0)",
    "np.logical_or": "np.logical_or(x > 0.5, x < 0.4)",
    "np.logical_xor": "np.logical_xor(x > 0.5, x < 1.0)",
    "np.logical_not": "np.logical_not(x > 0.5)",
    "np.floor_divide": "np.floor_divide(x, 0.3)",
    "np.random.seed": "np.random.seed(0)",
    "np.random.set_state": "np.random.set_state(np.random.get_state())",
    "np.random.set_bit_generator": "np.random.set_bit_generator(np.random.get_bit_generator())",
    "np.random.Generator": "np.random.Generator(np.random.PCG64(0))",
    "np.random.BitGenerator": "isinstance(np.random.PCG64(0), np.random.BitGenerator)",  # abstract
    "np.isclose": "np.isclose(x, 0.7)", "np.allclose": "np.allclose(x, x + 1e-9)",
    "np.searchsorted": "np.searchsorted(np.sort(x), x)",
    "np.digitize": "np.digitize(x, [0.5, 1.0])", "np.argpartition": "np.argpartition(x, 1)",
    "np.lexsort": "np.lexsort((x, -x))", "np.issubdtype": "np.issubdtype(x.dtype, np.floating)",
    "np.finfo": "np.finfo(x.dtype).eps", "np.iinfo": "np.iinfo(np.int32).max",
    "np.round": "np.round(x, 1)", "np.around": "np.around(x * 3.0)",
    "np.tril_indices_from": "np.tril_indices_from(np.outer(x, x))",
    "np.triu_indices_from": "np.triu_indices_from(np.outer(x, x), 1)",
    "np.diag_indices_from": "np.diag_indices_from(np.outer(x, x))",
    "np.tril_indices": "np.tril_indices(3)", "np.triu_indices": "np.triu_indices(3, 1)",
    "np.diag_indices": "np.diag_indices(3)", "np.mask_indices": "np.mask_indices(3, np.triu)",
    "np.unravel_index": "np.unravel_index(4, (2, 3))",
    "np.ravel_multi_index": "np.ravel_multi_index(([0, 1], [2, 0]), (2, 3))",
    "ndarray.argpartition": "x.argpartition(1)",
    "ndarray.searchsorted": "np.sort(x).searchsorted(x)", "ndarray.round": "x.round(1)",
}
for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    CALLS[f"np.{_name}"] = f"np.{_name}(x, 0.7)"
for _name in ENTRIES:                            # scalar types take one element
    _type = getattr(np, _name[3:], None) if _name.startswith("np.") else None
    if isinstance(_type, type) and issubclass(_type, np.generic):
        CALLS.setdefault(_name, f"{_name}(x[0] * 10.0)")
VALUE_LESS = {"np.empty", "np.empty_like"}       # their values are whatever memory held
# A random draw is called with the first of these argument lists that NumPy accepts, after
# ``np.random.seed(0)`` (so that finite differences see the same draw each time).
DRAW_ARGUMENTS = ("size=3", "0.5, size=3", "2.0, size=3", "2.0, 0.5, size=3",
                  "0.0, 0.5, 1.0, size=3", "5, 5, 3, size=3",
                  "[0.5, 0.5], size=3", "3, [0.5, 0.5], size=3", "[0.0], [[1.0]], size=3", "0",
                  "")


def _draw(name: str) -> str | None:
    state = np.random.get_state()
    try:
        for arguments in DRAW_ARGUMENTS:
            call = f"{name}({arguments})"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    eval(call, {"np": np})
            except Exception:
                continue
            return call
        return None
    finally:
        np.random.set_state(state)


def _call(name: str, arg: str = "x") -> str:
    if name in CALLS:
        return CALLS[name]
    if name.startswith("ndarray."):
        return f"{arg}.{name[8:]}()"
    return f"{name}({arg})"


def test_every_public_name_is_classified():
    assert not MISSING, "classify " + ", ".join(MISSING) + (
        " (give it a rule, add it to the no-gradient list, or add it to REFUSED in "
        "srcgrad/frontend/tables/refusals.py with a reason)")
    expected = {f"np.{n}" for n in dir(np) if not n.startswith("_") and callable(getattr(np, n))}
    expected |= {f"ndarray.{n}" for n in dir(np.ndarray)
                 if not n.startswith("_") and callable(getattr(np.ndarray, n))}
    expected -= {"np.test"}
    assert expected <= set(ENTRIES), sorted(expected - set(ENTRIES))
    for name, entry in ENTRIES.items():                  # one class each
        assert entry.name == name and entry.kind in ("rule", "nondiff", "refused")
        assert entry.detail, name


def test_aliases_share_their_object_s_class():
    """``np.abs`` is ``np.absolute``, ``np.concat`` is ``np.concatenate``: one class each."""
    by_object: dict[int, list[str]] = {}
    for name, obj in surface.public_surface().items():
        if not name.startswith("ndarray."):
            by_object.setdefault(id(obj), []).append(name)
    split = [names for names in by_object.values()
             if len({ENTRIES[n].kind for n in names}) > 1]
    assert not split, f"aliases classified differently: {split}"
    assert any(len(names) > 1 for names in by_object.values())


def test_no_stale_refusals():
    assert not STALE, "remove " + ", ".join(STALE) + " from REFUSED in " \
        "srcgrad/frontend/tables/refusals.py " \
        "(a table now classifies it)"


def test_a_method_refused_for_want_of_a_rule_has_no_function_with_one():
    """``ndarray.X`` refused as "no rule yet" while ``np.X`` is supported says the wrong thing:
    its reason is then that the method is not lowered yet."""
    wrong = [n for n, e in ENTRIES.items() if n.startswith("ndarray.") and e.kind == "refused"
             and "rule" in e.detail and ENTRIES.get(f"np.{n[8:]}", e).kind != "refused"]
    assert not wrong, f"{wrong}: move them to 'not lowered as a method yet' in " \
        "srcgrad/frontend/tables/refusals.py"


def _program(call: str, use: bool) -> str:
    tail = " + np.sum(out * x)" if use else ""
    seed = "np.random.seed(0)\n    " if call.startswith("np.random.") else ""
    return f"def f(x):\n    {seed}out = {call}\n    return np.sum(x * x){tail}\n"


NONDIFF = sorted(n for n, e in ENTRIES.items() if e.kind == "nondiff")
for _name in NONDIFF:
    if _name.startswith("np.random.") and _name not in CALLS:   # (the setters are in CALLS)
        CALLS[_name] = _draw(_name) or f"{_name}()"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", NONDIFF)
def test_nondiff_compiles_to_a_zero_gradient(name):
    """``out = CALL; return sum(x * x) + sum(out * x)``: ``out`` is a constant, so the gradient
    is ``2x + out``; compiled strict, it must agree with central differences."""
    x = np.random.default_rng(0).uniform(0.2, 1.4, 3)
    call = _call(name)
    try:
        value = eval(call, {"np": np, "x": x.copy()})
    except Exception as exc:                             # pragma: no cover - a message
        pytest.fail(f"add a sample call for {name} to CALLS in "
                    f"tests/structure/test_surface.py ({exc})")
    try:
        use = name not in VALUE_LESS and np.asarray(value).dtype.kind in "biuf" and \
            np.broadcast(np.asarray(value), x).shape == x.shape
    except ValueError:                                   # does not broadcast with x
        use = False
    f = define(_program(call, use), {"np": np})
    got = srcgrad.grad(f, strict=True)(x.copy())
    fd = numerical_grad(lambda a: float(f(a)), [x.copy()], 0)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6, err_msg=name)


def test_static_when_constant_is_refused_on_an_argument_that_carries_a_gradient():
    """``np.arange``, classes and random draws run as plain Python only on constants:
    ``np.random.normal(x)`` with ``x`` carrying a gradient is a CompileError, never a zero."""
    x = np.array([0.3, 1.2, 0.7])
    names = [n for n, e in ENTRIES.items() if surface.STATIC_WHEN_CONSTANT in e.detail]
    assert "np.arange" in names and "np.random.normal" in names
    compiled = []
    for name in names:
        f = define(_program(f"{name}(x)", False), {"np": np})
        try:
            srcgrad.grad(f, strict=True)(x.copy())
        except srcgrad.CompileError:
            continue
        compiled.append(name)
    assert not compiled, compiled


REFUSED = sorted(n for n, e in ENTRIES.items() if e.kind == "refused")


def test_refused_functions_raise_a_compile_error_naming_them():
    """Each refused function, called on an argument that carries a gradient in a strict
    program, raises a CompileError naming it, or what NumPy itself raises for that call."""
    x = np.array([0.3, 1.2, 0.7])
    objects = surface.public_surface()
    wrong = {}
    for name in REFUSED:
        call = _call(name)
        f = define(_program(call, False), {"np": np})
        obj = objects[name]
        names = {name.rpartition(".")[2], getattr(obj, "__name__", "?")}
        try:
            srcgrad.grad(f, strict=True)(x.copy())
        except srcgrad.CompileError as err:
            first = str(err).splitlines()[0]
            if not any(n in first for n in names) and not (
                    name.startswith("np.random.") and "random draw" in first):
                wrong[name] = f"CompileError not naming it: {first}"
            continue
        except Exception as err:
            try:
                with redirect_stdout(io.StringIO()):
                    eval(call, {"np": np, "x": x.copy()})
            except Exception as plain:
                if type(plain) is type(err) and str(plain) == str(err):
                    continue
            wrong[name] = f"{type(err).__name__}: {err}"
            continue
        wrong[name] = "compiled"
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in sorted(wrong.items()))


def test_every_construct_the_lowering_dispatches_on_is_described():
    dispatched = surface.dispatched_constructs()
    assert {"Assign", "Return", "For", "Call", "Subscript"} <= set(dispatched)
    undescribed = [n for n in dispatched if not surface.CONSTRUCTS.get(n)]
    assert not undescribed, \
        f"describe {undescribed} in CONSTRUCTS in srcgrad/frontend/tables/surface.py"
    stale = sorted(set(surface.CONSTRUCTS) - set(dispatched))
    assert not stale, \
        f"remove {stale} from CONSTRUCTS in srcgrad/frontend/tables/surface.py (not dispatched)"
    for name in dispatched:
        assert isinstance(getattr(ast, name), type)


def test_supported_command_prints_every_class():
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["supported"]) == 0
    text = out.getvalue()
    for name in ENTRIES:
        assert name in text, name
    assert "a @ b" in text and "math.exp" in text and "ast.While" in text
    assert "not classified" not in text


def test_docs_supported_md_is_current():
    """The committed page is the command's output (for the NumPy it was generated with: the
    public names differ from one NumPy to the next)."""
    assert DOCS.is_file(), "generate docs/supported.md: " + REGENERATE
    text = DOCS.read_text()
    made_with = re.search(r"\(NumPy\s+([^)\s]+)\)", text)
    if made_with is None or made_with.group(1) != np.__version__:
        pytest.skip(f"docs/supported.md describes NumPy {made_with and made_with.group(1)}, "
                    f"this is NumPy {np.__version__}")
    assert text == cli.supported(markdown=True), \
        "docs/supported.md is out of date: regenerate it with " + REGENERATE


REGENERATE = "`python -m srcgrad supported --markdown > docs/supported.md`"
