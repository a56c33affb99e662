"""An interpreter of the CUDA C subset srcgrad's CuPy kernels are written in, over NumPy
arrays (each array holds one variable's value at every element of a kernel's domain).

The subset: ``__device__`` functions (a preamble may also ``#include
<cupy/math_constants.h>`` for ``CUDART_INF``/``CUDART_NAN``), declarations with an
initialiser, assignments (``=``, ``+=`` ...), ``return``, ``//`` and ``/* */`` comments; in
expressions, literals, names, calls, casts, unary and binary operators and ``?:``.  Types are
C's: ``bool``, ``int``, ``long long``, ``unsigned long long``, ``float``, ``double``, with the
usual arithmetic conversions.  Anything else raises :class:`CError`, as a compiler would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CError", "Scope", "parse_params", "parse_functions", "parse_statements", "run"]


class CError(Exception):
    """Code outside the subset, or that a C compiler would reject (or leave undefined)."""


DTYPES = {"bool": np.bool_, "int": np.int32, "long long": np.int64,
          "unsigned long long": np.uint64, "float": np.float32, "double": np.float64}
_RANK = {"int": 1, "long long": 2, "unsigned long long": 3, "float": 4, "double": 5}
_PARAM_TYPES = {"float64": "double", "float32": "float", "bool": "bool", "int64": "long long",
                "int32": "int"}
_FLOAT_FUNCS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
                "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
                "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
                "atanh": np.arctanh, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1,
                "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
                "sqrt": np.sqrt, "cbrt": np.cbrt, "floor": np.floor, "ceil": np.ceil,
                "trunc": np.trunc, "rint": np.rint, "fabs": np.fabs, "pow": np.power,
                "atan2": np.arctan2, "hypot": np.hypot, "fmod": np.fmod,
                "copysign": np.copysign, "fmax": np.fmax, "fmin": np.fmin}
_PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
               "signbit": np.signbit}
_CONSTANTS = {"CUDART_INF": ("double", np.inf), "CUDART_NAN": ("double", np.nan),
              "CUDART_INF_F": ("float", np.inf), "CUDART_NAN_F": ("float", np.nan)}
_BINARY_BP = {"||": 2, "&&": 3, "|": 4, "^": 5, "&": 6, "==": 7, "!=": 7, "<": 8, ">": 8,
              "<=": 8, ">=": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}
_TOKEN = re.compile(r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)
    |(?P<num>0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFuUlL]*)
    |(?P<name>[A-Za-z_]\w*)
    |(?P<op>&&|\|\||==|!=|<=|>=|\+=|-=|\*=|/=|[-+*/%<>!?:(){},;=&|^~])""", re.X | re.S)


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise CError(f"cannot read {text[pos:pos + 20]!r}")
        if m.lastgroup not in ("ws", "comment"):
            out.append(m.group())
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks, self.pos = _tokens(text), 0

    def peek(self, k: int = 0) -> str | None:
        return self.toks[self.pos + k] if self.pos + k < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise CError(f"expected {expected or 'more'}, found {tok!r}")
        self.pos += 1
        return tok

    def at_type(self, k: int = 0) -> bool:
        return self.peek(k) in ("bool", "int", "long", "unsigned", "float", "double", "const")

    def type(self) -> str:
        words = []
        while self.at_type():
            word = self.take()
            if word != "const":
                words.append(word)
        ctype = " ".join(words)
        if ctype not in DTYPES:
            raise CError(f"unknown type {ctype!r}")
        return ctype

    def expr(self, min_bp: int = 0) -> tuple:
        tok = self.take()
        if tok == "(" and self.at_type():
            ctype = self.type()
            self.take(")")
            left: tuple = ("cast", ctype, self.expr(11))
        elif tok == "(":
            left = self.expr()
            self.take(")")
        elif tok in ("-", "+", "!", "~"):
            left = ("unary", tok, self.expr(11))
        elif re.match(r"[\d.]", tok):
            left = _number(tok)
        elif re.match(r"[A-Za-z_]", tok) and self.peek() == "(":
            self.take("(")
            args = []
            while self.peek() != ")":
                args.append(self.expr())
                if self.peek() != ")":
                    self.take(",")
            self.take(")")
            left = ("call", tok, args)
        elif re.match(r"[A-Za-z_]", tok):
            left = ("name", tok)
        else:
            raise CError(f"unexpected {tok!r}")
        while True:
            op = self.peek()
            if op == "?" and min_bp < 1:
                self.take()
                yes = self.expr()
                self.take(":")
                left = ("cond", left, yes, self.expr(0))
            elif op in _BINARY_BP and _BINARY_BP[op] > min_bp:
                self.take()
                left = ("binary", op, left, self.expr(_BINARY_BP[op]))
            else:
                return left

    def statement(self) -> tuple:
        if self.peek() == "return":
            self.take()
            node: tuple = ("return", self.expr())
        elif self.at_type():
            ctype, name = self.type(), self.take()
            if self.peek() != "=":
                raise CError(f"{name} is declared without a value")
            self.take("=")
            node = ("decl", ctype, name, self.expr())
        else:
            name, op = self.take(), self.take()
            if op not in ("=", "+=", "-=", "*=", "/="):
                raise CError(f"not a statement of the subset: {name} {op} ...")
            node = ("assign", name, op, self.expr())
        self.take(";")
        return node


