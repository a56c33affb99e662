"""The compiler's core IR: a function as a list of single-operation assignments (ANF, SSA).

Every statement assigns one new name.  Its operands are :class:`Var` (an earlier name) or
:class:`Const` (a value known when compiling).  Kinds:

``prim``    ``target = prim(*args, **params)``: a primitive of the rule table (differentiable
            through the inputs ``args``; ``params`` are static: shapes, axes, indices);
``static``  ``target = <Python expression>``: shapes, counts, flags, constructors such as
            ``np.zeros(n)``, random draws (never differentiated, ``expr`` printed verbatim);
``call``    ``target = callee(*args)``: another user function, transformed in its turn;
``pack``    ``target = (a, b, ...)``; ``unpack`` ``target = source[index]`` of a pack/call;
``effect``  a statement kept for its effect in the forward pass (``print``, ``assert``);
``leaf``    ``target = param[path]``: one leaf of a pytree argument (a differentiable input);
``branch``  ``target = then(*args[1:]) if args[0] else orelse(*args[1:])``: two blocks;
``loop``    the carried values after running a body block (and a test block for ``while``);
``append``  ``args[0].append(args[1])``; ``target`` is the list after it (the same object);
``listget`` ``target = args[0][index]`` of a Python list built at run time (``fn.lists``).

While lowering, a value is a :class:`Var`, a :class:`Const`, a :class:`Pack` (a tuple or list
literal not yet built), a :class:`Tree` (a pytree argument) or a :class:`Closure` (a lambda).
A constant prints as the expression the user wrote for it, else as a literal
(:func:`const_expr`, :func:`value_expr`).
"""

from __future__ import annotations

import ast
import keyword
import math
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from srcgrad.errors import CompileError, Location

__all__ = ["Var", "Const", "Stmt", "Function", "Operand", "fresh_name", "bind_free",
           "bind_values", "Pack", "Tree", "Closure", "constant", "const_expr", "value_expr",
           "literal", "hashable", "GENERATED", "is_generated"]


@dataclass(frozen=True)
class Var:
    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class Const:
    value: Any

    def __repr__(self) -> str:
        return repr(self.value)


Operand = Var | Const


@dataclass(eq=False)
class Stmt:
    target: str | None
    kind: str
    fn: Any = None                       # Primitive, callee Function, or None
    args: list[Operand] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)   # name -> Python value or ast.expr
    expr: ast.expr | ast.stmt | None = None                # static / effect: the code itself
    uses: tuple[str, ...] = ()           # names a static expr or dynamic params read
    line: int = 0
    text: str = ""                       # the user's source text, for comments

    def reads(self) -> list[str]:
        """Every SSA name this statement reads (inputs, dynamic params, static uses)."""
        names = [a.name for a in self.args if isinstance(a, Var)]
        return names + [u for u in self.uses if u not in names]


@dataclass(eq=False)
class Function:
    """One user function lowered: parameters, body, and what it returns."""

    name: str
    params: list[str]                    # SSA names of the parameters, in order
    body: list[Stmt]
    result: Operand                      # the returned value (a Var of a pack for tuples)
    filename: str = "<unknown>"
    firstline: int = 0
    defaults: dict[str, Any] = field(default_factory=dict)
    source_names: dict[str, str] = field(default_factory=dict)   # SSA name -> user's name
    used: set[str] = field(default_factory=set)          # every name taken (for fresh names)
    free: dict[str, object] = field(default_factory=dict)  # user globals the code reads
    inline: set[str] = field(default_factory=set)        # temporaries a pass may inline
    trees: dict[str, Any] = field(default_factory=dict)  # pytree parameter -> its leaves
    nondiff: set[str] = field(default_factory=set)       # parameters never differentiated
    flags: set[str] = field(default_factory=set)         # break/return flags: never active
    lists: set[str] = field(default_factory=set)         # names holding run-time lists
    mutates: set[str] = field(default_factory=set)       # parameters changed in place
    accumulates: list[str] = field(default_factory=list)  # loop body: totals handed in
    differentiable: set[str] | None = None   # block: parameters that reach the result
    next_suffix: dict[str, int] = field(default_factory=dict)  # fresh names: where to resume

    def outputs(self) -> list[str | None]:
        """The names a tuple result is packed from (a block returns a pack of its outputs)."""
        made = next((st for st in self.body if isinstance(self.result, Var)
                     and st.target == self.result.name), None)
        if made is None or made.kind != "pack":
            return []
        return [a.name if isinstance(a, Var) else None for a in made.args]

    def returned(self, i: int) -> str | None:
        """The name returned at position ``i`` of a tuple result."""
        outputs = self.outputs()
        return outputs[i] if i < len(outputs) else None

    def fresh(self, base: str) -> str:
        """A new name, not clashing with any name of the function or its generated code."""
        return fresh_name(base, self.used, self.next_suffix)


def fresh_name(base: str, used: set[str], hints: dict[str, int] | None = None) -> str:
    """``base`` made a valid identifier and unique in ``used`` (``x``, ``x_1``, …); recorded.
    ``hints`` remembers the last suffix given to each base, so that a function's thousandth
    ``d_x`` costs what its first did (names are never given back)."""
    base = unicodedata.normalize("NFKC", str(base))     # as Python reads identifiers
    base = "".join(c if ("a" + c).isidentifier() else "_" for c in base).strip("_") or "t"
    if not base.isidentifier() or keyword.iskeyword(base):
        base = "v_" + base
    k = hints.get(base, 0) if hints is not None else 0
    name = base if k == 0 else f"{base}_{k}"
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    if hints is not None:
        hints[base] = k
    return name


