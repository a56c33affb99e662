"""A NumPy stand-in for the parts of CuPy that srcgrad's fused kernels use.

``CUPY`` is a module to bind as ``cupy`` (``sys.modules["cupy"] = CUPY``): NumPy's namespace,
plus ``ElementwiseKernel`` and ``ReductionKernel`` classes that run a kernel's CUDA C with
NumPy, over whole broadcast arrays at once.  That is exact for the straight-line code the
emitter writes (declarations, assignments, ``?:``, calls, operators, casts, comments): every
element runs the same statements, and ``?:`` evaluates both branches, which has no effect in
code without side effects.  C's typing is followed (``1 / 2`` is 0, ``bool + bool`` is an
int, math functions take a double or a float, not an int), and anything else (an unknown
function, statement or type, an overload C would find ambiguous, an input parameter
assigned, an output read before it is written) raises :class:`CError`.
"""

from __future__ import annotations

import re
import types
from typing import Any

import numpy as np
from cuda_c import DTYPES, CError, Scope, parse_functions, parse_params, parse_statements, run

__all__ = ["CUPY", "CError", "ElementwiseKernel", "ReductionKernel", "cuda_source"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _Kernel:
    def __init__(self, in_params: str, out_params: str, name: str, preamble: str):
        if not _NAME.match(name):
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.name, self.preamble = name, preamble
        self.in_text, self.out_text = in_params, out_params
        self.in_params, self.out_params = parse_params(in_params), parse_params(out_params)
        names = [n for _, n in self.in_params + self.out_params]
        if "i" in names:
            raise ValueError("Can not use 'i' as a parameter name")
        if len(set(names)) != len(names):
            raise CError(f"{name}: a parameter name repeats: {names}")
        self.functions, self.constants = parse_functions(preamble)

    def _scope(self) -> Scope:
        return Scope(self.functions, self.constants)

    def _inputs(self, args: tuple, shape: tuple[int, ...], scope: Scope) -> None:
        for (ctype, pname), arg in zip(self.in_params, args):
            if isinstance(arg, np.ndarray):
                value = np.broadcast_to(arg, shape)
            elif isinstance(arg, (bool, int, float, np.generic)):
                value = np.asarray(arg)                      # a scalar argument
            else:
                raise TypeError(f"{self.name}: argument {pname} is a {type(arg).__name__}")
            scope.param(pname, ctype, value, const=True)


class ElementwiseKernel(_Kernel):
    """``cp.ElementwiseKernel``: ``operation`` runs once per element of the broadcast
    arguments; output parameters are references to the outputs' elements."""

    def __init__(self, in_params: str, out_params: str, operation: str,
                 name: str = "kernel", reduce_dims: bool = True, preamble: str = "",
                 no_return: bool = False, return_tuple: bool = False, **kwargs: Any):
        super().__init__(in_params, out_params, name, preamble)
        if kwargs:
            raise TypeError(f"unexpected options {sorted(kwargs)}")
        self.operation = operation
        self.body = parse_statements(operation)
        self.no_return, self.return_tuple = no_return, return_tuple

    def __call__(self, *args: Any, size: int = -1, block_size: int = 128, stream: Any = None):
        nin, nout = len(self.in_params), len(self.out_params)
        if len(args) not in (nin, nin + nout):
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either "
                            f"{nin} or {nin + nout} (with outputs), but given {len(args)}.")
        outs = list(args[nin:])
        for (ctype, pname), out in zip(self.out_params, outs):
            if not isinstance(out, np.ndarray):
                raise TypeError("Output arguments type must be cupy.ndarray")
            if out.dtype != Scope.dtype(ctype):
                raise TypeError(f"Type is mismatched. {pname} {out.dtype} {ctype}")
        shape = np.broadcast_shapes(*(a.shape for a in args if isinstance(a, np.ndarray)))
        if size != -1:
            raise NotImplementedError("size= is not used by srcgrad's kernels")
        if any(o.shape != shape for o in outs):
            raise ValueError("Out shape is mismatched")
        scope = self._scope()
        self._inputs(args[:nin], shape, scope)
        given = bool(outs)
        if not given:
            outs = [np.empty(shape, Scope.dtype(ctype)) for ctype, _ in self.out_params]
        for (ctype, pname), out in zip(self.out_params, outs):
            scope.param(pname, ctype, out.copy() if given else None, const=False)
        run(self.body, scope, self.name)
        for (_, pname), out in zip(self.out_params, outs):
            value = scope.read_output(pname)
            if value is None:
                if not given:
                    raise CError(f"{self.name}: output {pname} is never written")
                continue
            out[...] = np.broadcast_to(value, shape)
        if self.no_return:
            return None
        return outs[0] if nout == 1 and not self.return_tuple else tuple(outs)