def _number(tok: str) -> tuple:
    body = tok.rstrip("fFuUlL")
    suffix = tok[len(body):].lower()
    if not body.lower().startswith("0x") and re.search(r"[.eE]", body):
        if suffix not in ("", "f"):
            raise CError(f"bad float literal {tok}")
        ctype = "float" if suffix == "f" else "double"
        return ("num", ctype, DTYPES[ctype](float(body)))
    value = int(body, 0) if not re.fullmatch(r"0\d+", body) else int(body, 8)
    ctype = ("unsigned long long" if "u" in suffix
             else "long long" if "l" in suffix or value >= 2 ** 31 else "int")
    return ("num", ctype, DTYPES[ctype](value))


def parse_params(text: str) -> list[tuple[str, str]]:
    """CuPy's parameter list (``'float64 x, bool mask'``) as ``[(C type, name)]``."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        words = part.split()
        if len(words) != 2 or words[0] not in _PARAM_TYPES:
            raise CError(f"a parameter srcgrad does not write: {part!r}")
        out.append((_PARAM_TYPES[words[0]], words[1]))
    return out


def parse_statements(text: str) -> list[tuple]:
    parser = _Parser(text)
    out = []
    while parser.peek() is not None:
        out.append(parser.statement())
    return out


@dataclass
class _Function:
    ctype: str
    params: list[tuple[str, str]]
    body: list[tuple]


def parse_functions(text: str) -> tuple[dict[str, list[_Function]], bool]:
    """A preamble's ``__device__`` functions by name (overloads listed), and whether it
    includes ``<cupy/math_constants.h>``."""
    constants, kept = False, []
    for line in text.splitlines():
        if line.strip().startswith("#"):
            if line.strip() != "#include <cupy/math_constants.h>":
                raise CError(f"a preprocessor line of no known use: {line.strip()!r}")
            constants = True
        else:
            kept.append(line)
    parser, functions = _Parser("\n".join(kept)), {}
    while parser.peek() is not None:
        parser.take("__device__")
        if parser.peek() == "inline":
            parser.take()
        ctype, name = parser.type(), parser.take()
        parser.take("(")
        params = []
        while parser.peek() != ")":
            params.append((parser.type(), parser.take()))
            if parser.peek() != ")":
                parser.take(",")
        parser.take(")")
        parser.take("{")
        body = []
        while parser.peek() != "}":
            body.append(parser.statement())
        parser.take("}")
        functions.setdefault(name, []).append(_Function(ctype, params, body))
    return functions, constants


@dataclass
class _Var:
    ctype: str
    value: Any
    const: bool


class Scope:
    """The variables of one kernel (or function) body, and the functions it may call."""

    def __init__(self, functions: dict[str, list[_Function]], constants: bool):
        self.functions, self.constants, self.vars = functions, constants, {}

    @staticmethod
    def dtype(ctype: str) -> np.dtype:
        return np.dtype(DTYPES[ctype])

    def param(self, name: str, ctype: str, value: Any, const: bool) -> None:
        """A parameter; ``value`` None: an output not yet written (reading it raises)."""
        self.vars[name] = _Var(ctype, None if value is None else _convert(
            np.asarray(value), _ctype_of(np.asarray(value)), ctype), const)

    def read_output(self, name: str) -> Any:
        return self.vars[name].value

    def declare(self, name: str, ctype: str, value: np.ndarray) -> None:
        if name in self.vars or name in self.functions or name in _FLOAT_FUNCS \
                or name in _PREDICATES or name in _CONSTANTS:
            raise CError(f"{name} is declared again (or names a function)")
        self.vars[name] = _Var(ctype, value, False)


def _ctype_of(value: np.ndarray) -> str:
    for ctype, dtype in DTYPES.items():
        if value.dtype == dtype:
            return ctype
    raise CError(f"no C type for {value.dtype}")


def _convert(value: np.ndarray, have: str, want: str) -> np.ndarray:
    """C's conversion of ``value`` from ``have`` to ``want``."""
    if want == have:
        return value
    if want == "bool":
        return value != 0
    if DTYPES[want] in (np.float32, np.float64) or have in ("bool", "int", "long long",
                                                           "unsigned long long"):
        return value.astype(DTYPES[want])
    if not np.all(np.isfinite(value)):
        raise CError(f"a {have} that is not finite converted to {want} (undefined)")
    return np.trunc(value).astype(DTYPES[want])


def _common(a: str, b: str) -> str:
    a, b = ("int" if t == "bool" else t for t in (a, b))
    return a if _RANK[a] >= _RANK[b] else b


