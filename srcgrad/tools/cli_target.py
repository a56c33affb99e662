"""Finding ``file.py:function`` for ``python -m srcgrad show`` without running the script.

A training script run for its function would train (or write files, or fail) first: nothing
obliges it to guard its top level with ``if __name__ == "__main__"``.  So the file is parsed,
and only the statements the function needs run: the ``import`` statements of installed
modules and constant assignments (numbers, strings, tuples of them) that bind the names it
reads, and the ``def`` of the helpers it calls, found the same way, without their decorators
and annotations.  A default value is evaluated only when that cannot run code: literals,
arithmetic on numbers, names and attributes.  Where a name it reads is bound by anything else
(a computed value, a loop, a name bound twice, a ``global`` statement, a ``*`` import, a
module next to the script, a decorator other than srcgrad's), or a default is a call or the
like, the function cannot be had without running code, and :class:`NeedsModule` says why;
``--run-module`` then runs the whole module as ``import`` would.
"""

from __future__ import annotations

import ast
import copy
import importlib.machinery
import importlib.util
import pathlib
import symtable
import sys
import types
from typing import Any

__all__ = ["NeedsModule", "load_function", "run_module"]

_TRANSFORMS = frozenset({"srcgrad.grad", "srcgrad.value_and_grad", "srcgrad.vjp",
                         "srcgrad.compile", "srcgrad.transforms.grad.grad",
                         "srcgrad.transforms.grad.value_and_grad", "srcgrad.transforms.grad.vjp"})
_CONSTANTS = (int, float, complex, str, bytes, bool, type(None))


class NeedsModule(Exception):
    """The function cannot be found without running the module body (the message says why)."""


def run_module(file: pathlib.Path, name: str) -> Any:
    """Run the whole module (as ``import`` would) and return its ``name``."""
    name_taken = file.stem in sys.modules or not file.stem.isidentifier()
    module_name = f"_srcgrad_show_{abs(hash(str(file)))}" if name_taken else file.stem
    spec = importlib.util.spec_from_file_location(module_name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module     # never another module's entry (``numpy.py``)
    spec.loader.exec_module(module)
    fn: Any = module
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise NeedsModule(f"{file} has no function {name!r}")
    return getattr(fn, "__wrapped__", fn)


def _is_main_guard(node: ast.stmt) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and isinstance(test, ast.Compare) and \
        isinstance(test.left, ast.Name) and test.left.id == "__name__" and \
        len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) and \
        test.comparators[0].value == "__main__" and isinstance(test.ops[0], ast.Eq)


def _stored(node: ast.AST) -> set[str]:
    """Every name ``node`` may bind in the module's scope (an over-approximation: loop
    variables of comprehensions count too), not looking inside functions and classes."""
    names: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            stack += n.decorator_list + ([] if isinstance(n, ast.ClassDef) else
                                         n.args.defaults + [d for d in n.args.kw_defaults if d])
            continue
        if isinstance(n, ast.Lambda):
            stack += n.args.defaults
            continue
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.partition(".")[0] for a in n.names}
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
        stack.extend(ast.iter_child_nodes(n))
    return names


def _statements(body: list[ast.stmt]) -> list[tuple[ast.stmt, bool]]:
    """The module's statements that run on import, each with whether it stands at the top
    level (not inside an ``if``, a loop, a ``try``, ...); a ``__main__`` guard's body does
    not run on import."""
    out: list[tuple[ast.stmt, bool]] = []
    for node in body:
        out.append((node, True))
        blocks: list[list[ast.stmt]] = []
        if _is_main_guard(node):
            blocks = [node.orelse]
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            blocks = [getattr(node, f) for f in ("body", "orelse", "finalbody")
                      if isinstance(getattr(node, f, None), list)]
            blocks += [h.body for h in getattr(node, "handlers", [])]
            blocks += [c.body for c in getattr(node, "cases", [])]
        for block in blocks:
            out += [(s, False) for s, _ in _statements(block)]
    return out


