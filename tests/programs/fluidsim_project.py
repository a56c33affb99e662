"""autograd's fluidsim.py: a semi-Lagrangian smoke simulation with a Jacobi `project` step over
np.roll, an `advect` that interpolates with np.floor and integer fancy indexing, a
target-matching loss on the final smoke density."""
import numpy as np


def project(vx, vy):
    """Project the velocity field to be approximately mass-conserving,
    using a few iterations of Gauss-Seidel."""
    p = np.zeros(vx.shape)
    h = 1.0 / vx.shape[0]
    div = -0.5 * h * (np.roll(vx, -1, axis=0) - np.roll(vx, 1, axis=0)
                      + np.roll(vy, -1, axis=1) - np.roll(vy, 1, axis=1))

    for k in range(10):  # noqa: B007
        p = (div + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0)
                 + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0

    vx -= 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
    vy -= 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
    return vx, vy


def advect(f, vx, vy):
    """Move field f according to x and y velocities (u and v)
       using an implicit Euler integrator."""
    rows, cols = f.shape
    cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols))
    center_xs = (cell_xs - vx).ravel()
    center_ys = (cell_ys - vy).ravel()

    # Compute indices of source cells.
    left_ix = np.floor(center_xs).astype(int)
    top_ix = np.floor(center_ys).astype(int)
    rw = center_xs - left_ix              # Relative weight of right-hand cells.
    bw = center_ys - top_ix               # Relative weight of bottom cells.
    left_ix = np.mod(left_ix, rows)       # Wrap around edges of simulation.
    right_ix = np.mod(left_ix + 1, rows)
    top_ix = np.mod(top_ix, cols)
    bot_ix = np.mod(top_ix + 1, cols)

    # A linearly-weighted sum of the 4 surrounding cells.
    flat_f = (1 - rw) * ((1 - bw) * f[left_ix, top_ix] + bw * f[left_ix, bot_ix]) \
        + rw * ((1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix])
    return np.reshape(flat_f, (rows, cols))


def simulate(vx, vy, smoke, num_time_steps):
    for t in range(num_time_steps):  # noqa: B007
        vx_updated = advect(vx, vx, vy)
        vy_updated = advect(vy, vx, vy)
        vx, vy = project(vx_updated, vy_updated)
        smoke = advect(smoke, vx, vy)
    return smoke


def distance_from_target_image(init_vx, init_vy, smoke, target):
    final_smoke = simulate(init_vx, init_vy, smoke, 4)
    return np.mean((target - final_smoke) ** 2)


def example_args():
    rs = np.random.RandomState(0)
    rows, cols = 8, 8
    init_smoke = np.zeros((rows, cols))
    init_smoke[2:5, 2:6] = 1.0
    target = np.zeros((rows, cols))
    target[4:7, 3:6] = 1.0
    init_vx = rs.randn(rows, cols) * 0.3
    init_vy = rs.randn(rows, cols) * 0.3
    return init_vx, init_vy, init_smoke, target


CASE = dict(f=distance_from_target_image, args=example_args, wrt=(0, 1))