def _eval(node: tuple, scope: Scope) -> tuple[np.ndarray, str]:
    kind = node[0]
    if kind == "num":
        return np.asarray(node[2]), node[1]
    if kind == "name":
        var = scope.vars.get(node[1])
        if var is not None:
            if var.value is None:
                raise CError(f"{node[1]} is read before it is written")
            return var.value, var.ctype
        if node[1] in _CONSTANTS and scope.constants:
            ctype, value = _CONSTANTS[node[1]]
            return np.asarray(value, DTYPES[ctype]), ctype
        if node[1] in ("true", "false"):
            return np.asarray(node[1] == "true"), "bool"
        raise CError(f"unknown name {node[1]!r}")
    if kind == "cast":
        value, ctype = _eval(node[2], scope)
        return _convert(value, ctype, node[1]), node[1]
    if kind == "unary":
        value, ctype = _eval(node[2], scope)
        if node[1] == "!":
            return _convert(value, ctype, "bool") == 0, "bool"
        if node[1] == "~":
            raise CError("~ is not in the subset")
        out = "int" if ctype == "bool" else ctype
        value = _convert(value, ctype, out)
        return (-value if node[1] == "-" else value), out
    if kind == "cond":
        cond, ctype = _eval(node[1], scope)
        (a, ta), (b, tb) = _eval(node[2], scope), _eval(node[3], scope)
        out = ta if ta == tb else _common(ta, tb)
        return np.where(_convert(cond, ctype, "bool"), _convert(a, ta, out),
                        _convert(b, tb, out)), out
    if kind == "binary":
        return _binary(node[1], *_eval(node[2], scope), *_eval(node[3], scope))
    if kind == "call":
        return _call(node[1], [_eval(a, scope) for a in node[2]], scope)
    raise CError(f"not an expression: {node!r}")


def _binary(op: str, a: np.ndarray, ta: str, b: np.ndarray, tb: str) -> tuple[np.ndarray, str]:
    if op in ("&&", "||"):
        a, b = _convert(a, ta, "bool"), _convert(b, tb, "bool")
        return (a & b if op == "&&" else a | b), "bool"
    if op in ("&", "|", "^"):
        raise CError(f"bitwise {op} is not in the subset")
    out = _common(ta, tb)
    a, b = _convert(a, ta, out), _convert(b, tb, out)
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return {"==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater,
                "<=": np.less_equal, ">=": np.greater_equal}[op](a, b), "bool"
    if op in ("/", "%") and out not in ("float", "double"):
        if np.any(b == 0):
            raise CError("an integer division by zero (undefined)")
        q = np.abs(a) // np.abs(b)
        q = np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)  # C truncates toward zero
        return (q if op == "/" else a - q * b), out
    if op == "%":
        raise CError("% of floating values")
    fn = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide}[op]
    return fn(a, b).astype(DTYPES[out]), out


def _call(name: str, args: list[tuple[np.ndarray, str]], scope: Scope
          ) -> tuple[np.ndarray, str]:
    types_ = [t for _, t in args]
    if name in _FLOAT_FUNCS or name in _PREDICATES:
        if not types_ or types_[0] not in ("float", "double") or len(set(types_)) != 1:
            raise CError(f"{name}({', '.join(types_)}): no single overload (CUDA's math "
                         "functions take floats or doubles)")
        if name in _PREDICATES:
            return _PREDICATES[name](*(a for a, _ in args)), "bool"
        return _FLOAT_FUNCS[name](*(a for a, _ in args)).astype(DTYPES[types_[0]]), types_[0]
    overloads = [f for f in scope.functions.get(name, []) if len(f.params) == len(args)]
    exact = [f for f in overloads if [t for t, _ in f.params] == types_]
    if len(overloads) != 1 and len(exact) != 1:
        raise CError(f"no function {name}({', '.join(types_)}), or no single overload")
    fn = exact[0] if exact else overloads[0]
    inner = Scope(scope.functions, scope.constants)
    for (ptype, pname), (value, ctype) in zip(fn.params, args):
        inner.declare(pname, ptype, _convert(value, ctype, ptype))
    return run(fn.body, inner, name, fn.ctype), fn.ctype


def run(statements: list[tuple], scope: Scope, where: str, ret: str | None = None) -> Any:
    """Run ``statements`` in ``scope``; the value of their ``return``, as a ``ret``."""
    with np.errstate(all="ignore"):
        for node in statements:
            if node[0] == "return":
                if ret is None:
                    raise CError(f"{where}: return where no value is returned")
                return _convert(*_eval(node[1], scope), ret)
            if node[0] == "decl":
                scope.declare(node[2], node[1], _convert(*_eval(node[3], scope), node[1]))
                continue
            _, name, op, expr = node
            var = scope.vars.get(name)
            if var is None or var.const:
                raise CError(f"{where}: {name} is {'const' if var else 'not declared'}")
            value, ctype = _eval(expr, scope)
            if op != "=":
                value, ctype = _binary(op[0], *_eval(("name", name), scope), value, ctype)
            var.value = _convert(value, ctype, var.ctype)
    if ret is not None:
        raise CError(f"{where}: no return")
    return None
