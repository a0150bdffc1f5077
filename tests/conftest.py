"""Shared pytest configuration: a deterministic hypothesis profile and a headless matplotlib."""

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

from hypothesis import HealthCheck, settings  # noqa: E402 - after selecting the Agg backend

settings.register_profile(
    "deterministic",
    derandomize=True,
    deadline=None,
    max_examples=60,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

# Solves take the pruned kernels in every test, whatever numba's on-disk cache holds when a test
# runs (by default a process takes the table path until they are compiled or cached;
# tests/spr/test_warmup.py checks that default in fresh processes)
from ldpopt.spr import _fast  # noqa: E402

_fast.PRUNED_PATH = "always"


def pytest_sessionfinish(session, exitstatus):
    """With $LDPOPT_ERR_REPORT set, write the worst observed error of each bounded assertion."""
    path = os.environ.get("LDPOPT_ERR_REPORT")
    if path:
        import json

        from _errmodel import WORST

        with open(path, "w") as fh:
            json.dump(WORST, fh, indent=1, sort_keys=True)
