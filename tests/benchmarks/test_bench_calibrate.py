"""The relevance calibration's fit: an L2 penalty on standardised inputs, chosen by held-out log loss."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.calibrate import fit_logistic, log_loss, loo_folds
from ripple.recall.relevance import FEATURES


def _separable(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A narrow-band input (a cosine in .80-.90, like e5's) that separates the classes in sample."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(float)
    x = np.c_[0.85 + 0.02 * (2 * y - 1) + 0.01 * rng.standard_normal(n), rng.random(n)]
    return x, y


def test_the_penalty_keeps_weights_moderate_and_predictions_in_raw_units() -> None:
    x, y = _separable()
    loose, firm = fit_logistic(x, y, l2=1e-6), fit_logistic(x, y, l2=0.1)
    assert abs(loose[0]) > 100 and abs(firm[0]) < abs(loose[0]) / 5  # the narrow band's weight shrinks
    assert firm[0] > 0  # ... but keeps its sign
    # weights are for the raw inputs: the standardised fit's predictions, recomputed
    p = 1 / (1 + np.exp(-(x @ firm[:-1] + firm[-1])))
    assert ((p > 0.5) == (y > 0)).mean() > 0.9
    assert log_loss(x, y, loose) < log_loss(x, y, firm)  # in sample the loose fit always looks better
    assert log_loss(x, y, np.zeros(3)) == pytest.approx(np.log(2))


def _rows(users: list[str]) -> list[dict]:
    """Calibration rows: per user, own evidence hits (positives) and foreign hits (negatives)."""
    rng = np.random.default_rng(1)
    rows = []
    for n, user in enumerate(users):
        other = users[(n + 1) % len(users)]
        for q in range(30):
            for kind, asked_of, gold in (("own", user, True), ("foreign", other, False)):
                x = [0.0] * len(FEATURES)
                x[FEATURES.index("dense")] = (0.7 if gold else 0.4) + 0.1 * rng.standard_normal()
                x[FEATURES.index("cjk")] = 1.0 if user.startswith("zh") else 0.0
                rows.append({"q": f"{user}:q{q}", "asked_of": asked_of, "from": user, "kind": kind, "gold": gold,
                             "x": x, "source": None, "act": 0.0, "id": f"m{q}"})
    return rows


def test_loo_folds_score_each_conversation_without_it_and_pool_by_language() -> None:
    got = loo_folds(_rows(["conv-1", "conv-2", "zh-conv-1", "zh-conv-2"]), 1e-2, 0.97)
    assert [f["user"] for f in got["folds"]] == ["conv-1", "conv-2", "zh-conv-1", "zh-conv-2"]
    assert set(got["pooled"]) == {"all", "English", "Chinese"}
    for part in got["pooled"].values():
        assert part["own_answered"] >= 0.9 and part["foreign_empty"] > 0.5 and part["log_loss"] < np.log(2)
    assert got["max_weight"] < 50
