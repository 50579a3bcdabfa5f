"""Adam (Kingma & Ba) over numpy arrays: the optimiser of the numpy-trained networks (oracles, LearnedMap)."""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)

ADAM_BETAS = (0.9, 0.999)


class Adam:
    """Adam over a list of float32 arrays, updated in place."""

    def __init__(self, params: list[np.ndarray], lr: float, eps: float = 1e-8, wide_denominator: bool = True) -> None:
        """wide_denominator: form sqrt(v_hat) + eps in float64, as the oracles were first trained (bit-identical
        results); False keeps it in the parameters' dtype, which is faster on float32 parameters."""
        self.params, self.lr, self.eps, self.t = params, lr, eps, 0
        self.wide = wide_denominator
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        # Two scratch arrays per parameter: the update allocates nothing (at batch 64 allocation is the cost).
        self._s = [np.empty_like(p) for p in params]
        self._t = [np.empty(p.shape, dtype=np.float64 if wide_denominator else p.dtype) for p in params]

    def step(self, grads: list[np.ndarray]) -> None:
        """One update of every parameter from its gradient."""
        b1, b2 = ADAM_BETAS
        self.t += 1
        step = self.lr / (1 - b1**self.t)
        root_c2 = np.sqrt(1 - b2**self.t) if self.wide else float(np.sqrt(1 - b2**self.t))
        for p, m, v, g, s, t in zip(self.params, self.m, self.v, grads, self._s, self._t, strict=True):
            m *= b1
            np.multiply(g, 1 - b1, out=s)
            m += s
            v *= b2
            np.multiply(g, g, out=s)
            s *= 1 - b2
            v += s
            # p -= lr_t * m_hat / (sqrt(v_hat) + eps), with the bias corrections folded into scalars
            np.sqrt(v, out=s)
            np.divide(s, root_c2, out=t)
            t += self.eps
            np.multiply(m, step, out=s)
            np.divide(s, t, out=t)
            p -= t
