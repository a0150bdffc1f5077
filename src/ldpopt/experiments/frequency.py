"""The deployed frequency oracles' gap to the optimum against eps, for several k (``ldpopt
reproduce frequency``): :func:`frequency_gaps` tabulates :func:`ldpopt.frequency.compare.compare`
over a grid; each row says what the ratio is to (``reference``: the exact optimum, a certified
lower bound on it, or, without either, the best deployed mechanism)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ldpopt._extras import require
from ldpopt.frequency.compare import compare

__all__ = ["GAP_EPS", "GAP_KS", "QUICK_GAP_EPS", "QUICK_GAP_KS", "FrequencyGaps", "frequency_gaps"]

GAP_KS = (4, 16, 64, 256)
GAP_EPS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0)
QUICK_GAP_KS = (4, 16)
QUICK_GAP_EPS = (0.5, 1.0, 2.0, 4.0)


@dataclass(frozen=True)
class FrequencyGaps:
    """One record per (k, eps, mechanism): ratios of its errors to the reference."""

    ks: tuple[int, ...]
    eps: tuple[float, ...]
    records: tuple[dict, ...]
    quick: bool

    def to_frame(self) -> Any:
        pd = require("pandas", "FrequencyGaps.to_frame", "sweeps")
        return pd.DataFrame(list(self.records))

    def summary(self) -> dict:
        """Per k: the best deployed ratio (variance_uniform) at each eps and the reference used."""
        out: dict[str, Any] = {"quick": self.quick, "ks": list(self.ks), "eps": list(self.eps)}
        for k in self.ks:
            rows = [r for r in self.records if r["k"] == k]
            out[f"k={k}"] = {
                f"eps={e:g}": f"{min(r['ratio_uniform'] for r in rows if r['eps'] == e):.4g} "
                f"({next(r['reference'] for r in rows if r['eps'] == e)})"
                for e in self.eps
            }
        return out


def frequency_gaps(
    ks: Any = GAP_KS, eps: Any = GAP_EPS, *, quick: bool = False, progress: Any = None
) -> FrequencyGaps:
    """The gap table for every (k, eps) of the grid (``progress()`` is called after each)."""
    records = []
    for k in ks:
        for e in eps:
            res = compare(k, e)
            for row in res.rows:
                records.append(
                    {
                        "k": res.k,
                        "eps": res.eps,
                        "mechanism": row.mechanism,
                        "kind": row.kind,
                        "variance_uniform": row.variance_uniform,
                        "ratio_uniform": row.ratio_uniform,
                        "ratio_worst_case": row.ratio_worst_case,
                        "reference": res.reference,
                        "optimum_uniform": res.optimum_uniform,
                    }
                )
            if progress is not None:
                progress()
    return FrequencyGaps(tuple(int(k) for k in ks), tuple(float(e) for e in eps), tuple(records), quick)
