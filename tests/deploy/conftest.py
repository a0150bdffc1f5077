"""Shared fixtures of the deployment tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def hypotheses():
    """``hypotheses(k, seed)``: two random distributions on k symbols (flat Dirichlet)."""

    def make(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))

    return make
