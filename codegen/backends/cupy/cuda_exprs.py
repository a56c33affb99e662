"""Region expressions written in CUDA C, for the CuPy kernel emitter
(:mod:`srcgrad.codegen.backends.cupy.kernels`).

An expression is written with NumPy's meaning: each ufunc's operands are cast to the type
NumPy computes it in (so an ``int64 / int64`` divides as doubles), a literal is written in
its operation's type (``2`` is ``2.0`` beside a double), ``np.maximum`` and ``np.minimum``
propagate NaN as NumPy's do (C's ``fmax`` drops it), ``np.sign`` of NaN is NaN, and a bool
``+`` is ``||``.  Functions NumPy has and C spells alike (``exp``, ``log1p``, ``pow``,
``atan2`` ...) come from CUDA's math library, within its documented ulps of NumPy's.

:class:`CWriter` writes expressions over one kernel's C names and collects what the kernel's
preamble must define (the ``np_maximum`` helpers, the include for ``CUDART_INF``).
"""

from __future__ import annotations

import ast
import math

import numpy as np

from srcgrad.codegen.backends.fusion.regions import Apply, Expr, Lit, Ref, Unsupported
from srcgrad.runtime.rules.operators import OPERATORS, POWERS, operation, operations

__all__ = ["CTYPES", "Unsupported", "supports", "CWriter", "c_literal", "reserved"]

CTYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float",
          np.dtype(np.bool_): "bool", np.dtype(np.int64): "long long",
          np.dtype(np.int32): "int"}
"""The dtypes a kernel holds, with their C types (CuPy's own mapping)."""


_KEYWORDS = """alignas alignof and asm auto bool break case catch char char16_t char32_t class
    compl const constexpr const_cast continue decltype default delete do double dynamic_cast
    else enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not nullptr operator or private protected public register
    reinterpret_cast return short signed sizeof static static_assert static_cast struct switch
    template this thread_local throw true try typedef typeid typename union unsigned using
    virtual void volatile wchar_t while xor NULL i a b threadIdx blockIdx blockDim gridDim
    warpSize min max abs isnan isinf isfinite signbit pow ptrdiff_t size_t CIndexer CArray
    IndexT REDUCE POST_MAP np_maximum np_minimum np_sign np_square INFINITY NAN HUGE_VAL CUDART_INF
    CUDART_NAN CUDART_INF_F CUDART_NAN_F"""
_RESERVED = frozenset(_KEYWORDS.split()) | frozenset(
    p.cuda[1] for p in operations().values() if p.cuda is not None and p.cuda[0] == "call")
"""Names a kernel's variables may not take: C++'s keywords, the names CuPy's kernel templates
use (the loop index ``i``, the reduction's ``a`` and ``b``), and the functions kernels call."""

_PREC_ATOM, _PREC_UNARY, _PREC_MUL, _PREC_ADD, _PREC_REL, _PREC_EQ = 0, 2, 3, 4, 6, 7
_PREC_AND, _PREC_OR, _PREC_COND = 11, 12, 13
_BINARY_PREC = {"*": _PREC_MUL, "/": _PREC_MUL, "+": _PREC_ADD, "-": _PREC_ADD,
                ">": _PREC_REL, ">=": _PREC_REL, "<": _PREC_REL, "<=": _PREC_REL,
                "==": _PREC_EQ, "!=": _PREC_EQ, "&&": _PREC_AND, "||": _PREC_OR}


def supports(func: object, dtype: np.dtype | None = None) -> bool:
    """Whether a kernel can apply ``func`` (a ufunc or ``np.where``), and hold its result of
    ``dtype`` where that is given."""
    if dtype is not None and np.dtype(dtype) not in CTYPES:
        return False
    prim = operation(func)
    return prim is not None and prim.cuda is not None


def reserved(name: str) -> bool:
    """Whether ``name`` cannot be a kernel variable as it is: a reserved word, a name of
    CuPy's internals (they start with ``_``), or not plain ASCII."""
    return name in _RESERVED or name.startswith("_") or not name.isascii()


