"""Dicts the function builds: literals, ``dict(...)``, comprehensions, reads and writes by key.

A dict whose keys are known when compiling is a :class:`Local` tree: a compile-time mapping
from each key to the lowered value it holds (an SSA name, a constant, a tuple or list literal,
another tree).  It costs nothing at run time.  ``d[k] = v`` changes the mapping in place, so
every name bound to the dict (a helper lowered in place included) sees it, as in Python; the
mapping keeps insertion order, which its loops follow (they are unrolled).  A key must be
known when compiling: a literal, or built from constants and the index of an unrolled loop
(``'W' + str(i)``, ``f'b{i}'``).  A dict used whole as a run-time value (returned, or changed
in a loop or branch that is not unrolled) is refused.
"""

from __future__ import annotations

import ast
import builtins
import copy
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.aliases import Aliases
from srcgrad.frontend.dict_values import Local, holds, ordered_keys
from srcgrad.frontend.local_objects import refuse_value
from srcgrad.frontend.operators import Operators
from srcgrad.frontend.parse import Env
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.structural import dict_argument, global_dict, missing_key
from srcgrad.ir import Closure, Const, Pack, Tree, Var, hashable

__all__ = ["Dicts", "key_value"]

_KEY_NODES = (ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.Add, ast.Mult, ast.Mod, ast.Sub,
              ast.JoinedStr, ast.FormattedValue, ast.Call, ast.Tuple, ast.UnaryOp, ast.USub)
_KEY_BUILTINS = {"str": str, "int": int, "repr": repr, "format": format}
_KEY_TYPES = (str, int, float, bool)


def key_value(value: Any) -> bool:
    """Whether a lowered value is a key known when compiling."""
    return isinstance(value, Const) and isinstance(value.value, _KEY_TYPES + (tuple,)) and \
        hashable(value.value)


