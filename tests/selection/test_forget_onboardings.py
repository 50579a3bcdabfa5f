"""A build drops the tuning's simulated onboardings before the selection (CandidateFits.forget_onboardings("tune")):
the selection's own samples stay, and anything of the tuning asked again is what it was."""

from __future__ import annotations

import numpy as np

from uniroute.selection.candidates import CandidateFits, TuningData


def _fits() -> CandidateFits:
    rng = np.random.default_rng(3)
    X, Xv = rng.normal(size=(120, 4)).astype(np.float32), rng.normal(size=(30, 4)).astype(np.float32)
    losses, val_losses = rng.random((120, 3)), rng.random((30, 3))
    return CandidateFits(TuningData(X, losses, np.ones_like(losses), Xv, val_losses, np.ones_like(val_losses), seed=0))


def test_forgetting_the_tuning_keeps_the_selections_samples_and_recomputes_the_same():
    fits = _fits()
    tune, select = fits.samples(20, "tune"), fits.samples(20, "select")
    order, psi = fits.sample_order(20, "tune", 0, 5), fits.sample_psi(2, 20, "tune", 0)
    select_order = fits.sample_order(20, "select", 0, 5)
    fits.forget_onboardings("tune")
    assert fits.samples(20, "select") is select and fits.sample_order(20, "select", 0, 5) is select_order
    again = fits.samples(20, "tune")
    assert again is not tune  # dropped, and drawn again from the same seed
    for a, b in zip(again, tune, strict=True):
        np.testing.assert_array_equal(a.sample, b.sample)
        np.testing.assert_array_equal(a.rest, b.rest)
    assert fits.sample_order(20, "tune", 0, 5) is not order and fits.sample_psi(2, 20, "tune", 0) is not psi
    np.testing.assert_array_equal(fits.sample_order(20, "tune", 0, 5), order)
    np.testing.assert_array_equal(fits.sample_psi(2, 20, "tune", 0).values, psi.values)
    fits.forget_onboardings()
    assert fits.samples(20, "select") is not select
