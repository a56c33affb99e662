"""The first stage of every build: a user's function parsed and lowered to the IR, with the
names a generated module keeps for itself out of the user's way."""

from __future__ import annotations

import builtins
import sys
from typing import Any

from srcgrad.codegen import reserved_names
from srcgrad.frontend.lower import lower
from srcgrad.frontend.parse import Env, parse_function
from srcgrad.ir import Function
from srcgrad.runtime import rules as _rules
from srcgrad.runtime.rules.primitives import PRIMITIVES

__all__ = ["RESERVED", "lower_function"]

RESERVED = frozenset(
    reserved_names() | {"check_scalar", "dispatch", "quiet"} | set(dir(builtins))
    | {p.fn.__name__ for p in PRIMITIVES.values()}
    | {name for name in dir(_rules) if not name.startswith("__")}
    | {name for module in list(sys.modules.values())          # every @helper a rule
       if (getattr(module, "__name__", "") or "").startswith("srcgrad.runtime.rules.")
       for name, value in vars(module).items() if hasattr(value, "helper_source")})
"""Every name a generated module binds or reads for itself (its array modules, helpers,
builtins, kernels' helpers, the shape guard's ``dispatch``, a Hessian loop's ``quiet``): a
user's variable or global of one of these names is given another name in the generated code,
so it can never shadow them."""


def lower_function(fun: Any, trees: dict[int, Any] | None = None,
                   wrt: tuple[int, ...] | None = None) -> Function:
    """Parse and lower ``fun`` (raises CompileError for what the compiler cannot)."""
    src = parse_function(fun)
    return lower(src, Env(fun), set(RESERVED), trees, wrt)
