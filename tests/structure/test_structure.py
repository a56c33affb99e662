"""The code's structure: module sizes, import hygiene, the one NumPy-signature binder; and the
gradient of a mean of an empty array, which both modes once refused with a crash."""

from __future__ import annotations

import ast
import pathlib

import networkx as nx
import numpy as np
import pytest
from conftest import needs_torch

import srcgrad
from srcgrad.transforms.fallback import eager_transform

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = {"srcgrad": "srcgrad", "codegen": "srcgrad.codegen", "runtime": "srcgrad.runtime"}
LIMIT = 400
OVER_THE_LIMIT: dict[str, str] = {}
"""Modules allowed over ``LIMIT`` lines for now, each with the reason."""


def _modules() -> dict[str, pathlib.Path]:
    """Every module of the three packages, by its installed dotted name."""
    out = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts
                     if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _imports(path: pathlib.Path, at_import_time: bool) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of each ``import``/``from ... import`` of the file; with
    ``at_import_time``, only those that run when the module is imported (not in functions)."""
    tree = ast.parse(path.read_text())
    nodes, stack = [], list(tree.body)
    while stack:
        node = stack.pop()
        if at_import_time and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes.append(node)
        stack.extend(ast.iter_child_nodes(node))
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, [a.name for a in node.names]))
    return out


def _import_graph(at_import_time: bool) -> nx.DiGraph:
    graph = nx.DiGraph()
    for name, path in MODULES.items():
        for module, names in _imports(path, at_import_time):
            subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES]
            targets = subs + ([module] if len(subs) < len(names) or not names else [])
            graph.add_edges_from((name, t) for t in targets if t in MODULES and t != name)
    return graph


def test_no_module_is_over_the_line_limit():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in MODULES.values()}
    over = {path: n for path, n in sizes.items() if n > LIMIT and path not in OVER_THE_LIMIT}
    assert not over, f"modules over {LIMIT} lines (split them by responsibility): {over}"
    back = {path for path in OVER_THE_LIMIT if sizes.get(path, 0) <= LIMIT}
    assert not back, f"listed in OVER_THE_LIMIT but within {LIMIT} lines (remove): {back}"


def test_no_import_cycle_at_import_time():
    graph = _import_graph(at_import_time=True)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"modules importing each other when imported: {cycles}"


KNOWN_CYCLES = {
    frozenset({"srcgrad.runtime.eager.autograd", "srcgrad.runtime.eager.double_backward",
               "srcgrad.runtime.eager.engine", "srcgrad.runtime.eager.node",
               "srcgrad.runtime.eager.tensor"}):
        "the eager engine: Tensor methods run the engine, whose nodes make Tensors",
    frozenset({"srcgrad.runtime.rules.special", "srcgrad.runtime.rules.special_functions"}):
        "special_functions' rules call digamma and gammaln, defined in special",
}
"""Groups of modules that import each other somewhere (in a function too), each with the
reason; the compiler's own layers (front end, analysis, emitters, driver) are never here."""


def test_no_import_cycle_even_inside_functions():
    """Every import counts, a deferred one in a function too: modules that need each other
    are one layer, or a piece belongs lower.  Only the groups listed above, exactly."""
    graph = _import_graph(at_import_time=False)
    cycles = {frozenset(c) for c in nx.strongly_connected_components(graph) if len(c) > 1}
    assert not cycles - set(KNOWN_CYCLES), \
        f"modules importing each other: {[sorted(c) for c in cycles - set(KNOWN_CYCLES)]}"
    assert not set(KNOWN_CYCLES) - cycles, \
        f"cycles listed but gone (remove them): {[sorted(c) for c in set(KNOWN_CYCLES) - cycles]}"


def test_the_runtime_imports_neither_the_compiler_nor_networkx():
    for name, path in MODULES.items():
        if not name.startswith("srcgrad.runtime"):
            continue
        for module, _ in _imports(path, at_import_time=False):
            front_end = module == "srcgrad" or module.startswith("srcgrad.") and \
                not module.startswith("srcgrad.runtime")
            assert not front_end and module.partition(".")[0] != "networkx", (name, module)


def _srcgrad_module(module: str, names: list[str]) -> list[str]:
    """The srcgrad modules an import names (``from srcgrad import ir`` names srcgrad.ir)."""
    if module != "srcgrad" and not module.startswith("srcgrad."):
        return []
    subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES]
    return subs or [module]



