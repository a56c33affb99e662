"""``srcgrad.compile``: a compiled function as one node of the eager graph.

Called on Tensors that require grad, it runs the generated forward on their arrays and returns
Tensors whose ``grad_fn`` is one node named after the function (``mlp_loss`` →
``MlpLossBackward``) that runs the generated adjoint.  With ``create_graph=True`` the same
generated code runs again with its helpers bound to the recording primitives, on Tensors, so
the backward pass is itself differentiable.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from srcgrad.build.parts import BUILD_LOCK
from srcgrad.codegen import DEFAULT_BACKEND, unparse
from srcgrad.errors import CompileError
from srcgrad.runtime.eager import forward_ad, grad_mode
from srcgrad.runtime.eager import tensor as _tensor
from srcgrad.runtime.eager.engine import SECOND_BACKWARD, Node, _modified_error, edge_of
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.runtime.rules import streams
from srcgrad.transforms.base import BaseTransform
from srcgrad.transforms.grad import Transform
from srcgrad.transforms.pytree import plain_leaves
from srcgrad.transforms.safety import PASS_THROUGH, signature

__all__ = ["compile", "Compiled"]


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


class CompiledBackward(Node):
    """The node of one call of a compiled function."""

    __slots__ = ("_name", "owner", "backward", "inputs", "versions", "slots", "num_outputs",
                 "out_meta")

    def __init__(self, owner: Compiled, backward: Any, args: list) -> None:
        self.slots = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        super().__init__(tuple(edge_of(args[i]) if args[i]._requires_grad else (None, 0)
                               for i in self.slots))
        self._name = f"{_camel(owner.__wrapped__.__name__)}Backward"
        self.owner, self.backward, self.inputs = owner, backward, list(args)
        self.versions = [args[i]._version_counter[0] for i in self.slots]
        self.num_outputs = 1
        self.out_meta: list = []

    def name(self) -> str:
        return self._name

    def release(self) -> None:
        self.backward = None

    def apply(self, grads: list, create_graph: bool) -> tuple:
        if self.backward is None:
            raise RuntimeError(SECOND_BACKWARD)
        for i, version in zip(self.slots, self.versions):
            t = self.inputs[i]
            if t._version_counter[0] != version:
                raise _modified_error(t._data, t._grad_fn, t._version_counter[0], version)
        grads = [g if g is not None else np.zeros(shape, dtype)
                 for g, (shape, dtype) in zip(grads, self.out_meta)]
        if create_graph:
            _, backward = self.owner.recording_vjp()(*self.inputs)
            seed = [g if isinstance(g, Tensor) else Tensor._make(g) for g in grads]
        else:
            backward = self.backward
            seed = [g._data if isinstance(g, Tensor) else g for g in grads]
        out = backward(seed[0] if self.num_outputs == 1 else tuple(seed))
        result = []
        for i in self.slots:
            g = out[i]
            t = self.inputs[i]
            if g is None or not t._requires_grad:
                result.append(None)
                continue
            if create_graph:
                g = g if isinstance(g, Tensor) else Tensor._make(np.asarray(g))
            else:
                g = np.asarray(g._data if isinstance(g, Tensor) else g, dtype=t._data.dtype)
                if g.shape != t._data.shape:
                    g = np.broadcast_to(g, t._data.shape)
            result.append(g)
        return tuple(result)


class Compiled(BaseTransform):
    """A function compiled once, callable on arrays (plain result) or on Tensors (one node):
    its vjp ``transform`` (a :class:`Transform`), the eager graph around it."""

    def __init__(self, fun: Any, *, backend: str = DEFAULT_BACKEND, strict: bool = False
                 ) -> None:
        super().__init__(fun, backend=backend, strict=strict, updated=("__dict__",))
        n = len(inspect.signature(fun).parameters)
        self.transform = Transform(fun, "vjp", tuple(range(n)), backend=backend, strict=strict)
        self.source = self.transform.source
        self.graph = self.transform.graph
        self.fallback_reason = self.transform.fallback_reason
        self._recording: Any = None

    @streams.watched              # its reruns see its draws; an outer call's are kept
    def __call__(self, *args: Any) -> Any:
        if not any(isinstance(a, Tensor) for a in args):
            return self.__wrapped__(*args)
        if _tensor._forward_hook is not None and any(   # a dual level and a tangent: the
                isinstance(a, Tensor) and forward_ad.tangent_of(a) is not None for a in args):
            return self._eager(args)                    # body runs eagerly, tangents along
        arrays = [a._data if isinstance(a, Tensor) else plain_leaves(a, f"the argument {i}")
                  for i, a in enumerate(args)]            # np.matrix & co. are refused
        wants = grad_mode.is_grad_enabled() and any(
            isinstance(a, Tensor) and a._requires_grad for a in args)
        if not wants:
            return _wrap_outputs(self.__wrapped__(*arrays), None)
        transform = self.transform
        fn = transform.serves(arrays)
        if fn is None:
            return self._eager(args)
        try:
            value, backward = fn(*arrays)
        except PASS_THROUGH:
            raise
        except Exception as exc:            # the safety net, as for srcgrad.grad
            try:
                out = self._eager(args)
            except Exception as eager_exc:
                if type(eager_exc) is type(exc):
                    raise exc from None
                raise CompileError(f"internal error: the compiled code of {self._name} "
                                   f"raised {type(exc).__name__}: {exc}, and the eager engine "
                                   f"raised {type(eager_exc).__name__}: {eager_exc}") from exc
            transform.net.internal_error(exc, signature(arrays))
            return out
        node = CompiledBackward(self, backward, list(args))
        return _wrap_outputs(value, node)

    def recording_vjp(self) -> Any:
        """The generated vjp, loaded again with its helpers bound to recording primitives."""
        if self._recording is None:
            from srcgrad.codegen import load, recording_namespace
            code = self.transform.code
            name = next(n for n, f in code.namespace.items() if f is code.fn)
            ns = load(_without_inplace(self.source), f"recording {self.__wrapped__.__name__}",
                      code.free, self.transform.backend)
            ns.update(recording_namespace(ns))
            self._recording = ns[name]
        return self._recording

    def _eager(self, args: tuple) -> Any:
        """The fallback: the body on NumPy-semantics views wired to the inputs' graph."""
        from srcgrad.runtime.eager.ndarray import Array
        views = [_array_view(a, Array) if isinstance(a, Tensor) else a for a in args]
        with grad_mode.enable_grad():
            out = self.__wrapped__(*views)
        for o in out if isinstance(out, tuple) else (out,):
            if isinstance(o, Tensor):
                o.__class__ = Tensor
        return out


