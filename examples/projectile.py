"""Fit a drag coefficient with gradients through a compiled simulation loop.

A projectile with quadratic air drag is integrated by explicit Euler steps in a plain Python
``for`` loop.  ``srcgrad.grad`` compiles the loop (each step's backward closure is kept, then
replayed in reverse) and the drag coefficient that makes the projectile land at a target
distance is found by Gauss-Newton steps on that gradient.
Run: ``python examples/projectile.py``.
"""

from __future__ import annotations

import numpy as np

import srcgrad

DT, STEPS, GRAVITY = 0.01, 300, 9.81


def landing_error(drag, velocity, target):
    """Squared distance between where the projectile is at the end and the target point."""
    position = np.zeros(2)
    v = velocity
    for _ in range(STEPS):
        speed = np.sqrt(np.sum(v * v))
        acceleration = -drag * speed * v - np.array([0.0, GRAVITY])
        v = v + DT * acceleration
        position = position + DT * v
    return np.sum((position - target) ** 2)


def fit(target_drag: float = 0.05, steps: int = 30, verbose: bool = True) -> tuple[float, list]:
    velocity = np.array([20.0, 12.0])
    # the target: where the projectile ends up with the true drag
    target = np.zeros(2)
    v = velocity.copy()
    for _ in range(STEPS):
        v = v + DT * (-target_drag * np.sqrt(v @ v) * v - np.array([0.0, GRAVITY]))
        target = target + DT * v
    gradient = srcgrad.value_and_grad(landing_error, strict=True)
    drag, errors = 0.2, []
    for step in range(steps):
        error, g = gradient(drag, velocity, target)
        errors.append(float(error))
        if verbose:
            print(f"step {step:2d}  drag {drag:.5f}  landing error {error:.3e}")
        if error < 1e-12:
            break
        # Gauss-Newton on the residual sqrt(error): its derivative is g / (2 sqrt(error))
        drag = max(drag - 2 * error / g, 1e-4)
    if verbose:
        print(f"fitted drag {drag:.4f} (true {target_drag}), error {errors[-1]:.2e}")
    return drag, errors


if __name__ == "__main__":
    fit()