class Host(Protocol):
    """What the lowering of dicts reads of, and asks of, the lowerer that holds it.  The names
    in scope change as lowering goes on (a helper lowered in place swaps them): they are read
    here when needed, never kept."""

    scope: dict[str, Any]
    env: Env
    source_names: dict[str, str]
    param_names: set[str]
    wrt_users: frozenset[str]          # the user's names of the differentiated parameters
    treeless: bool                     # compiled before the structure of the arguments
    line: int
    aliases: Aliases
    operators: Operators
    statics: Statics

    def expr(self, node: ast.expr) -> Any: ...

    def materialize(self, value: Any, hint: str) -> Any: ...

    def consume(self, old: Var, line: int, what: str) -> None: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Dicts:
    """The lowering of dicts built by the function; the lowerer's ``dicts``."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.known: dict[str, Any] = {}    # a static name -> its value, a key known here

    # ------------------------------------------------------------------------ building
    def literal(self, node: ast.Dict) -> Local:
        host = self.host
        out = Local("dict", {})
        for k, v in zip(node.keys, node.values):
            if k is None:                                  # {**other}
                other = host.expr(v)
                if not (isinstance(other, Tree) and other.kind == "dict"):
                    raise host.error("srcgrad compiles {**d} of a dict whose keys are known "
                                     "when compiling", v)
                out.children.update(other.children)
                continue
            key = self.key(k)
            out.children[key] = self.item(host.expr(v), v)
        return out

    def text(self, node: ast.JoinedStr) -> Any:
        """An f-string: text (no gradient), a constant when its parts are known."""
        host = self.host
        value = self.known_key(node)
        return Const(value) if value is not None else host.statics.static_expr(node, hint="text")

    def item(self, value: Any, node: ast.AST) -> Any:
        """A value as a dict holds it (a lambda is refused)."""
        host = self.host
        if isinstance(value, Closure) or isinstance(value, Pack) and any(
                isinstance(v, Closure) for v in value.items):
            raise host.error("a lambda stored in a dict is not compiled (call it where it is "
                             "defined)", node)
        return value

    def key(self, node: ast.expr) -> Any:
        """A key known when compiling, or a CompileError that says why it is not."""
        host = self.host
        value = self.known_key(node)
        if value is None:
            written = ast.unparse(node)
            raise host.error(
                f"the dict key {written} is computed when the code runs; srcgrad compiles a "
                "dict whose keys are known when compiling: literals, or keys built from "
                "constants and the index of a loop it unrolls (params['W' + str(i)] in "
                "`for i in range(3)`, a range of known length)", node)
        return value

    def known_key(self, node: ast.expr) -> Any:
        """The value of a key expression made of constants, names bound to constants and
        ``str``/``int``/f-strings of them (None when it is not known)."""
        host = self.host
        names: dict[str, Any] = {}
        known = self.known
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                value = host.scope.get(n.id)
                if isinstance(value, Var) and value.name in known:
                    names[n.id] = known[value.name]
                elif key_value(value):
                    names[n.id] = value.value
                elif value is None and n.id in _KEY_BUILTINS and \
                        getattr(host.env, "resolve", lambda _: None)(n.id) is getattr(
                            builtins, n.id):
                    names[n.id] = _KEY_BUILTINS[n.id]
                else:
                    return None
            elif not isinstance(n, _KEY_NODES) or isinstance(n, ast.Call) and not (
                    isinstance(n.func, ast.Name) and not n.keywords):
                return None
        tree = ast.fix_missing_locations(ast.Expression(copy.deepcopy(node)))
        try:
            value = eval(compile(tree, "<key>", "eval"), {"__builtins__": {}}, names)
        except Exception:  # noqa: BLE001 - Python raises it when the code runs
            return None
        return value if key_value(Const(value)) else None

    def note_known(self, target: str, node: ast.expr) -> None:
        """Remember the value of a static name when it is a key known when compiling."""
        if all(isinstance(n, _KEY_NODES) for n in ast.walk(node)):
            value = self.known_key(node)
            if value is not None:
                self.known[target] = value

    # ----------------------------------------------------------------------- reading
    def read(self, base: Tree, node: ast.Subscript) -> Any:
        """``d[k]`` of a dict with keys known when compiling."""
        host = self.host
        key = self.key(node.slice)
        if key not in base.children and (stand_in := missing_key(host, key, node)) is not None:
            return stand_in                       # KeyError if the code gets here
        if key not in base.children:
            raise host.error(f"the key {key!r} is not in this dict when the code reaches "
                             f"here (Python raises KeyError); its keys are "
                             f"{list(base.children)}", node.slice)
        return base.children[key]

    def call(self, node: ast.Call) -> Local:
        """``dict(a=x)``, ``dict(d)``, ``dict([('a', x)])``, ``dict(zip(keys, values))``."""
        host = self.host
        out = Local("dict", {})
        if len(node.args) > 1:
            raise host.error("dict() takes at most one positional argument", node)
        if node.args:
            arg = node.args[0]
            value = host.expr(arg)
            if isinstance(value, Tree) and value.kind == "dict":
                out.children.update(value.children)
            elif isinstance(value, Pack) and all(isinstance(p, Pack) and len(p.items) == 2
                                                 for p in value.items):
                for pair in value.items:
                    k = pair.items[0]
                    if not key_value(k):
                        raise host.error("dict() of pairs whose keys are known when "
                                         "compiling is compiled", arg)
                    out.children[k.value] = self.item(pair.items[1], arg)
            elif isinstance(value, Const) and type(value.value) is dict and (
                    table := global_dict(host, value, arg)) is not None:
                out.children.update(table.children)      # dict(DEFAULTS): by its keys
            elif host.statics.is_static(value):
                return host.statics.static_expr(node, hint="table")
            else:
                error = host.error("srcgrad compiles dict() of keywords, of a dict, or of a "
                                   "list of (key, value) pairs known when compiling", arg)
                raise dict_argument(error) if self.parameter(value) else error
        for k in node.keywords:
            out.children[k.arg] = self.item(host.expr(k.value), k.value)
        return out

    def method(self, base: Tree, node: ast.Call) -> Any:
        """``d.get``, ``d.keys()``, ``d.values()``, ``d.items()``, ``d.copy()``,
        ``d.update(...)``, ``d.pop(k)``, ``d.setdefault(k, v)``."""
        host = self.host
        name, args = node.func.attr, node.args
        owner = ast.unparse(node.func.value)
        if node.keywords and name != "update" or base.kind != "dict":
            raise host.error(f"srcgrad cannot compile {owner}.{name}() here", node)
        if name in ("keys", "values", "items", "copy") and not args:
            if name == "copy":
                return Local("dict", dict(base.children))
            keys = ordered_keys(base)
            items = [Const(k) for k in keys] if name == "keys" else \
                [base.children[k] for k in keys] if name == "values" else \
                [Pack([Const(k), base.children[k]]) for k in keys]
            return Pack(items, is_list=True)
        if name in ("get", "pop", "setdefault") and 1 <= len(args) <= 2:
            key = self.key(args[0])
            default = self.item(host.expr(args[1]), args[1]) if len(args) == 2 \
                else Const(None)
            if name == "pop" and key not in base.children and len(args) == 1:
                raise host.error(f"the key {key!r} is not in this dict here (Python raises "
                                 "KeyError)", args[0])
            if name != "get":
                self.writable(base, node)
            if name == "pop":
                return base.children.pop(key, default)
            if name == "setdefault":
                return base.children.setdefault(key, default)
            return base.children.get(key, default)
        if name == "update" and len(args) <= 1:
            self.writable(base, node)
            new = self.call(node)
            if not isinstance(new, Local):
                raise host.error("srcgrad compiles d.update() of a dict or of keywords", node)
            base.children.update(new.children)
            return Const(None)
        raise host.error(f"srcgrad cannot compile {owner}.{name}() on a dict here (it "
                         "compiles get, keys, values, items, copy, update, pop and "
                         "setdefault)", node)

    def whole(self, f: Any, node: ast.Call) -> Any:
        """``len(d)``, ``list(d)``, ``tuple(d)``, ``sorted(d)`` of a dict whose keys are
        known (None: ``f`` is another call, or its argument no such dict)."""
        host = self.host
        if f not in (builtins.len, builtins.list, builtins.tuple, builtins.sorted) or \
                len(node.args) != 1 or node.keywords:
            return None
        base = host.statics.peek(node.args[0])
        if not (isinstance(base, Tree) and base.kind == "dict"):
            return None
        keys = ordered_keys(base)
        if f is builtins.len:
            return Const(len(keys))
        if f is builtins.sorted:
            try:
                keys = sorted(keys)
            except TypeError:
                raise host.error("sorted() of keys that do not compare", node) from None
        return Pack([Const(k) for k in keys], is_list=f is not builtins.tuple)

    def parameter(self, value: Any) -> bool:
        """Whether ``value`` is a parameter, in code compiled before the arguments are seen
        (a dict argument's code is then compiled at the call)."""
        host = self.host
        return host.treeless and isinstance(value, Var) and value.name in host.param_names

    def unknown(self, value: Any, node: ast.AST) -> bool:
        """A parameter read as a dict (``p.items()``) in the code compiled before the
        structure of the arguments is known: True for a differentiated one (its code comes
        at the call); one that is not differentiated is refused here."""
        host = self.host
        if not (host.treeless and isinstance(value, Var) and
                value.name in host.param_names):
            return False
        if host.source_names.get(value.name) in host.wrt_users:
            return True
        raise dict_argument(host.error(f"srcgrad compiles {ast.unparse(node)} of a dict "
                                       "argument when it sees the dict: at the call (a dict "
                                       "argument not differentiated)", node))

    # ----------------------------------------------------------------------- writing
    def writable(self, base: Tree, node: ast.AST) -> None:
        host = self.host
        if not isinstance(base, Local):
            raise host.error("srcgrad cannot compile changing a dict argument (it would change "
                             "the caller's dict); build a new dict: q = dict(p); q[k] = v",
                             node)

    def store(self, target: ast.expr, value: Any) -> bool:
        """``d[k] = v``: the dict (and every name bound to it) holds ``v`` at ``k`` (False:
        ``target`` is no item of a dict or of a list a dict holds)."""
        host = self.host
        base = host.statics.peek(target.value) if isinstance(target, ast.Subscript) else None
        if isinstance(base, Pack) and base.is_list and isinstance(target.value, ast.Subscript):
            key, n = host.expr(target.slice), len(base.items)     # d['xs'][1] = v
            if not (isinstance(key, Const) and type(key.value) is int and -n <= key.value < n):
                raise host.error("srcgrad compiles assigning to an item of a list held by a "
                                 "dict with a constant index in range", target.slice)
            base.items[key.value] = host.materialize(value, "item")
            return True
        if not (isinstance(base, Tree) and base.kind == "dict"):
            return False
        self.writable(base, target)
        base.children[self.key(target.slice)] = self.item(value, target)
        return True

    def aug_assign(self, s: ast.AugAssign) -> bool:
        """``d[k] += v``: the item's array changed in place (which nothing else may see),
        or a float rebound (False: the target is not an item of a dict built here)."""
        host = self.host
        target = s.target
        base = host.statics.peek(target.value) if isinstance(target, ast.Subscript) else None
        if not (isinstance(base, Local) and base.kind == "dict"):
            return False
        key = self.key(target.slice)
        item = base.children.get(key)
        if key not in base.children:
            raise host.error(f"the key {key!r} is not in this dict here (Python raises "
                             "KeyError)", target.slice)
        if isinstance(item, (Pack, Tree)) or isinstance(item, Const) and not isinstance(
                item.value, (int, float)):
            raise host.error("srcgrad compiles an in-place operator on a dict's item that is "
                             "an array or a number", target)
        if isinstance(item, Var):
            mine = host.aliases.roots(item.name)
            others = [n for n, _ in host.aliases.sharers(item)
                      if not holds(host.scope.get(n), base)]
            others += [f"another key of {ast.unparse(target.value)}" for k, v in base.leaves()
                       if k != (key,) and host.aliases.roots(v.name) & mine]
            if others or mine & host.param_names:
                shown = others[0] if others else "an argument"
                raise host.error(f"an in-place operator on this dict's item changes the array "
                                 f"that {shown} also names; srcgrad does not follow that "
                                 "change: write d[k] = d[k] + …", target)
        load = copy.deepcopy(target)
        for n in ast.walk(load):
            if hasattr(n, "ctx"):
                n.ctx = ast.Load()
        value = host.operators.binop(s.op, load, s.value, s)
        if isinstance(item, Var):
            for root in host.aliases.roots(item.name) | {item.name}:
                host.consume(Var(root), host.line, "an array")
        base.children[key] = value
        return True

    def local_value(self, value: Any, node: ast.AST) -> None:
        """Refuse a lambda or a dict the function built used as one run-time value."""
        host = self.host
        refuse_value(host, value, node)             # an object made in the function
        if isinstance(value, Closure):
            raise host.error("a lambda is compiled only where it is called (not passed, "
                             "stored or carried into a loop or branch)", node)
        if isinstance(value, Local) and value.kind == "dict":
            raise host.error("a dict built in the function is used here as one value "
                             "(returned, passed on, or changed in a loop or branch that srcgrad "
                             "does not unroll); srcgrad compiles dicts read and written by "
                             "keys known when compiling, in helpers it lowers in place and in "
                             "loops of known length", node)