def c_literal(value: float | int | bool, ctype: str) -> str:
    """``value`` written as a C constant of ``ctype`` (a negative one in parentheses);
    infinities and NaN as the ``CUDART_`` constants of ``<cupy/math_constants.h>``."""
    if ctype == "bool":
        return "true" if value else "false"
    if ctype in ("double", "float"):
        v = float(value) if ctype == "double" else float(np.float32(value))
        suffix = "" if ctype == "double" else "_F"
        if math.isnan(v):
            return "CUDART_NAN" + suffix
        if math.isinf(v):
            text = "CUDART_INF" + suffix
        else:
            text = repr(abs(v)) + ("" if ctype == "double" else "f")
        return f"(-{text})" if math.copysign(1.0, v) < 0 else text
    if float(value) != int(value):
        raise Unsupported(f"the literal {value!r} in an integer operation")
    v = int(value)
    text = str(abs(v)) + ("LL" if ctype == "long long" and abs(v) >= 2 ** 31 else "")
    return f"(-{text})" if v < 0 else text


class CWriter:
    """Writes expressions over ``names``: each region name in scope, by its C name and
    dtype.  ``helpers`` and ``constants`` collect what the preamble must then define."""

    def __init__(self, names: dict[str, tuple[str, np.dtype]]):
        self.names = names
        self.helpers: dict[tuple[object, str], None] = {}   # (ufunc, C type), in order
        self.constants = False                              # uses a CUDART_ constant

    def expr(self, e: Expr, ctype: str | None = None) -> str:
        """``e`` in C, cast to ``ctype`` where given and its own type differs."""
        return self._wrap(self._write(e, ctype), ctype)[0]

    def preamble(self) -> str:
        """The preamble these expressions need: includes, then helper functions."""
        lines = ["#include <cupy/math_constants.h>"] if self.constants else []
        noted = set()
        for func, ctype in self.helpers:
            _, template, note, *_ = operation(func).cuda
            if note not in noted:
                lines.append(f"// {note}")
                noted.add(note)
            text = template.format(t=ctype, one=c_literal(1, ctype), zero=c_literal(0, ctype))
            lines.append(f"__device__ {text}")
        return "\n".join(lines)

    def dtype(self, e: Expr) -> np.dtype | None:
        """``e``'s dtype; None for a literal, which takes its operation's type."""
        if isinstance(e, Ref):
            return self._ref(e.name)[1]
        return None if isinstance(e, Lit) else np.dtype(e.dtype)

    # writing

    def _ref(self, name: str) -> tuple[str, np.dtype]:
        if name not in self.names:
            raise ValueError(f"the region reads {name!r}, which it never defines")
        return self.names[name]

    def _write(self, e: Expr, ctype: str | None) -> tuple[str, int, str | None]:
        """``(text, precedence, C type)``: a literal is written in ``ctype``."""
        if isinstance(e, Ref):
            cname, dtype = self._ref(e.name)
            return cname, _PREC_ATOM, _ctype(dtype)
        if isinstance(e, Lit):
            text = c_literal(e.value, ctype or _literal_ctype(e.value))
            self.constants |= "CUDART" in text
            return text, _PREC_ATOM, ctype or _literal_ctype(e.value)
        if isinstance(e, Apply):
            return self._apply(e)
        raise TypeError(f"not an expression of a region: {e!r}")

    def _wrap(self, written: tuple[str, int, str | None], ctype: str | None,
              prec: int = _PREC_COND) -> tuple[str, int]:
        """The written text cast to ``ctype`` and parenthesised to bind at ``prec``."""
        text, own, have = written
        if ctype is not None and have != ctype:
            text = f"({ctype})" + (text if own <= _PREC_UNARY else f"({text})")
            own = _PREC_UNARY
        return (text if own <= prec else f"({text})"), min(own, prec)

    def _operand(self, e: Expr, ctype: str | None, prec: int) -> str:
        return self._wrap(self._write(e, ctype), ctype, prec)[0]

    def _apply(self, e: Apply) -> tuple[str, int, str]:
        f, args, out = e.func, e.args, _ctype(np.dtype(e.dtype))
        name = getattr(f, "__name__", repr(f))
        prim = operation(f)
        if prim is None or prim.cuda is None:
            raise Unsupported(f"{name} giving {e.dtype}" if out not in ("double", "float")
                              else f"CuPy kernels cannot write {name!r}")
        how = prim.cuda
        if how[0] == "ternary":
            cond = self._operand(args[0], "bool", _PREC_OR)
            yes, no = (self._operand(a, out, _PREC_OR) for a in args[1:])
            return f"{cond} ? {yes} : {no}", _PREC_COND, out
        if out == "bool" and prim.cuda_bool is not None:
            return self._binary(prim.cuda_bool, args, "bool", "bool")
        if how[0] == "logical" or how[0] == "bits" and (len(args) == 2 or out == "bool"):
            if how[0] == "bits" and any(self.dtype(a) is not None and self.dtype(a).kind != "b"
                                        for a in args):
                raise Unsupported(f"{name} of integers")        # bitwise: of bools only
            if len(args) == 1:
                return how[1] + self._operand(args[0], "bool", _PREC_UNARY), _PREC_UNARY, "bool"
            return self._binary(how[1], args, "bool", "bool")
        if how[0] == "compare":
            return self._binary(how[1], args, self._common(args), "bool")
        if how[0] == "predicate":
            arg = self.dtype(args[0])
            ctype = _ctype(arg) if arg is not None and arg.kind == "f" else "double"
            return f"{how[1]}({self.expr(args[0], ctype)})", _PREC_ATOM, "bool"
        if out not in ("double", "float") and not (how[0] in ("infix", "unary")
                                                   and prim.int_closed):
            raise Unsupported(f"{name} giving {e.dtype}")
        if how[0] == "infix":
            return self._binary(how[1], args, out, out)
        if how[0] == "unary":
            return how[1] + self._operand(args[0], out, _PREC_UNARY), _PREC_UNARY, out
        if prim.operator is ast.Pow and isinstance(args[1], Lit) \
                and type(args[1].value) in (int, float) and float(args[1].value).is_integer() \
                and args[1].value in POWERS:        # NumPy's x ** 2 is x * x
            prim, args = POWERS[args[1].value], args[:1]
            f, how = prim.fn, prim.cuda
        if how[0] == "helper" and len(how) > 3 and isinstance(args[0], Ref) \
                and self.dtype(args[0]) == e.dtype:
            return how[3].format(a=self.expr(args[0])), _PREC_MUL, out
        if how[0] == "quotient":                    # np.reciprocal: 1 / x
            return self._binary(OPERATORS[ast.Div].cuda[1], (Lit(prim.numerator), args[0]),
                                out, out)
        if how[0] == "helper":
            self.helpers[(f, out)] = None
            return f"np_{f.__name__}({', '.join(self.expr(a, out) for a in args)})", \
                _PREC_ATOM, out
        if how[0] == "call":
            return f"{how[1]}({', '.join(self.expr(a, out) for a in args)})", _PREC_ATOM, out
        raise Unsupported(f"CuPy kernels cannot write {name!r}")

    def _binary(self, op: str, args: tuple[Expr, ...], ctype: str | None,
                out: str) -> tuple[str, int, str]:
        prec = _BINARY_PREC[op]
        left = self._operand(args[0], ctype, prec)
        right = self._operand(args[1], ctype, prec - 1)      # left-associative
        return f"{left} {op} {right}", prec, out

    def _common(self, args: tuple[Expr, ...]) -> str:
        """The C type NumPy compares ``args`` in: their common dtype (literals are weak)."""
        dtypes = [d for d in (self.dtype(a) for a in args) if d is not None]
        if not dtypes:
            return _literal_ctype(*(a.value for a in args))
        common = np.result_type(*dtypes, *(a.value for a in args if isinstance(a, Lit)))
        return _ctype(common)


def _ctype(dtype: np.dtype) -> str:
    try:
        return CTYPES[np.dtype(dtype)]
    except KeyError:
        raise Unsupported(f"CuPy kernels hold no {np.dtype(dtype)} values") from None


def _literal_ctype(*values: float | int | bool) -> str:
    if any(isinstance(v, float) for v in values):
        return "double"
    return "bool" if all(isinstance(v, bool) for v in values) else "long long"
