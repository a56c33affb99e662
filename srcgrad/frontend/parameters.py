"""The parameters of the function lowered, bound to SSA names: plain names, and a pytree
argument (a list, tuple or dict whose structure is known) as a tree of its leaves.

A block of the function (a branch or a loop body) is lowered as a function of its own; the
control flow that lowers it hands it what its parameters are beyond their names: lists built at
run time, values known to carry no gradient (a loop's integer counter), pytrees it reads
(rebuilt from their leaves, passed one by one) and the closures it calls.
"""

from __future__ import annotations

import ast
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.callbacks import CallableArgument, bind_function
from srcgrad.frontend.objects import ArgumentObjects, ObjectShape
from srcgrad.frontend.parse import Source
from srcgrad.frontend.structural import NONE
from srcgrad.ir import Closure, Const, Tree, Var

__all__ = ["Parameters"]


class Trees(Protocol):
    """Pytree arguments split into their leaves (the lowerer's ``subscripts``)."""

    def tree(self, root: Var, structure: Any, user: str, path: tuple) -> Tree: ...


class Host(Protocol):
    """What the binding of parameters reads of, and sets on, the lowerer that holds it."""

    src: Source
    scope: dict[str, Any]
    source_names: dict[str, str]       # SSA name -> the user's name
    static: set[str]                   # SSA names of values with no gradient
    runtime_lists: set[str]            # SSA names of Python lists built at run time
    trees: dict[int, Any]              # the structures of pytree arguments, by position
    leaves: dict[str, Any]             # parameter SSA name -> its Tree
    param_names: set[str]
    line: int
    text: str
    subscripts: Trees
    objects: ArgumentObjects           # objects passed as arguments

    def fresh(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Parameters:
    """The binding of the function's parameters; the lowerer's ``parameters``, which a
    block's lowerer is handed its parameters' kinds through."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.lists: set[str] = set()          # parameters (user names) that are such lists
        self.static: set[str] = set()         # parameters known to carry no gradient
        self.rebuild: dict[str, tuple] = {}   # a pytree read by a block: its leaves' params
        self.closures: dict[str, Closure] = {}    # closures the block calls

    def bind(self) -> tuple[list[str], dict[str, ast.expr]]:
        """Bind the parameters in scope: their SSA names in order, and the default values
        written for them (by the user's name)."""
        host = self.host
        node = host.src.node
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise host.error("srcgrad compiles functions with plain positional parameters "
                             "(no *args, **kwargs or keyword-only parameters)", node)
        params = []
        for a in args.args:
            name = host.fresh(a.arg)
            host.scope[a.arg] = Var(name)
            host.source_names[name] = a.arg
            params.append(name)
            if a.arg in self.static:                   # a loop's integer counter
                host.static.add(name)
            if a.arg in self.lists:
                host.runtime_lists.add(name)
        host.param_names = set(params)
        host.scope.update(self.closures)                 # closures a block calls
        for user, (tree, leaves) in self.rebuild.items():   # from the leaves passed in
            host.scope[user] = tree.with_leaves({path: host.scope[arg] for path, arg in leaves})
        for position, structure in host.trees.items():
            user = args.args[position].arg
            if isinstance(structure, ObjectShape):     # an object: its class is known
                host.objects.bind(params[position], user, structure)
                continue
            if isinstance(structure, CallableArgument):   # a function passed (a default)
                bind_function(host, user, params[position], structure.fn)
                continue
            if structure is NONE:                      # None, where a dict may be passed
                host.scope[user] = Const(None)
                continue
            kind = getattr(structure[0], "__name__", structure[0])
            host.line, host.text = node.lineno, f"{user} (a {kind})"
            tree = host.subscripts.tree(Var(params[position]), structure, user, ())
            host.objects.note_meta(tree, structure)        # a dataclass's meta fields
            tree.root = Var(params[position])
            host.scope[user] = host.leaves[params[position]] = tree
        defaults = {}
        for a, d in zip(args.args[len(args.args) - len(args.defaults):], args.defaults):
            defaults[a.arg] = d
        return params, defaults