CONTRACTS = {
    "srcgrad.errors": (),
    "srcgrad.ir": ("srcgrad.errors",),
    "srcgrad.runtime": ("srcgrad.runtime",),
    "srcgrad.runtime.rules": ("srcgrad.runtime.rules", "srcgrad.runtime.device"),
    "srcgrad.frontend": ("srcgrad.frontend", "srcgrad.ir", "srcgrad.errors",
                         "srcgrad.runtime.rules", "srcgrad.runtime.subclasses"),
    "srcgrad.analysis": ("srcgrad.analysis", "srcgrad.ir", "srcgrad.errors", "srcgrad.runtime"),
    "srcgrad.codegen": ("srcgrad.codegen", "srcgrad.ir", "srcgrad.errors", "srcgrad.runtime"),
    "srcgrad.build": ("srcgrad.build", "srcgrad.frontend", "srcgrad.analysis", "srcgrad.codegen",
                      "srcgrad.ir", "srcgrad.errors", "srcgrad.runtime"),
    "srcgrad.transforms": ("srcgrad.transforms", "srcgrad.build", "srcgrad.frontend",
                           "srcgrad.analysis", "srcgrad.codegen", "srcgrad.ir", "srcgrad.errors",
                           "srcgrad.runtime"),
}
"""What each package may import of srcgrad: a stage reads the stages before it, never one after
(source → front end → IR → analysis → emitters → backend → module, driven by ``build`` for the
``transforms``).  The front end reads the runtime's rule table and its subclass policy, never the
eager engine.  The most specific package decides; the tools and the public modules at the top
(``srcgrad``, ``srcgrad.nn`` ...) may import anything."""


def _contract(name: str) -> tuple[str, ...] | None:
    owners = [p for p in CONTRACTS if name == p or name.startswith(p + ".")]
    return CONTRACTS[max(owners, key=len)] if owners else None


def test_every_package_imports_only_the_stages_before_it():
    broken = []
    for name, path in MODULES.items():
        allowed = _contract(name)
        if allowed is None:
            continue
        for module, names in _imports(path, at_import_time=False):
            broken += [(name, target) for target in _srcgrad_module(module, names)
                       if not any(target == a or target.startswith(a + ".") for a in allowed)]
    assert not broken, f"imports against the package contracts: {broken}"


def test_every_stage_folder_has_a_contract():
    """A new folder under srcgrad/ states what it may import (or is a public module)."""
    public = {"srcgrad.autograd", "srcgrad.nn", "srcgrad.tools"}
    folders = {".".join(["srcgrad", *p.relative_to(ROOT / "srcgrad").parts])
               for p in (ROOT / "srcgrad").iterdir() if (p / "__init__.py").exists()}
    assert folders - public <= set(CONTRACTS), folders - public - set(CONTRACTS)


def test_dir_of_srcgrad_is_the_public_api():
    import types
    modules = {n for n in dir(srcgrad) if isinstance(getattr(srcgrad, n), types.ModuleType)}
    assert modules == {"autograd", "cuda", "linalg", "nn", "optim", "tree", "viz"}
    assert set(dir(srcgrad)) == {*srcgrad.__all__, "__version__"}
    assert {"grad", "jvp", "hessian", "Tensor", "tensor", "CompileError"} <= set(dir(srcgrad))
    assert not {"frontend", "transforms", "codegen", "runtime", "ir", "errors"} & set(dir(srcgrad))


def test_no_module_imports_a_private_name_of_codegen():
    """The driver (and anyone else) uses what codegen makes public."""
    for name, path in MODULES.items():
        if name.startswith("srcgrad.codegen"):
            continue
        for module, names in _imports(path, at_import_time=False):
            if module.startswith("srcgrad.codegen"):
                assert not [n for n in names if n.startswith("_")], (name, module, names)


EMITTER_STRINGS = {
    "srcgrad.codegen.backends.base": "the math backend writes NumPy functions as math's",
    "srcgrad.codegen.emit.symbolic": "add, pow, matmul: Python's operator protocol (__add__ ...)",
    "srcgrad.codegen.emit.forward": "zero_tangent, match_tangent: the forward emitter's helpers",
}
"""Emitter modules whose text may name a primitive, and why."""