class ReductionKernel(_Kernel):
    """``cp.ReductionKernel``: ``map_expr`` per element of the broadcast inputs, combined
    by ``reduce_expr`` (over ``a`` and ``b``) in a tree from ``identity``, and written by
    ``post_map_expr`` (``y = a``) into each output element."""

    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str,
                 post_map_expr: str, identity: str | None, name: str = "reduce_kernel",
                 reduce_type: str | None = None, reduce_dims: bool = True,
                 preamble: str = "", options: tuple = ()):
        super().__init__(in_params, out_params, name, preamble)
        if identity is None or identity == "":
            raise CError(f"{name}: srcgrad's reductions always give an identity")
        self.exprs = (map_expr, reduce_expr, post_map_expr, identity)
        self.map = parse_statements(f"return {map_expr};")
        self.reduce = parse_statements(f"return {reduce_expr};")
        self.identity = parse_statements(f"return {identity};")
        self.post_map = parse_statements(f"{post_map_expr};")
        self.reduce_type = reduce_type or self.out_params[0][0]
        if self.reduce_type not in DTYPES:
            raise CError(f"{name}: reduce_type {reduce_type!r} is no C type of the subset")

    def __call__(self, *args: Any, out: Any = None, axis: Any = None, keepdims: bool = False,
                 stream: Any = None):
        nin = len(self.in_params)
        if len(args) != nin or out is not None:
            raise NotImplementedError("srcgrad passes exactly the inputs, never out=")
        shape = np.broadcast_shapes(*(a.shape for a in args if isinstance(a, np.ndarray)))
        axes = tuple(range(len(shape))) if axis is None else \
            tuple(sorted({int(a) % len(shape) for a in np.atleast_1d(axis)}))
        scope = self._scope()
        self._inputs(args, shape, scope)
        mapped = run(self.map, scope, self.name, self.reduce_type)
        mapped = np.broadcast_to(mapped, shape)
        kept = [d for d in range(len(shape)) if d not in axes]
        values = np.transpose(mapped, kept + list(axes))
        values = values.reshape(values.shape[:len(kept)] + (-1,))
        identity = run(self.identity, self._scope(), self.name, self.reduce_type)
        ident = np.broadcast_to(identity, values.shape[:-1] + (1,))
        while values.shape[-1] > 1:                     # a tree, as the GPU's blocks add
            if values.shape[-1] % 2:
                values = np.concatenate([values, ident], axis=-1)
            values = self._combine(values[..., 0::2], values[..., 1::2])
        result = self._combine(ident, values)[..., 0] if values.shape[-1] else ident[..., 0]
        scope = self._scope()
        scope.param("a", self.reduce_type, result, const=True)
        out_ctype, out_name = self.out_params[0]
        scope.param(out_name, out_ctype, None, const=False)
        run(self.post_map, scope, self.name)
        value = scope.read_output(out_name)
        if value is None:
            raise CError(f"{self.name}: post_map_expr never writes {out_name}")
        final = np.asarray(value, Scope.dtype(out_ctype))
        if keepdims:
            final = final.reshape([1 if d in axes else n for d, n in enumerate(shape)])
        return final

    def _combine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        scope = self._scope()
        scope.param("a", self.reduce_type, a, const=True)
        scope.param("b", self.reduce_type, b, const=True)
        return np.asarray(run(self.reduce, scope, self.name, self.reduce_type))


