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
from typing import Any

from srcgrad.frontend.dict_values import Local, holds, ordered_keys
from srcgrad.ir import Closure, Const, Pack, Tree, Var

__all__ = ["Dicts", "key_value"]

_KEY_NODES = (ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.Add, ast.Mult, ast.Mod, ast.Sub,
              ast.JoinedStr, ast.FormattedValue, ast.Call, ast.Tuple, ast.UnaryOp, ast.USub)
_KEY_BUILTINS = {"str": str, "int": int, "repr": repr, "format": format}
_KEY_TYPES = (str, int, float, bool)


def key_value(value: Any) -> bool:
    """Whether a lowered value is a key known when compiling."""
    return isinstance(value, Const) and isinstance(value.value, _KEY_TYPES + (tuple,)) and \
        _hashable(value.value)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class Dicts:
    """The lowering of dicts built by the function (mixed into the Lowerer)."""

    # ------------------------------------------------------------------------ building
    def expr_Dict(self, node: ast.Dict) -> Local:
        out = Local("dict", {})
        for k, v in zip(node.keys, node.values):
            if k is None:                                  # {**other}
                other = self.expr(v)
                if not (isinstance(other, Tree) and other.kind == "dict"):
                    raise self.error("srcgrad compiles {**d} of a dict whose keys are known "
                                     "when compiling", v)
                out.children.update(other.children)
                continue
            key = self.dict_key(k)
            out.children[key] = self.dict_item(self.expr(v), v)
        return out

    def expr_DictComp(self, node: ast.DictComp) -> Local:
        return self.comprehension(node)

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Any:
        """An f-string: text (no gradient), a constant when its parts are known."""
        value = self.known_key(node)
        return Const(value) if value is not None else self.static_expr(node, hint="text")

    def dict_item(self, value: Any, node: ast.AST) -> Any:
        """A value as a dict holds it (a lambda is refused)."""
        if isinstance(value, Closure) or isinstance(value, Pack) and any(
                isinstance(v, Closure) for v in value.items):
            raise self.error("a lambda stored in a dict is not compiled (call it where it is "
                             "defined)", node)
        return value

    def dict_key(self, node: ast.expr) -> Any:
        """A key known when compiling, or a CompileError that says why it is not."""
        value = self.known_key(node)
        if value is None:
            written = ast.unparse(node)
            raise self.error(
                f"the dict key {written} is computed when the code runs; srcgrad compiles a "
                "dict whose keys are known when compiling: literals, or keys built from "
                "constants and the index of a loop it unrolls (params['W' + str(i)] in "
                "`for i in range(3)`, a range of known length)", node)
        return value

    def known_key(self, node: ast.expr) -> Any:
        """The value of a key expression made of constants, names bound to constants and
        ``str``/``int``/f-strings of them (None when it is not known)."""
        names: dict[str, Any] = {}
        known = getattr(self, "known", {})
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                value = self.scope.get(n.id)
                if isinstance(value, Var) and value.name in known:
                    names[n.id] = known[value.name]
                elif key_value(value):
                    names[n.id] = value.value
                elif value is None and n.id in _KEY_BUILTINS and \
                        getattr(self.env, "resolve", lambda _: None)(n.id) is getattr(
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
                self.__dict__.setdefault("known", {})[target] = value

    # ----------------------------------------------------------------------- reading
    def dict_read(self, base: Tree, node: ast.Subscript) -> Any:
        """``d[k]`` of a dict with keys known when compiling."""
        key = self.dict_key(node.slice)
        if key not in base.children:
            raise self.error(f"the key {key!r} is not in this dict when the code reaches "
                             f"here (Python raises KeyError); its keys are "
                             f"{list(base.children)}", node.slice)
        return base.children[key]

    def dict_call(self, node: ast.Call) -> Local:
        """``dict(a=x)``, ``dict(d)``, ``dict([('a', x)])``, ``dict(zip(keys, values))``."""
        out = Local("dict", {})
        if len(node.args) > 1:
            raise self.error("dict() takes at most one positional argument", node)
        if node.args:
            arg = node.args[0]
            value = self.expr(arg)
            if isinstance(value, Tree) and value.kind == "dict":
                out.children.update(value.children)
            elif isinstance(value, Pack) and all(isinstance(p, Pack) and len(p.items) == 2
                                                 for p in value.items):
                for pair in value.items:
                    k = pair.items[0]
                    if not key_value(k):
                        raise self.error("dict() of pairs whose keys are known when "
                                         "compiling is compiled", arg)
                    out.children[k.value] = self.dict_item(pair.items[1], arg)
            elif self.is_static(value):
                return self.static_expr(node, hint="table")
            else:
                raise self.error("srcgrad compiles dict() of keywords, of a dict, or of a "
                                 "list of (key, value) pairs known when compiling", arg)
        for k in node.keywords:
            out.children[k.arg] = self.dict_item(self.expr(k.value), k.value)
        return out

    def dict_method(self, base: Tree, node: ast.Call) -> Any:
        """``d.get``, ``d.keys()``, ``d.values()``, ``d.items()``, ``d.copy()``,
        ``d.update(...)``, ``d.pop(k)``, ``d.setdefault(k, v)``."""
        name, args = node.func.attr, node.args
        owner = ast.unparse(node.func.value)
        if node.keywords and name != "update" or base.kind != "dict":
            raise self.error(f"srcgrad cannot compile {owner}.{name}() here", node)
        if name in ("keys", "values", "items", "copy") and not args:
            if name == "copy":
                return Local("dict", dict(base.children))
            keys = ordered_keys(base)
            items = [Const(k) for k in keys] if name == "keys" else \
                [base.children[k] for k in keys] if name == "values" else \
                [Pack([Const(k), base.children[k]]) for k in keys]
            return Pack(items, is_list=True)
        if name in ("get", "pop", "setdefault") and 1 <= len(args) <= 2:
            key = self.dict_key(args[0])
            default = self.dict_item(self.expr(args[1]), args[1]) if len(args) == 2 \
                else Const(None)
            if name == "pop" and key not in base.children and len(args) == 1:
                raise self.error(f"the key {key!r} is not in this dict here (Python raises "
                                 "KeyError)", args[0])
            if name != "get":
                self.dict_writable(base, node)
            if name == "pop":
                return base.children.pop(key, default)
            if name == "setdefault":
                return base.children.setdefault(key, default)
            return base.children.get(key, default)
        if name == "update" and len(args) <= 1:
            self.dict_writable(base, node)
            new = self.dict_call(node)
            if not isinstance(new, Local):
                raise self.error("srcgrad compiles d.update() of a dict or of keywords", node)
            base.children.update(new.children)
            return Const(None)
        raise self.error(f"srcgrad cannot compile {owner}.{name}() on a dict here (it "
                         "compiles get, keys, values, items, copy, update, pop and "
                         "setdefault)", node)

    def dict_whole(self, f: Any, node: ast.Call) -> Any:
        """``len(d)``, ``list(d)``, ``tuple(d)``, ``sorted(d)`` of a dict whose keys are
        known (None: ``f`` is another call, or its argument no such dict)."""
        if f not in (builtins.len, builtins.list, builtins.tuple, builtins.sorted) or \
                len(node.args) != 1 or node.keywords:
            return None
        base = self._peek(node.args[0])
        if not (isinstance(base, Tree) and base.kind == "dict"):
            return None
        keys = ordered_keys(base)
        if f is builtins.len:
            return Const(len(keys))
        if f is builtins.sorted:
            try:
                keys = sorted(keys)
            except TypeError:
                raise self.error("sorted() of keys that do not compare", node) from None
        return Pack([Const(k) for k in keys], is_list=f is not builtins.tuple)

    def unknown_dict(self, value: Any, node: ast.AST) -> bool:
        """A parameter read as a dict (``p.items()``) in the code compiled before the
        structure of the arguments is known: True for a differentiated one (its code comes
        at the call); one that is not differentiated is refused here."""
        if not (getattr(self, "treeless", False) and isinstance(value, Var) and
                value.name in self.param_names):
            return False
        if self.source_names.get(value.name) in self.wrt_users:
            return True
        raise self.error("srcgrad compiles the keys, values and items of a dict argument "
                         "that is differentiated (in wrt); this one is not (add it to wrt, "
                         "or pass the arrays it holds as arguments)", node)

    # ----------------------------------------------------------------------- writing
    def dict_writable(self, base: Tree, node: ast.AST) -> None:
        if not isinstance(base, Local):
            raise self.error("srcgrad cannot compile changing a dict argument (it would change "
                             "the caller's dict); build a new dict: q = dict(p); q[k] = v",
                             node)

    def dict_store(self, target: ast.expr, value: Any) -> bool:
        """``d[k] = v``: the dict (and every name bound to it) holds ``v`` at ``k`` (False:
        ``target`` is no item of a dict or of a list a dict holds)."""
        base = self._peek(target.value) if isinstance(target, ast.Subscript) else None
        if isinstance(base, Pack) and base.is_list and isinstance(target.value, ast.Subscript):
            key, n = self.expr(target.slice), len(base.items)     # d['xs'][1] = v
            if not (isinstance(key, Const) and type(key.value) is int and -n <= key.value < n):
                raise self.error("srcgrad compiles assigning to an item of a list held by a "
                                 "dict with a constant index in range", target.slice)
            base.items[key.value] = self.materialize(value, "item")
            return True
        if not (isinstance(base, Tree) and base.kind == "dict"):
            return False
        self.dict_writable(base, target)
        base.children[self.dict_key(target.slice)] = self.dict_item(value, target)
        return True

    def dict_aug_assign(self, s: ast.AugAssign) -> bool:
        """``d[k] += v``: the item's array changed in place (which nothing else may see),
        or a float rebound (False: the target is not an item of a dict built here)."""
        target = s.target
        base = self._peek(target.value) if isinstance(target, ast.Subscript) else None
        if not (isinstance(base, Local) and base.kind == "dict"):
            return False
        key = self.dict_key(target.slice)
        item = base.children.get(key)
        if key not in base.children:
            raise self.error(f"the key {key!r} is not in this dict here (Python raises "
                             "KeyError)", target.slice)
        if isinstance(item, (Pack, Tree)) or isinstance(item, Const) and not isinstance(
                item.value, (int, float)):
            raise self.error("srcgrad compiles an in-place operator on a dict's item that is "
                             "an array or a number", target)
        if isinstance(item, Var):
            mine = self.aliases.roots(item.name)
            others = [n for n, _ in self.aliases.sharers(item)
                      if not holds(self.scope.get(n), base)]
            others += [f"another key of {ast.unparse(target.value)}" for k, v in base.leaves()
                       if k != (key,) and self.aliases.roots(v.name) & mine]
            if others or mine & self.param_names:
                shown = others[0] if others else "an argument"
                raise self.error(f"an in-place operator on this dict's item changes the array "
                                 f"that {shown} also names; srcgrad does not follow that "
                                 "change: write d[k] = d[k] + …", target)
        load = copy.deepcopy(target)
        for n in ast.walk(load):
            if hasattr(n, "ctx"):
                n.ctx = ast.Load()
        value = self.binop(s.op, load, s.value, s)
        if isinstance(item, Var):
            for root in self.aliases.roots(item.name) | {item.name}:
                self.consume(Var(root), self.line, "an array")
        base.children[key] = value
        return True

    def local_value(self, value: Any, node: ast.AST) -> None:
        """Refuse a lambda or a dict the function built used as one run-time value."""
        if isinstance(value, Closure):
            raise self.error("a lambda is compiled only where it is called (not passed, "
                             "stored or carried into a loop or branch)", node)
        if isinstance(value, Local) and value.kind == "dict":
            raise self.error("a dict built in the function is used here as one value "
                             "(returned, passed on, or changed in a loop or branch that srcgrad "
                             "does not unroll); srcgrad compiles dicts read and written by "
                             "keys known when compiling, in helpers it lowers in place and in "
                             "loops of known length", node)