def _array_view(t: Tensor, cls: type) -> Tensor:
    """``t`` as an Array whose operations record edges to ``t``'s place in the graph (and
    carry its tangent, inside a dual level)."""
    v = cls._make(t._data)
    v.__class__ = cls
    if t._requires_grad:
        v._grad_fn = t._grad_fn if t._grad_fn is not None else t._accumulator()
        v._output_nr = t._output_nr
        v._requires_grad = True
    if _tensor._forward_hook is not None:
        tangent = forward_ad.tangent_of(t)
        if tangent is not None:
            forward_ad.set_tangent(v, tangent)
    return v


def _without_inplace(source: str) -> str:
    """``d += c`` as ``d = d + c``: recorded Tensors must not be changed in place."""
    import ast

    class Rewrite(ast.NodeTransformer):
        def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
            if not isinstance(node.target, ast.Name):
                return node                      # in a helper, which recording replaces
            target = ast.Name(node.target.id, ast.Store())
            value = ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)
            return ast.copy_location(ast.Assign([target], value), node)
    with BUILD_LOCK:                     # CPython makes ast trees one thread at a time
        tree = ast.parse(source)
    return unparse(ast.fix_missing_locations(Rewrite().visit(tree)))


def _wrap_outputs(value: Any, node: CompiledBackward | None) -> Any:
    single = not isinstance(value, tuple)
    values = (value,) if single else value
    out = []
    for nr, v in enumerate(values):
        data = np.asarray(v)
        differentiable = node is not None and data.dtype.kind in "fc"
        t = Tensor._make(data, node if differentiable else None, differentiable)
        t._output_nr = nr
        out.append(t)
        if node is not None:
            node.out_meta.append((data.shape, data.dtype))
    if node is not None:
        node.num_outputs = len(values)
    return out[0] if single else tuple(out)


def compile(fun: Any = None, *, backend: str = DEFAULT_BACKEND, strict: bool = False) -> Any:
    """Compile ``fun`` for use inside the eager graph (see the module docstring)."""
    if fun is None:
        return lambda f: Compiled(f, backend=backend, strict=strict)
    return Compiled(fun, backend=backend, strict=strict)
