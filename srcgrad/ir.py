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
"""

from __future__ import annotations

import ast
import keyword
import unicodedata
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Var", "Const", "Stmt", "Function", "Operand", "fresh_name"]


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
        return fresh_name(base, self.used)


def fresh_name(base: str, used: set[str]) -> str:
    """``base`` made a valid identifier and unique in ``used`` (``x``, ``x_1``, …); recorded."""
    base = unicodedata.normalize("NFKC", str(base))     # as Python reads identifiers
    base = "".join(c if ("a" + c).isidentifier() else "_" for c in base).strip("_") or "t"
    if not base.isidentifier() or keyword.iskeyword(base):
        base = "v_" + base
    name, k = base, 0
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name