GENERATED = "srcgrad_generated_"
"""How the modules srcgrad generates are named (``__name__``): another transform's code, read
again by the front end or embedded by the emitters, is known by it."""


def is_generated(fn: Any) -> bool:
    """A function (or class) of a module srcgrad generated."""
    module = getattr(fn, "__module__", None)
    return isinstance(module, str) and module.startswith(GENERATED)


# ---------------------------------------------------------------------------------------------
# Values while lowering, besides Var and Const.

class Pack:
    """A tuple or list literal not yet materialised (``a, b = b, a``; ``return x, y``)."""

    def __init__(self, items: list, is_list: bool = False) -> None:
        self.items = items
        self.is_list = is_list


class Closure:
    """A lambda bound to a name in the function: inlined where it is called (late binding,
    as Python's closures: it reads the enclosing names' values at the call)."""

    def __init__(self, node: ast.Lambda) -> None:
        self.node = node


class Tree:
    """A pytree argument (dict, list or tuple): constant subscripts select its leaves."""

    def __init__(self, kind: Any, children: dict) -> None:
        self.kind = kind
        self.children = children        # key (str or int) -> Tree or Var
        self.root: Var | None = None    # the parameter, for a whole argument

    def leaves(self, path: tuple = ()) -> list[tuple[tuple, Any]]:
        """``(path, Var)`` for every leaf, in a fixed order."""
        out = []
        for key, child in self.children.items():
            out += child.leaves(path + (key,)) if isinstance(child, Tree) else [
                (path + (key,), child)]
        return out

    def with_leaves(self, values: dict) -> Tree:
        """The same structure holding ``values[path]`` at each leaf (a block's parameters)."""
        def build(tree: Tree, path: tuple) -> Tree:
            return Tree(tree.kind, {k: build(c, path + (k,)) if isinstance(c, Tree)
                                    else values[path + (k,)] for k, c in tree.children.items()})
        return build(self, ())

    def replaced(self, old: Var, new: Var) -> Tree:
        """This tree with the leaf ``old`` replaced by ``new`` (a new Tree, the same root)."""
        children = {key: new if isinstance(child, Var) and child.name == old.name else
                    child.replaced(old, new) if isinstance(child, Tree) else child
                    for key, child in self.children.items()}
        out = Tree(self.kind, children)
        out.root = self.root
        return out

    def literal(self) -> ast.expr:
        """The tree written out from its leaves (when no parameter holds it whole)."""
        items = [c.literal() if isinstance(c, Tree) else ast.Name(c.name, ast.Load())
                 for c in self.children.values()]
        if self.kind == "dict":
            return ast.Dict([ast.Constant(k) for k in self.children], items)
        return ast.List(items, ast.Load()) if self.kind is list else ast.Tuple(items, ast.Load())


# ---------------------------------------------------------------------------------------------
# How constants print.

def constant(value: Any, expr: ast.expr) -> Const:
    """A compile-time value, printed as the user wrote it (``np.pi``, ``W0``, ``rng``)."""
    c = Const(value)
    object.__setattr__(c, "expr", expr)
    return c


def const_expr(c: Const) -> ast.expr:
    """How a constant prints: its own expression, or a literal."""
    expr = getattr(c, "expr", None)
    if expr is not None:
        return expr
    return value_expr(c.value)


def value_expr(value: Any, leaf: Any = None) -> ast.expr:
    """A Python value as an expression (slices as ``slice(...)`` calls); ``leaf(v)`` may give
    the expression of values it knows (the compiler's symbols)."""
    node = leaf(value) if leaf is not None else None
    if node is not None:
        return node
    if isinstance(value, (tuple, list)):
        items = [value_expr(v, leaf) for v in value]
        return ast.Tuple(items, ast.Load()) if isinstance(value, tuple) else ast.List(
            items, ast.Load())
    if isinstance(value, slice):                 # slice(1, None), not slice(1, None, None)
        parts = [value.start, value.stop] + ([value.step] if value.step is not None else [])
        return ast.Call(ast.Name("slice", ast.Load()), [value_expr(p, leaf) for p in parts], [])
    if value is Ellipsis:
        return ast.Constant(Ellipsis)
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return ast.parse(f"float({str(value)!r})", mode="eval").body
    if isinstance(value, np.dtype) or isinstance(value, type) and issubclass(value, np.generic):
        return ast.Attribute(ast.Name("np", ast.Load()), np.dtype(value).name, ast.Load())
    if isinstance(value, (int, float, bool, str, complex)) or value is None:
        return ast.Constant(value)
    raise TypeError(f"no literal for {type(value).__name__}")


def literal(value: Any) -> bool:
    """Whether ``value`` prints as a literal (:func:`value_expr` has an expression for it)."""
    try:
        value_expr(value)
    except TypeError:
        return False
    return True


def hashable(value: Any) -> bool:
    """Whether ``value`` can be looked up in a set or a dict (a key, a table of callables)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


def bind_free(free: dict[str, Any], ir: Function) -> None:
    """Add ``ir.free`` (the user's values its code reads, by name) to ``free``, a module's;
    a name already bound to another value is a CompileError at ``ir``'s definition."""
    bind_values(free, ir.free, Location(ir.filename, ir.firstline, 0, 0, "", ir.name))


def bind_values(free: dict[str, Any], values: dict[str, Any], where: Location | None) -> None:
    """Add ``values`` to ``free``, the names a generated module binds; a name already bound to
    another value is a CompileError at ``where`` (one value per name in a module)."""
    for name, value in values.items():
        if free.setdefault(name, value) is not value:
            raise CompileError(f"two functions compiled together read different values named "
                               f"{name!r}; srcgrad binds one value per name in a generated "
                               "module (rename one)", where)