def test_the_emitters_name_no_operation():
    """What is special about an operation is a hint on its Primitive (runtime/rules): no
    emitter compares a name with, or keeps a table keyed by, a primitive's name."""
    from srcgrad.runtime.rules.primitives import PRIMITIVES
    names = set(PRIMITIVES) | {p.fn.__name__ for p in PRIMITIVES.values()}
    for name, path in MODULES.items():
        if not name.startswith("srcgrad.codegen") or name in EMITTER_STRINGS:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr)}
        named = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                        and n.value in names and id(n) not in docstrings})
        assert not named, f"{name} names primitives: {named}"


def test_primitive_hints_are_known_ones():
    """A hint set with a typo would be ignored silently: every attribute a rule module set
    on a primitive is one the Primitive class declares."""
    from srcgrad.runtime.rules.primitives import PRIMITIVES, Primitive
    declared = {n for n in dir(Primitive) if not n.startswith("__")}
    for prim in PRIMITIVES.values():
        unknown = set(vars(prim)) - declared - {"__doc__"}
        assert not unknown, (prim.name, unknown)


def test_the_hints_of_every_operation_are_known_ones():
    """The same of the primitives the backends find by NumPy function, those kept for their
    hints alone (``np.invert``, ``np.bitwise_and`` ...) included."""
    from srcgrad.runtime.rules.operators import operations
    from srcgrad.runtime.rules.primitives import Primitive
    declared = {n for n in dir(Primitive) if not n.startswith("__")}
    for prim in operations().values():
        assert not set(vars(prim)) - declared - {"__doc__"}, prim.name


CODEGEN_UFUNCS = {
    "srcgrad.codegen.backends.base": "the math backend's names of ufuncs (the rule table's "
    "MATH_TWINS says the same) and Dask's names of functions: left to the rework of the "
    "backend registry",
    "srcgrad.codegen.backends.numba.libm": "np.copysign in the source of a helper that "
    "generated modules define",
    "srcgrad.codegen.passes.liveness": "np.matmul among the NumPy functions that return a new "
    "array (the others are not ufuncs)",
}
"""Modules under codegen that name a NumPy ufunc, and why."""


