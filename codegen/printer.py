"""Generated code's text, printed from its AST with Python's precedence.

``ast.unparse`` prints a constant by its ``repr``, which is not always an operand Python reads
back as the same value in every position: ``Constant(-0.7)`` under ``**`` prints ``-0.7 ** 2``
(which is ``-(0.7 ** 2)``), a complex constant with a negative-zero real part prints as
``(-0+1j)`` (whose real part is ``+0.0``).  The compiler's
passes keep such constants as plain ``ast.Constant`` nodes; :func:`unparse` rewrites them
into expressions that mean exactly their value (``(-0.7) ** 2``, ``complex(-0.0, 1.0)``,
``-1e309``) just before printing, so every text the compiler writes goes through one
printer that cannot lose a sign.
"""

from __future__ import annotations

import ast
import copy
import math

__all__ = ["unparse", "literal_node"]


def unparse(node: ast.AST) -> str:
    """The source text of ``node`` (left unchanged), every constant written so that Python
    reads back its exact value wherever it stands."""
    return ast.unparse(_Constants().visit(copy.deepcopy(node)))


def literal_node(value: object) -> ast.expr:
    """An expression for the number ``value`` (a Python int, float, complex or bool, or
    anything else ``ast.Constant`` takes) that evaluates to exactly that value and type,
    whatever operator it is an operand of."""
    if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
        return ast.Constant(value)
    if isinstance(value, complex):
        if _plain_imaginary(value):
            return ast.Constant(value)                          # 2j
        return ast.Call(ast.Name("complex", ast.Load()),
                        [literal_node(value.real), literal_node(value.imag)], [])
    if isinstance(value, float) and math.isnan(value):
        return ast.Constant(value)                              # (1e309 - 1e309)
    if value < 0 or isinstance(value, float) and math.copysign(1.0, value) < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))    # -0.7, -0.0, -2
    return ast.Constant(value)


def _plain_imaginary(value: complex) -> bool:
    """Whether ``repr`` of ``value`` is a literal like ``2j`` (real part +0.0, imaginary part
    finite and not negative)."""
    return (value.real == 0.0 and math.copysign(1.0, value.real) > 0
            and math.isfinite(value.imag) and math.copysign(1.0, value.imag) > 0)


class _Constants(ast.NodeTransformer):
    """Numeric constants rewritten by :func:`literal_node` (a ``-x`` already written as a
    unary minus of a positive constant is left as it is)."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.copy_location(literal_node(node.value), node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return node                                             # its parts are text
