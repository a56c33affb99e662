"""Structural arguments and settings: what a call passes that carries no gradient but shapes
the code.

- Parameters NumPy takes as integers only (a shape, axes, pad widths) may be computed at run
  time from any value, an argument not differentiated included (``x.reshape(n, -1)``,
  ``np.pad(x, ((0, 0), (p, p)))``): an integer carries no gradient, the generated code passes
  the very value the plain function passes, and NumPy accepts or refuses it as it would.
- A dict, list or tuple argument not differentiated (hyper-parameters, a list of indices) is
  compiled at the call, for its structure, when the code cannot be built before the call
  (:mod:`srcgrad.transforms.hyperparameters`): refusals met before are deferred to it, and an
  argument that is None then is the constant None.  ``if d is not None`` of such an argument
  (never None) takes its branch when compiling.
- ``dict(T)`` of a global settings dict is a dict of the function's own, by ``T``'s keys.
- ``d[k]`` of a key a dict lacks, in a branch or loop body, raises Python's KeyError when the
  code gets there (a branch not taken reads nothing).
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.dict_values import Local
from srcgrad.frontend.objects import NeedsArgumentTypes
from srcgrad.frontend.scopes import exposed_suffixes, walk
from srcgrad.ir import Const, Pack, Stmt, Tree, Var
from srcgrad.runtime.rules.primitives import NotCompiled

__all__ = ["NONE", "INTEGER_PARAMETERS", "integers_only", "dict_argument", "global_dict",
           "known_branch", "lower_in_place", "over_argument", "missing_key"]


class _NoneArgument:
    """The structure of an argument not differentiated that is None, where the code reads
    another call's argument as a dict or list: the code is built with it as the constant
    None (``if hparams is not None`` then known)."""

    def __repr__(self) -> str:
        return "None-argument"


NONE = _NoneArgument()

INTEGER_PARAMETERS = frozenset({"shape", "newshape", "axes", "axis", "pad_width"})
"""Parameter names whose values NumPy takes as integers (or tuples of them) only, in every
function that has them."""


def integers_only(name: str) -> bool:
    """Whether a primitive's parameter ``name`` takes integers only (its run-time value then
    carries no gradient, whatever it is computed from)."""
    return name in INTEGER_PARAMETERS


def dict_argument(error: CompileError) -> CompileError:
    """``error``, met reading a parameter as a dict before the arguments are seen: deferred
    to the call, where a dict argument's structure is known (the transform then builds the
    code for it)."""
    return NeedsArgumentTypes(error.message, error.where)


_SETTINGS = (int, float, bool, str, type(None), np.number, np.bool_)
"""The values a settings dict copied by ``dict(T)`` may hold: immutable ones."""


def global_dict(host: Any, table: Const, node: ast.expr) -> Local | None:
    """``dict(T)`` of a dict ``T`` known when compiling (a global of settings): a dict of the
    function's own, its keys those ``T`` has now, each value read from ``T`` when the code
    runs (no gradient).  The code checks that ``T`` still has those keys, in that order, and
    raises ``NotCompiled`` otherwise (the eager engine then answers).  None when a key is not
    one known when compiling can hold, or a value is not a number, string or None."""
    keys = list(table.value)
    if not all(type(k) in (str, int, float, bool) for k in keys) or not all(
            isinstance(v, _SETTINGS) for v in table.value.values()):
        return None                  # an array in it: shared with the copy, as in Python
    written, uses = host.statics.rename(node)
    check = ast.If(ast.Compare(ast.List([ast.Starred(written, ast.Load())], ast.Load()),
                               [ast.NotEq()], [ast.List([ast.Constant(k) for k in keys],
                                                        ast.Load())]),
                   [ast.Raise(ast.Call(ast.Name("NotCompiled", ast.Load()), [ast.Constant(
                       f"the keys of {ast.unparse(node)} are not those it had when the code "
                       "was compiled")], []), None)], [])
    for n in ast.walk(check):
        ast.copy_location(n, node)
    host.emit(Stmt(None, "effect", params={"defines": {"NotCompiled": NotCompiled}},
                   expr=check, uses=uses))
    out = Local("dict", {})
    for k in keys:
        item = ast.copy_location(ast.Subscript(node, ast.Constant(k), ast.Load()), node)
        out.children[k] = host.statics.static_expr(item, hint="setting")
    return out


def known_branch(host: Any, s: ast.If) -> list[ast.stmt] | None:
    """The statements of the branch that ``s`` takes, when its test is known when compiling:
    ``x is None`` or ``x is not None`` of a dict, list or tuple argument (its structure is
    known: never None), of a tuple or dict the function built, or of a constant.  None when
    the test is a run-time value, or a branch jumps (``break``, ``continue``, ``return``)."""
    test = s.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
            test.ops[0], (ast.Is, ast.IsNot)) and isinstance(test.left, ast.Name) and
            isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
        return None
    value = host.scope.get(test.left.id)
    if isinstance(value, (Tree, Pack)):
        none = False
    elif isinstance(value, Const):
        none = value.value is None
    else:
        return None
    if any(isinstance(n, (ast.Break, ast.Continue, ast.Return)) for n in walk(s.body + s.orelse)):
        return None
    return s.body if none == isinstance(test.ops[0], ast.Is) else s.orelse


def lower_in_place(host: Any, block: list[ast.stmt]) -> None:
    """``block``'s statements lowered where it stands (the branch a known test takes)."""
    after = host.live_after()
    rest = exposed_suffixes(block)
    for i, st in enumerate(block):
        host.line, host.text = st.lineno, host.src.text(st)
        with host.live_as(rest[i + 1] | after):
            host.statement(st)


@contextlib.contextmanager
def over_argument(host: Any, s: ast.For) -> Iterator[None]:
    """A refusal met lowering a loop over a parameter not differentiated (``for t in
    range(len(inputs))``) before the arguments are seen: deferred to the call, where a list
    argument's length (or a dict's keys) is known and the loop may be unrolled."""
    try:
        yield
    except NeedsArgumentTypes:
        raise
    except CompileError as error:
        if host.treeless and any(
                isinstance(value := host.scope.get(n.id), Var) and value.name in
                host.param_names and host.source_names.get(value.name) not in host.wrt_users
                for n in ast.walk(s.iter) if isinstance(n, ast.Name)):
            raise NeedsArgumentTypes(error.message, error.where) from None
        raise


def missing_key(host: Any, key: Any, node: ast.AST) -> Const | None:
    """``d[key]`` of a dict without that key, in a branch or loop body: Python's KeyError,
    raised when the code gets there (a branch not taken reads nothing); a value stands for
    the item, never used.  None at the top of the function, where every run raises (the
    caller refuses it when compiling)."""
    if not host.in_block:
        return None
    raise_ = ast.Raise(ast.Call(ast.Name("KeyError", ast.Load()), [ast.Constant(key)], []),
                       None)
    for n in ast.walk(raise_):
        ast.copy_location(n, node)
    host.emit(Stmt(None, "effect", expr=raise_, uses=()))
    return Const(0.0)
