"""A spectral loss: magnitudes of np.fft.rfft of a synthesised signal against a target spectrum."""
import numpy as np


def synth(freqs_amp, t):
    amps, phases = freqs_amp[:3], freqs_amp[3:]
    k = np.arange(1, 4)[:, None]
    return np.sum(amps[:, None] * np.sin(2 * np.pi * k * t + phases[:, None]), axis=0)


def spectral_loss(params, t, target_mag):
    x = synth(params, t)
    mag = np.abs(np.fft.rfft(x))
    return np.sum((np.log1p(mag) - np.log1p(target_mag)) ** 2)


def example_args():
    t = np.linspace(0, 1, 16, endpoint=False)
    target = np.abs(np.fft.rfft(np.sin(2 * np.pi * t) + 0.5 * np.sin(6 * np.pi * t)))
    return np.array([0.8, 0.1, 0.4, 0.2, 0.1, 0.3]), t, target


CASE = dict(f=spectral_loss, args=example_args, wrt=0)
