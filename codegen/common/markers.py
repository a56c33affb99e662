"""Comment markers: statements of generated code that the module prints as ``# text`` lines."""

from __future__ import annotations

import ast

__all__ = ["COMMENT", "comment", "is_comment"]

COMMENT = "__srcgrad_comment__"        # marker calls, printed as ``# ...`` lines


def is_comment(st: ast.stmt) -> bool:
    """Whether ``st`` is a comment marker of the generated code."""
    return (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Name) and st.value.func.id == COMMENT)


def comment(text: str) -> ast.stmt:
    """A marker statement the module prints as the line ``# text``."""
    return ast.Expr(ast.Call(ast.Name(COMMENT, ast.Load()), [ast.Constant(text)], []))
