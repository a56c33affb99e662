"""``nn.Parameter`` and ``nn.Module``: parameter registration, modes, state dicts."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from srcgrad.runtime.eager.printing import tensor_repr
from srcgrad.runtime.eager.tensor import Tensor, as_array, zero_grads

__all__ = ["Parameter", "Module"]


class Parameter(Tensor):
    """A leaf Tensor that a Module registers as one of its parameters."""

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        arr = np.empty(0, dtype=np.float32) if data is None else as_array(data)
        self._init(arr)
        self.requires_grad = requires_grad

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Parameter:
        return object.__new__(cls)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + tensor_repr(self)

    def __reduce_ex__(self, protocol: int) -> Any:
        return (Parameter, (self.detach(), self._requires_grad))


class Module:
    """Base class of layers and models: holds parameters, buffers and submodules."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------------ registration
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__ and isinstance(value, (Parameter, Module)):
            raise AttributeError("cannot assign parameters/modules before Module.__init__() "
                                 "call")
        for store in ("_parameters", "_modules", "_buffers"):
            self.__dict__.get(store, {}).pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        for store in ("_parameters", "_buffers", "_modules"):
            table = self.__dict__.get(store)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                del self.__dict__[store][name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        self._buffers[name] = tensor

    def add_module(self, name: str, module: Module | None) -> None:
        self._modules[name] = module

    register_module = add_module

    # --------------------------------------------------------------------------- traversal
    def named_modules(self, memo: set | None = None, prefix: str = "") -> Iterator:
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator:
        yield from ((n, m) for n, m in self._modules.items() if m is not None)

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator:
        seen: set = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, p in mod._parameters.items():
                if p is None or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator:
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, b in mod._buffers.items():
                if b is not None:
                    yield (f"{mod_prefix}.{name}" if mod_prefix else name), b

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn: Any) -> Module:
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        for store in ("_parameters", "_buffers"):
            for name, t in self.__dict__[store].items():
                if t is None:
                    continue
                moved = t.detach().to(*args, **kwargs)
                if isinstance(t, Parameter):
                    t._data = moved._data
                else:
                    self.__dict__[store][name] = moved
        for m in self.children():
            m.to(*args, **kwargs)
        return self

    def double(self) -> Module:
        from srcgrad.runtime.eager.dtypes import float64
        return self.to(float64)

    def float(self) -> Module:
        from srcgrad.runtime.eager.dtypes import float32
        return self.to(float32)

    def cuda(self, device: Any = None) -> Module:
        return self.to("cuda")

    def cpu(self) -> Module:
        return self.to("cpu")

    # ------------------------------------------------------------------------- state dict
    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False
                   ) -> OrderedDict:
        out = OrderedDict() if destination is None else destination
        for name, p in self.named_parameters(prefix=prefix.rstrip("."), remove_duplicate=False):
            out[name] = p if keep_vars else p.detach()
        for name, b in self.named_buffers(prefix=prefix.rstrip(".")):
            out[name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False
                        ) -> Any:
        own = dict(self.named_parameters(remove_duplicate=False))
        own.update(self.named_buffers())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append("Missing key(s) in state_dict: "
                             + ", ".join(f'"{k}"' for k in missing) + ". ")
            if unexpected:
                parts.append("Unexpected key(s) in state_dict: "
                             + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(parts))
        for name, value in state_dict.items():
            if name in own:
                data = as_array(value)
                target = own[name]
                if tuple(np.shape(data)) != tuple(target.shape):
                    raise RuntimeError(
                        f"Error(s) in loading state_dict for {type(self).__name__}:\n\tsize "
                        f"mismatch for {name}: copying a param with shape "
                        f"{Tensor._make(np.asarray(data)).shape!r} from checkpoint, the shape "
                        f"in current model is {target.shape!r}.")
                target._data[...] = data
                target._version_counter[0] += 1
        from collections import namedtuple
        return namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])(
            missing, unexpected)

    # ------------------------------------------------------------------------------ repr
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            text = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