class _Module:
    """The parsed module: which statements bind which names, and the symbol tables."""

    def __init__(self, file: pathlib.Path) -> None:
        self.file = file
        self.source = file.read_text(encoding="utf-8")
        try:
            self.tree = ast.parse(self.source, str(file))
        except SyntaxError as exc:
            raise NeedsModule(f"{file} does not parse: {exc}") from None
        self.binders: dict[str, list[tuple[ast.stmt, bool]]] = {}
        self.star = False
        for stmt, top in _statements(self.tree.body):
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                self.star = True
            if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try,
                                 ast.With, ast.AsyncWith, ast.Match)) or (
                    hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
                names = set().union(*[_stored(e) for e in ast.iter_child_nodes(stmt)
                                      if not isinstance(e, ast.stmt)])
            else:
                names = _stored(stmt)
            for name in names:
                self.binders.setdefault(name, []).append((stmt, top))
        self.globals_declared = {n for node in ast.walk(self.tree)
                                 if isinstance(node, ast.Global) for n in node.names}
        self.tables = {t.get_name(): t for t in
                       symtable.symtable(self.source, str(file), "exec").get_children()
                       if t.get_type() == "function"}

    def where(self, node: ast.AST) -> str:
        return f"{self.file.name}:{node.lineno}"


def _reads(table: symtable.SymbolTable) -> set[str]:
    """The module-level names a function (and the functions inside it) reads."""
    names = {s.get_name() for s in table.get_symbols() if s.is_global()}
    for child in table.get_children():
        names |= _reads(child)
    return names


def _dotted(expr: ast.expr, imports: dict[str, str]) -> str:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in imports:
        return ""
    return ".".join([imports[expr.id], *reversed(parts)])


def _imported(stmt: ast.stmt) -> dict[str, str]:
    """The names an import statement binds, with what they stand for (``np`` → ``numpy``)."""
    if isinstance(stmt, ast.Import):
        return {a.asname or a.name.partition(".")[0]: a.name if a.asname else
                a.name.partition(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
        return {a.asname or a.name: f"{stmt.module}.{a.name}" for a in stmt.names}
    return {}


def _constant(value: ast.expr) -> bool:
    try:
        v = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False

    def immutable(x: Any) -> bool:
        return isinstance(x, _CONSTANTS) or isinstance(x, tuple) and all(map(immutable, x))
    return immutable(v)


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def _number(expr: ast.expr, numbers: dict[str, Any]) -> bool:
    """Whether ``expr`` is arithmetic on numbers (literals, and the names in ``numbers``,
    constants bound once to numbers), which Python evaluates without running anything the
    user wrote: ``1 / 255``, ``-EPS``, ``2 ** -10`` (powers of a number to a number of at
    most 256 only: ``10 ** 10 ** 10`` would not end)."""
    if isinstance(expr, ast.Name):
        return expr.id in numbers
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float, complex))
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        return _number(expr.operand, numbers)
    if not isinstance(expr, ast.BinOp):
        return False
    if isinstance(expr.op, ast.Pow):
        exponent = numbers.get(expr.right.id) if isinstance(expr.right, ast.Name) else \
            _literal(expr.right)
        return isinstance(expr.left, (ast.Constant, ast.Name)) and \
            _number(expr.left, numbers) and isinstance(exponent, (int, float)) and \
            abs(exponent) <= 256
    return isinstance(expr.op, _ARITHMETIC) and _number(expr.left, numbers) and \
        _number(expr.right, numbers)


def _literal(expr: ast.expr) -> Any:
    try:
        return ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _runs_code(expr: ast.expr, numbers: dict[str, Any]) -> ast.AST | None:
    """The part of a default value that could run code when evaluated (a call, a subscript,
    a comparison, a lambda, an f-string, arithmetic on anything but numbers, ...), or None:
    literals, arithmetic on numbers, names, attributes, and tuples, lists, sets and dicts
    of them are safe."""
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.expr) and _number(node, numbers):
            continue
        if isinstance(node, ast.Dict) and None in node.keys:     # {**mapping}
            return node
        if not isinstance(node, (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List,
                                 ast.Set, ast.Dict, ast.expr_context)):
            return node
        stack.extend(ast.iter_child_nodes(node))
    return None


def _check_defaults(module: _Module, node: ast.FunctionDef) -> None:
    """Raise :class:`NeedsModule` where evaluating a default of ``node`` could run code."""
    args = node.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    numbers = {}
    for name, binders in module.binders.items():
        stmt, top = binders[0]
        if len(binders) == 1 and top and isinstance(stmt, ast.Assign) and \
                len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _literal(stmt.value)
            if isinstance(value, (int, float, complex)):
                numbers[name] = value
    for param, default in pairs:
        part = _runs_code(default, numbers)
        if part is not None:
            text = ast.get_source_segment(module.source, default) or ast.unparse(default)
            inner = "" if part is default else f" (the {type(part).__name__} " \
                f"{ast.unparse(part)[:60]})"
            raise NeedsModule(f"the default value of {param.arg!r} in {node.name} "
                              f"({module.where(default)}: {text}) may run code when evaluated"
                              f"{inner}; only literals, arithmetic on numbers, names and "
                              "attributes are evaluated without running the module")


def _sibling(top: str, folder: pathlib.Path) -> str | None:
    """Where ``top`` is a module or package directly in ``folder`` that ``import top``
    would run (user code next to the script), or None (an installed module, or none)."""
    if top == "__future__":
        return None
    loaded = sys.modules.get(top)
    spec = getattr(loaded, "__spec__", None) if loaded is not None else None
    if loaded is None:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        if spec is None:                              # only the script's folder may have it
            spec = importlib.machinery.PathFinder.find_spec(top, [str(folder)])
    if spec is None:
        return None
    places = [pathlib.Path(spec.origin)] if spec.origin and spec.has_location else []
    places += [pathlib.Path(p) / "__init__.py" for p in spec.submodule_search_locations or ()]
    for place in places:
        real = place.resolve()
        if real.parent == folder or (real.name == "__init__.py" and real.parent.parent == folder):
            return str(place)
    return None


