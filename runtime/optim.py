"""``srcgrad.optim``: SGD, Adam, AdamW and RMSprop, step for step as PyTorch's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.tensor import Tensor, zero_grads

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop"]


class Optimizer:
    """Holds parameter groups and per-parameter state; ``step`` updates in place."""

    def __init__(self, params: Iterable, defaults: dict) -> None:
        self.defaults = defaults
        self.state: dict = {}
        self.param_groups: list[dict] = []
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict) -> None:
        group = dict(group)
        group["params"] = list(group["params"])
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    def state_dict(self) -> dict:
        index = {id(p): i for i, p in enumerate(p for g in self.param_groups
                                                for p in g["params"])}
        return {"state": {index[id(p)]: dict(s) for p, s in self.state.items()
                          if id(p) in index},
                "param_groups": [{**{k: v for k, v in g.items() if k != "params"},
                                  "params": [index[id(p)] for p in g["params"]]}
                                 for g in self.param_groups]}

    def load_state_dict(self, state_dict: dict) -> None:
        params = [p for g in self.param_groups for p in g["params"]]
        self.state = {params[i]: dict(s) for i, s in state_dict["state"].items()}
        for g, saved in zip(self.param_groups, state_dict["param_groups"]):
            g.update({k: v for k, v in saved.items() if k != "params"})

    def step(self, closure: Callable | None = None) -> Any:
        loss = None
        if closure is not None:
            with grad_mode.enable_grad():
                loss = closure()
        with grad_mode.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p._grad is not None:
                        g = p._grad._data
                        self._update(p, -g if group.get("maximize") else g, group,
                                     self.state.setdefault(p, {}))
                        p._version_counter[0] += 1
        return loss

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov, weight decay."""

    def __init__(self, params: Iterable, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p._data
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(g, copy=True)
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * g
            g = g + momentum * buf if group["nesterov"] else buf
        p._data -= group["lr"] * g


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction, optional AMSGrad and L2 weight decay."""

    _decoupled = False

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        if group["weight_decay"] and self._decoupled:
            p._data *= 1 - group["lr"] * group["weight_decay"]
        elif group["weight_decay"]:
            g = g + group["weight_decay"] * p._data
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p._data)
            state["exp_avg_sq"] = np.zeros_like(p._data)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(p._data)
        b1, b2 = group["betas"]
        state["step"] += 1
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        if group["amsgrad"]:
            np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            v = state["max_exp_avg_sq"]
        t = state["step"]
        denom = np.sqrt(v) / np.sqrt(1 - b2 ** t) + group["eps"]
        p._data -= (group["lr"] / (1 - b1 ** t)) * m / denom


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr·wd`` first."""

    _decoupled = True

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)


class RMSprop(Optimizer):
    """RMSprop (Hinton) with optional momentum, centring and L2 weight decay."""

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: Any = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        for name, value in (("learning rate", lr), ("epsilon value", eps),
                            ("momentum value", momentum), ("weight_decay value", weight_decay),
                            ("alpha value", alpha)):
            if not 0.0 <= value:
                raise ValueError(f"Invalid {name}: {value}")
        if capturable or differentiable:
            raise NotImplementedError("srcgrad's RMSprop has no capturable or differentiable "
                                      "mode")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize,
                                      foreach=foreach, capturable=False,
                                      differentiable=False))

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p._data
        if not state:
            state["step"] = 0
            state["square_avg"] = np.zeros_like(p._data)
            if group["momentum"] > 0:
                state["momentum_buffer"] = np.zeros_like(p._data)
            if group["centered"]:
                state["grad_avg"] = np.zeros_like(p._data)
        state["step"] += 1
        alpha = group["alpha"]
        sq = state["square_avg"]
        sq *= alpha
        sq += (1 - alpha) * g * g
        if group["centered"]:
            avg_g = state["grad_avg"]
            avg_g += (1 - alpha) * (g - avg_g)
            avg = np.sqrt(sq - avg_g * avg_g)
        else:
            avg = np.sqrt(sq)
        avg += group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf *= group["momentum"]
            buf += g / avg
            p._data -= group["lr"] * buf
        else:
            p._data -= group["lr"] * (g / avg)
