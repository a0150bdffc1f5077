"""The Chernoff objective in ``ldpopt design`` and ``ldpopt demo``: the certificate, and the
Chernoff-optimal design next to the KL-optimal one."""

from __future__ import annotations

import math

from rich.table import Table

from ldpopt.cli._common import console, fmt, solve


def is_chernoff_result(res) -> bool:
    """True for a result of ``optimal_mechanism(..., divergence="chernoff")``."""
    return res.divergence == "chernoff"


def certificate_fields(res) -> dict:
    """``lam`` and ``upper_bound`` of a Chernoff result for its JSON (empty for the f-divergences)."""
    if not is_chernoff_result(res):
        return {}
    return {"lam": res.lam, "upper_bound": res.upper_bound if math.isfinite(res.upper_bound) else "inf"}


def print_certificate(res) -> None:
    """One line: the exponent, where it is attained and the bound no mechanism beats."""
    if is_chernoff_result(res):
        console.print(
            f"Chernoff exponent C(M0, M1) = {fmt(res.value)} at lambda = {fmt(res.lam)}; "
            f"no {res.eps:g}-LDP mechanism exceeds {fmt(res.upper_bound)} "
            f"(certified gap {res.upper_bound - res.value:.2g})"
        )


def chernoff_vs_kl(p0, p1, eps_values) -> list[dict]:
    """Per eps, the KL-optimal and the Chernoff-optimal design, both scored in Chernoff
    information (the Bayes-error exponent) and in KL (the Stein exponent)."""
    import ldpopt

    rows = []
    for eps in eps_values:
        for name, div in (("KL-optimal", "kl"), ("Chernoff-optimal", "chernoff")):
            res = solve(p0, p1, eps, div)  # the command line's solver choice (no compile when small)
            assert res.mechanism is not None  # the SPR solvers always return their mechanism
            c = ldpopt.chernoff_information(*res.mechanism.output_distributions(p0, p1))
            rows.append(
                {
                    "eps": eps,
                    "design": name,
                    "num_outputs": res.num_outputs,
                    "chernoff": c.value,
                    "kl": res.mechanism.utility(p0, p1, "kl"),
                    "lam": c.lam,
                }
            )
    return rows


def print_chernoff_vs_kl(rows: list[dict]) -> None:
    """The rows of :func:`chernoff_vs_kl` as a table, with what the two exponents mean."""
    t = Table(title="Designed for KL vs for Chernoff (both errors weighted alike)")
    for col in ("eps", "design", "outputs", "Chernoff C", "KL", "lambda"):
        t.add_column(col, justify="left" if col == "design" else "right")
    for r in rows:
        numbers = (fmt(r["chernoff"]), fmt(r["kl"]), fmt(r["lam"]))
        t.add_row(f"{r['eps']:g}", r["design"], str(r["num_outputs"]), *numbers)
    console.print(t)
    console.print(
        "KL is the Stein exponent (one error held fixed); the Chernoff information is the Bayes-error "
        "exponent (both errors alike).  See docs/chernoff.md."
    )