def _numpy_attributes(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, name)`` of each ``np.name`` the code reads."""
    return [(n.lineno, n.attr) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "np"]


def test_codegen_keeps_no_table_of_ufuncs():
    """What a backend needs of a ufunc (its C or numba spelling, whether it fuses, what a
    reduction by it starts from ...) is a hint on its Primitive, found with
    ``operation(func)``: no module under codegen names a ufunc (and so none keeps a dict or
    set keyed by them), but those listed with a reason."""
    found = []
    for name, path in MODULES.items():
        if not name.startswith("srcgrad.codegen") or name in CODEGEN_UFUNCS:
            continue
        found += [f"{name}:{line} np.{attr}" for line, attr in
                  _numpy_attributes(ast.parse(path.read_text()))
                  if isinstance(getattr(np, attr, None), np.ufunc)]
    assert not found, f"ufuncs named outside the rule table: {found}"


OPERATOR_PAIRS = {
    "srcgrad.runtime.rules.elementwise": "where the ``operator`` hints are set",
    "srcgrad.frontend.tables.constructs": "``not x`` and ``~x`` of a traced mask lower to "
    "np.logical_not (NumPy's ``~`` is np.invert, which has no rule)",
}
"""Modules that pair Python operators with NumPy functions in one dict or tuple, and why."""


def test_one_table_maps_python_operators():
    """``runtime.rules.operators.OPERATORS`` is the one table from Python's operators to what
    NumPy computes them with: no other dict or tuple pairs an ``ast`` operator with a NumPy
    function."""
    operators = (ast.operator, ast.unaryop, ast.cmpop)

    def is_operator(node: ast.AST | None) -> bool:
        return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "ast" and isinstance(getattr(ast, node.attr, None), type)
                and issubclass(getattr(ast, node.attr), operators))

    def is_numpy(node: ast.AST | None) -> bool:
        return bool(node is not None and _numpy_attributes(node))

    found = []
    for name, path in MODULES.items():
        if name in OPERATOR_PAIRS:
            continue
        for n in ast.walk(ast.parse(path.read_text())):
            pairs = list(zip(n.keys, n.values)) if isinstance(n, ast.Dict) else [
                (a, b) for a in n.elts for b in n.elts] if isinstance(n, ast.Tuple) else []
            if any(is_operator(a) and is_numpy(b) or is_numpy(a) and is_operator(b)
                   for a, b in pairs):
                found.append(f"{name}:{n.lineno}")
    assert not found, f"operators mapped to NumPy functions outside the table: {found}"


def test_the_operator_table_is_what_numpy_computes():
    """Each operator of the table, applied to arrays, gives what its primitive's function
    does."""
    from srcgrad.runtime.rules.operators import OPERATORS
    a, b = np.array([[3, -2], [5, 7]]), np.array([[2, 4], [3, 1]])
    for op, prim in OPERATORS.items():
        if issubclass(op, ast.unaryop):
            text, args = ast.UnaryOp(op(), ast.Name("a")), (a,)
        elif issubclass(op, ast.cmpop):
            text, args = ast.Compare(ast.Name("a"), [op()], [ast.Name("b")]), (a, b)
        else:
            text, args = ast.BinOp(ast.Name("a"), op(), ast.Name("b")), (a, b)
        with np.errstate(all="ignore"):
            got = eval(ast.unparse(text), {"a": a, "b": b})
            assert np.array_equal(got, prim.fn(*args)), (op.__name__, prim.name)


# ------------------------------------------------------------------------- the backend seam

DRIVERS = ("srcgrad.transforms", "srcgrad.build", "srcgrad.tools")
"""The packages that drive the backends: they look one up in the registry and ask the
``Backend`` object what they need."""


def _driver(name: str) -> str | None:
    return next((p for p in DRIVERS if name == p or name.startswith(p + ".")), None)


def test_the_drivers_spell_no_backend_name():
    """No string of the drivers' code (docstrings aside) is a backend's name: a difference
    between backends is a hook of its Backend.  ``"auto"`` counts too, but for the tools,
    where it is also the picture renderer's default."""
    from srcgrad.codegen.backends import registry
    found = []
    for name, path in MODULES.items():
        package = _driver(name)
        if package is None:
            continue
        spelled = set(registry.NAMES if package == "srcgrad.tools" else registry.KNOWN)
        tree = ast.parse(path.read_text())
        statements = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        found += [f"{name}:{n.lineno} {n.value!r}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and n.value in spelled and id(n) not in statements]
    assert not found, f"backend names outside the registry: {found}"


def test_the_registry_alone_lists_the_backends():
    """The backends' names are listed once, by the registry, from its Backend objects: no
    other module writes three or more of them in one tuple, list, set or dict."""
    from srcgrad.codegen.backends import registry
    assert registry.NAMES == tuple(b.name for b in registry.REGISTERED)
    assert registry.KNOWN == (*registry.NAMES, registry.AUTO.name)
    assert all(registry.backend(n).name == n for n in registry.KNOWN)
    names, found = set(registry.NAMES), []
    for name, path in MODULES.items():
        if name == registry.__name__:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            items = node.keys if isinstance(node, ast.Dict) else \
                node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else []
            listed = {i.value for i in items if isinstance(i, ast.Constant)
                      and isinstance(i.value, str) and i.value in names}
            if len(listed) >= 3:
                found.append(f"{name}:{node.lineno} {sorted(listed)}")
    assert not found, f"backend names listed outside the registry: {found}"


def test_outside_codegen_only_its_facade_is_imported():
    """The rest of srcgrad imports ``srcgrad.codegen`` itself (its namespace is the facade),
    never one of its submodules: how the code generator is laid out is its own business.
    What it imports, the facade lists."""
    import srcgrad.codegen as codegen
    found = []
    for name, path in MODULES.items():
        if name == "srcgrad.codegen" or name.startswith("srcgrad.codegen."):
            continue
        for module, names in _imports(path, at_import_time=False):
            if module.startswith("srcgrad.codegen."):
                found.append(f"{name}: {module}")
            elif module == "srcgrad.codegen":
                found += [f"{name}: {module}.{n}" for n in names
                          if f"{module}.{n}" in MODULES or n not in codegen.__all__]
    assert not found, f"codegen's submodules imported past its facade: {found}"


def test_the_codegen_facade_names_what_it_exports():
    """Every name the facade lists resolves, and reading one imports no backend library."""
    import subprocess
    import sys
    code = ("import sys, srcgrad.codegen as c\n"
            "[getattr(c, n) for n in c.__all__]\n"
            "print(sorted(m for m in ('numba', 'dask', 'cupy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]", out
    import srcgrad.codegen as codegen
    with pytest.raises(AttributeError):
        codegen.no_such_name        # noqa: B018


def test_the_backends_do_not_import_the_emitters():
    """The emitters read the backends (the Backend they write for); the backends read what
    both need from ``codegen.common``, never the emitters or the passes, and ``common``
    reads neither."""
    found = []
    for name, path in MODULES.items():
        below = ("srcgrad.codegen.backends.", "srcgrad.codegen.common.")
        if not name.startswith(below) and name not in {b[:-1] for b in below}:
            continue
        banned = ("srcgrad.codegen.emit", "srcgrad.codegen.passes", "srcgrad.codegen.module")
        if name.startswith("srcgrad.codegen.common"):
            banned += ("srcgrad.codegen.backends",)
        for module, names in _imports(path, at_import_time=False):
            for target in _srcgrad_module(module, names):
                if any(target == b or target.startswith(b + ".") for b in banned):
                    found.append(f"{name}: {target}")
    assert not found, f"imports from a layer above: {found}"


def test_an_unknown_backend_is_refused_by_name():
    with pytest.raises(ValueError, match="^unknown backend 'torch'; the known backends are "
                       "'numpy', 'numba', 'cupy', 'dask', 'auto'$"):
        srcgrad.grad(np.sum, backend="torch")
    with pytest.raises(ValueError, match="^unknown backend 'np'; "):
        srcgrad.jvp(np.sum, backend="np")


# ------------------------------------------------------------------ one binder of NumPy calls

def _unknown_keyword_to_sum(x):
    return np.sum(x, bogus=1)


def _unknown_keyword_to_full(x):
    return np.sum(np.full((2,), x[0], bogus=1))


def _unknown_keyword_to_append(x):
    return np.sum(np.append(x, x, bogus=1))


def _unknown_keyword_to_eigh(x):
    return np.sum(np.linalg.eigh(x, bogus=1)[0])


@pytest.mark.parametrize("fn, name", [(_unknown_keyword_to_sum, "numpy.sum()"),
                                      (_unknown_keyword_to_full, "np.full()"),
                                      (_unknown_keyword_to_append, "np.append()"),
                                      (_unknown_keyword_to_eigh, "np.linalg.eigh()")])
def test_arguments_numpy_rejects_are_a_compile_error_naming_the_function(fn, name):
    with pytest.raises(srcgrad.CompileError, match="unexpected keyword argument 'bogus'") as e:
        srcgrad.grad(fn, strict=True)(np.eye(2))
    assert name in str(e.value) and "test_structure.py" in str(e.value)


# ---------------------------------------------------------------- the mean of an empty array

def _mean_of_nothing(x):
    return np.mean(x[:0]) + np.sum(x)


def _mean_of_nothing_alone(x):
    return np.mean(x[:0])


def _mean_of_no_rows(x):
    return np.sum(np.mean(x[:0], axis=0)) + np.sum(x * x)


def _mean_over_no_columns(x):
    return np.sum(np.mean(x[:, :0], axis=1)) + np.sum(x)


def _average_of_nothing(x):
    return np.average(x[:0]) * 2.0 + np.sum(x)


def _mean_of_nothing_kept(x):
    return x[:0].mean(keepdims=True).sum() + np.sum(x)


def _mean_of_a_part_and_of_all(x):        # a scalar adjoint, then a read x[:1] adds into it
    return np.mean(x[:1] * x[:1]) + np.mean(x)


EMPTY_MEANS = {
    _mean_of_nothing: lambda t: t[:0].mean() + t.sum(),
    _mean_of_nothing_alone: lambda t: t[:0].mean(),
    _mean_of_no_rows: lambda t: t[:0].mean(dim=0).sum() + (t * t).sum(),
    _mean_over_no_columns: lambda t: t[:, :0].mean(dim=1).sum() + t.sum(),
    _average_of_nothing: lambda t: t[:0].mean() * 2.0 + t.sum(),
    _mean_of_nothing_kept: lambda t: t[:0].mean(dim=(0, 1), keepdim=True).sum() + t.sum(),
    _mean_of_a_part_and_of_all: lambda t: (t[:1] * t[:1]).mean() + t.mean(),
}


def _both_modes(fn, x):
    """The compiled gradient (strict: the generated code ran), twice (generic, then
    specialised to the shapes), and the eager engine's."""
    compiled = srcgrad.grad(fn, strict=True)
    return [compiled(x), compiled(x), eager_transform(fn, "grad", [x], (0,), False)[0]]


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_the_mean_of_an_empty_array_gives_no_gradient_in_both_modes():
    x = np.arange(6.0).reshape(3, 2)
    for got in _both_modes(_mean_of_nothing, x):
        np.testing.assert_array_equal(got, np.ones_like(x))       # the sum's; the mean's none
    for got in _both_modes(_mean_of_nothing_alone, x):
        np.testing.assert_array_equal(got, np.zeros_like(x))


@needs_torch
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
@pytest.mark.parametrize("fn", list(EMPTY_MEANS), ids=lambda f: f.__name__)
def test_means_of_empty_arrays_match_pytorch(fn):
    import torch
    x = np.arange(6.0).reshape(3, 2) + 0.5
    t = torch.tensor(x, requires_grad=True)
    EMPTY_MEANS[fn](t).backward()
    for got in _both_modes(fn, x):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-14, atol=0)


def test_comments_explain_in_their_own_words():
    """Library code cites no issue numbers or contract sections: a reader has neither."""
    import re
    cited = re.compile(r"SPEC ?§|§\d|\bissue \d+", re.IGNORECASE)
    found = [f"{path.relative_to(ROOT)}:{i}" for path in MODULES.values()
             for i, line in enumerate(path.read_text().splitlines(), 1) if cited.search(line)]
    assert not found, f"citations instead of explanations: {found}"


# ------------------------------------------------------------ a class's size, its bases included

CLASS_LIMIT = 400
LARGE_CLASSES: dict[str, str] = {}
"""Classes allowed over ``CLASS_LIMIT`` lines counted with their bases, each with the reason
(and its total when listed)."""


def _class_sizes() -> dict[str, int]:
    """Each top-level class's total size: the line spans of the class and of every class of
    the project it derives from, wherever those are defined (a base imported through another
    module is followed to its definition)."""
    classes, imported = {}, {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        classes.update({f"{module}.{n.name}": (module, n) for n in tree.body
                        if isinstance(n, ast.ClassDef)})
        imported.update({(module, a.asname or a.name): f"{n.module}.{a.name}"
                         for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                         for a in n.names})

    def resolve(module: str, name: str) -> str | None:
        dotted, seen = f"{module}.{name}", set()
        while dotted not in classes and (module, name) in imported and dotted not in seen:
            seen.add(dotted)
            dotted = imported[(module, name)]
            module, _, name = dotted.rpartition(".")
        return dotted if dotted in classes else None

    def bases(qualified: str) -> list[str]:
        module, node = classes[qualified]
        found = []
        for b in node.bases:
            if isinstance(b, ast.Name):
                found.append(resolve(module, b.id))
            elif isinstance(b, ast.Attribute) and isinstance(b.value, ast.Name):
                owner = imported.get((module, b.value.id), b.value.id)   # a module's class
                found.append(resolve(owner, b.attr) if owner in MODULES else None)
        return [f for f in found if f is not None]

    sizes = {}
    for qualified in classes:
        todo, seen = [qualified], set()
        while todo:
            c = todo.pop()
            if c not in seen:
                seen.add(c)
                todo += bases(c)
        sizes[qualified] = sum(classes[c][1].end_lineno - classes[c][1].lineno + 1 for c in seen)
    return sizes


def test_no_class_is_over_the_line_limit_with_its_bases():
    """A class mixed from many modules is one class to read: its total counts.  One over the
    limit holds its parts as objects instead; a listed one back under the limit is removed."""
    import inspect

    from srcgrad.frontend.lower import Lowerer
    sizes = _class_sizes()
    mixed = [c for c in Lowerer.__mro__ if c.__module__.startswith("srcgrad.")]
    assert sizes["srcgrad.frontend.lower.Lowerer"] == sum(     # the bases Python itself finds
        len(inspect.getsourcelines(c)[0]) for c in mixed)
    over = {c: n for c, n in sizes.items() if n > CLASS_LIMIT}
    new = {c: n for c, n in over.items() if c not in LARGE_CLASSES}
    assert not new, f"classes over {CLASS_LIMIT} lines with their bases: {new}"
    back = sorted(set(LARGE_CLASSES) - set(over))
    assert not back, f"listed in LARGE_CLASSES but within {CLASS_LIMIT} lines (remove): {back}"