def load_function(file: pathlib.Path, name: str) -> Any:
    """``name`` from ``file``, running only the statements it needs (see the module
    docstring); raises :class:`NeedsModule` when that cannot be done soundly."""
    module = _Module(file)
    if "." in name:
        raise NeedsModule(f"{name!r} is not a module-level function: a method or a nested "
                          "function exists only once the module has run")
    keep: dict[int, ast.stmt] = {}
    imports: dict[str, str] = {}
    todo, seen = [name], set()
    while todo:
        wanted = todo.pop()
        if wanted in seen:
            continue
        seen.add(wanted)
        binders = module.binders.get(wanted, [])
        if not binders:
            if module.star:
                raise NeedsModule(f"{wanted!r} may come from the '*' import, which only "
                                  "running the module resolves")
            if wanted == name:
                raise NeedsModule(f"{file} defines no function {name!r} at its top level")
            continue                           # a builtin, or a NameError srcgrad reports
        stmt, top = binders[0]
        why = _why_not(module, wanted, binders, wanted == name)
        if why:
            raise NeedsModule(why)
        keep[id(stmt)] = stmt
        imports.update(_imported(stmt))
        if isinstance(stmt, ast.FunctionDef):
            _check_defaults(module, stmt)
            todo += sorted(_reads(module.tables[wanted]) - {"__name__", "__file__"})
            args = stmt.args
            evaluated = args.defaults + [d for d in args.kw_defaults if d] + \
                stmt.decorator_list
            todo += sorted({n.id for d in evaluated for n in ast.walk(d)
                            if isinstance(n, ast.Name)})
    target = module.binders[name][0][0]
    for deco in target.decorator_list:
        call = deco.func if isinstance(deco, ast.Call) else deco
        if _dotted(call, imports) not in _TRANSFORMS:
            raise NeedsModule(f"{name} is decorated at {module.where(deco)}; only running "
                              "the module applies a decorator other than srcgrad's")
    folder = file.resolve().parent
    for stmt in keep.values():
        for alias in stmt.names if isinstance(stmt, (ast.Import, ast.ImportFrom)) else ():
            top = (stmt.module if isinstance(stmt, ast.ImportFrom) else alias.name)
            place = _sibling(top.partition(".")[0], folder)
            if place is not None:
                raise NeedsModule(f"{module.where(stmt)} imports {top}, which is {place}, "
                                  "next to the script: importing it would run its code")
    body = [_bare(s) if isinstance(s, ast.FunctionDef) else _plain(s)
            for s, _ in _statements(module.tree.body) if id(s) in keep]
    namespace = types.ModuleType(file.stem)
    namespace.__file__ = str(file)
    code = compile(ast.Module(body=body, type_ignores=[]), str(file), "exec")
    exec(code, namespace.__dict__)
    return namespace.__dict__[name]


def _why_not(module: _Module, name: str, binders: list, target: bool) -> str | None:
    """Why ``name`` cannot be bound without running the module, or None."""
    stmt, top = binders[0]
    place = module.where(stmt)
    if len(binders) > 1:
        lines = ", ".join(module.where(s) for s, _ in binders)
        return f"{name!r} is bound more than once ({lines}): which value it has depends on " \
               "running the module"
    if name in module.globals_declared:
        return f"{name!r} is declared global in a function, which may rebind it at run time"
    if module.star:
        return f"the module has a '*' import, which may rebind {name!r}"
    if not top:
        return f"{name!r} is bound inside a block ({place}) that only running the module " \
               "evaluates"
    if target and not isinstance(stmt, ast.FunctionDef):
        return f"{name!r} is not a 'def' ({place}); only running the module makes it"
    if isinstance(stmt, ast.FunctionDef):
        if stmt.decorator_list and not target:
            return f"the helper {name!r} is decorated ({place})"
        return None
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        if isinstance(stmt, ast.ImportFrom) and stmt.level:
            return f"{name!r} comes from a relative import ({place})"
        return None
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and \
            _constant(stmt.value) and all(isinstance(t, ast.Name) for t in (
                stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])):
        return None
    return f"{name!r} is computed by running code ({place}), not an import or a constant"


def _bare(node: ast.FunctionDef) -> ast.FunctionDef:
    """The ``def`` without decorators (srcgrad's, checked) and annotations (never read)."""
    node = copy.deepcopy(node)
    node.decorator_list, node.returns = [], None
    args = node.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    return node



def _plain(node: ast.stmt) -> ast.stmt:
    """``X: T = 3`` as ``X = 3``: the annotation is not the function's to evaluate."""
    if isinstance(node, ast.AnnAssign):
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
    return node