def _params(params: list[tuple[str, str]], out: bool, index: str) -> tuple[str, str]:
    """The parameters of a kernel's C function (arrays, as CuPy passes them) and the lines
    that bind each name to its element, as CuPy's templates write them."""
    decls, binds = [], []
    for ctype, name in params:
        decls.append(f"{'' if out else 'const '}{ctype}* _raw_{name}")
        binds.append(f"{'' if out else 'const '}{ctype} &{name} = _raw_{name}[{index}];")
    return ", ".join(decls), " ".join(binds)


def cuda_source(kernels: list[ElementwiseKernel | ReductionKernel]) -> str:
    """One CUDA translation unit holding every kernel, each as a complete ``__global__``
    function shaped like CuPy's templates (its preamble in a namespace of its own, its
    operation in a grid-stride loop; a reduction's map, ``REDUCE`` and ``POST_MAP`` macros
    and identity as CuPy expands them), for ``nvcc`` to compile where CuPy's NVRTC is not."""
    includes, parts = set(), []
    loop = ("for (long long {i} = blockIdx.x * (long long)blockDim.x + threadIdx.x; {i} < {n};"
            " {i} += (long long)blockDim.x * gridDim.x)")
    for k in kernels:
        lines = [ln for ln in k.preamble.splitlines() if not ln.startswith("#include")]
        includes |= {ln for ln in k.preamble.splitlines() if ln.startswith("#include")}
        ins, bind_in = _params(k.in_params, False, "i" if isinstance(k, ElementwiseKernel)
                               else "_i * _n_red + _j")
        outs, bind_out = _params(k.out_params, True, "i" if isinstance(k, ElementwiseKernel)
                                 else "_i")
        head = f'extern "C" __global__ void {k.name}({", ".join(filter(None, [ins, outs]))}, '
        if isinstance(k, ElementwiseKernel):
            lines += [head + "long long _n) {", "  " + loop.format(i="i", n="_n") + " {",
                      f"    {bind_in} {bind_out}", k.operation, "  }", "}"]
        else:
            map_expr, reduce_expr, post_map_expr, identity = k.exprs
            lines += [f"#define REDUCE(a, b) ({reduce_expr})",
                      f"#define POST_MAP(a) ({post_map_expr})",
                      f"typedef {k.reduce_type} _type_reduce;",
                      head + "long long _n_out, long long _n_red) {",
                      "  " + loop.format(i="_i", n="_n_out") + " {",
                      f"    _type_reduce _s = _type_reduce({identity});",
                      "    for (long long _j = 0; _j < _n_red; ++_j) {",
                      f"      {bind_in}",
                      f"      _type_reduce _a = static_cast<_type_reduce>({map_expr});",
                      "      _s = REDUCE(_s, _a);", "    }", f"    {bind_out}",
                      "    POST_MAP(_s);", "  }", "}", "#undef REDUCE", "#undef POST_MAP"]
        parts.append(f"namespace {k.name}_ns {{\n" + "\n".join(lines) + "\n}")
    return "\n".join(sorted(includes) + parts) + "\n"


def _empty(shape: Any, dtype: Any = float, order: str = "C") -> np.ndarray:
    """``cp.empty``: NaN-filled where it can be, so a kernel that reads an output before
    writing it shows it."""
    out = np.empty(shape, dtype, order)
    if out.dtype.kind == "f":
        out.fill(np.nan)
    return out


CUPY = types.ModuleType("cupy", "NumPy standing in for CuPy, with its kernel classes run "
                                "through a CUDA C interpreter (tests/support/cupy_standin.py).")
CUPY.__dict__.update({k: v for k, v in vars(np).items() if not k.startswith("__")})
CUPY.__dict__.update(ElementwiseKernel=ElementwiseKernel, ReductionKernel=ReductionKernel,
                     empty=_empty, asnumpy=np.asarray, is_available=lambda: False)
