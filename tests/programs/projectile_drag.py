"""A projectile with quadratic drag, integrated with a while loop until it lands; fit the drag."""
import numpy as np

G = 9.81


def simulate(v0, angle, drag, dt=0.01):
    pos = np.array([0.0, 0.0])
    vel = v0 * np.array([np.cos(angle), np.sin(angle)])
    steps = 0
    while pos[1] >= 0.0 and steps < 2000:
        speed = np.sqrt(vel @ vel)
        acc = np.array([0.0, -G]) - drag * speed * vel
        vel = vel + dt * acc
        pos = pos + dt * vel
        steps += 1
    return pos


def loss(drag, v0, angle, target_range):
    landing = simulate(v0, angle, drag)
    return (landing[0] - target_range) ** 2


def example_args():
    return 0.05, 10.0, np.pi / 4, 6.0


CASE = dict(f=loss, args=example_args, wrt=0)
