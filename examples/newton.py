"""Newton's method with compiled second derivatives: a chain of coupled pendulums at rest.

The potential energy of a chain of pendulums (gravity on each bob, springs between
neighbours) is minimised by Newton's method, whose step solves ``H dx = -g`` with the
Hessian ``srcgrad.hessian(energy)`` (reverse mode over the forward-mode source of the
energy's directional derivative) and the gradient ``srcgrad.grad(energy)``.  A truncated
Newton variant needs only Hessian-vector products, ``srcgrad.jvp(grad(energy), ...)``,
inside conjugate gradients.  Run it to see both converge quadratically::

    python examples/newton.py
"""

from __future__ import annotations

import numpy as np

import srcgrad

GRAVITY, SPRING = 1.0, 4.0


def energy(angles, pull):
    """Each bob's height (gravity) plus springs between neighbouring bobs, one end pulled."""
    height = -np.sum(np.cos(angles))
    stretch = np.sin(angles[1:]) - np.sin(angles[:-1])
    return GRAVITY * height + 0.5 * SPRING * np.sum(stretch ** 2) - pull * np.sin(angles[-1])


gradient = srcgrad.grad(energy, strict=True)
hessian = srcgrad.hessian(energy, strict=True)
hvp = srcgrad.jvp(srcgrad.grad(energy, strict=True), strict=True)


def newton(angles: np.ndarray, pull: float, steps: int = 8, verbose: bool = True) -> list:
    """Full Newton steps; the gradient's norm after each."""
    norms = []
    for _ in range(steps):
        g = gradient(angles, pull)
        angles = angles - np.linalg.solve(hessian(angles, pull), g)
        norms.append(float(np.linalg.norm(gradient(angles, pull))))
        if verbose:
            print(f"newton     |g| = {norms[-1]:.3e}")
    return norms


def truncated_newton(angles: np.ndarray, pull: float, steps: int = 8,
                     verbose: bool = True) -> list:
    """Newton steps solved by conjugate gradients on Hessian-vector products only."""
    norms = []
    for _ in range(steps):
        g = gradient(angles, pull)
        step, residual = np.zeros_like(g), -g
        direction = residual.copy()
        for _ in range(len(g)):
            hd = hvp((angles, pull), (direction, 0.0))[1]
            alpha = residual @ residual / (direction @ hd)
            step = step + alpha * direction
            new = residual - alpha * hd
            if np.linalg.norm(new) < 1e-14:
                break
            direction = new + (new @ new) / (residual @ residual) * direction
            residual = new
        angles = angles + step
        norms.append(float(np.linalg.norm(gradient(angles, pull))))
        if verbose:
            print(f"truncated  |g| = {norms[-1]:.3e}")
    return norms


if __name__ == "__main__":
    start = np.linspace(0.1, 0.4, 6)
    newton(start, pull=0.5)
    truncated_newton(start, pull=0.5)
    print(hessian.source.split("def energy_hessian")[0][-600:])
