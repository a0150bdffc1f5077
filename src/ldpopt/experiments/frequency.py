"""The deployed frequency oracles' gap to the optimum against eps, for several k (``ldpopt
reproduce frequency``): :func:`frequency_gaps` tabulates :func:`ldpopt.frequency.compare.compare`
over a grid; each row says what the ratio is to (``reference``: the exact optimum, a certified
lower bound on it, or, without either, the best deployed mechanism)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ldpopt._extras import require
from ldpopt.frequency.compare import compare

__all__ = [
    "DOC_EPS",
    "DOC_KS",
    "GAP_EPS",
    "GAP_KS",
    "QUICK_GAP_EPS",
    "QUICK_GAP_KS",
    "FrequencyGaps",
    "frequency_gaps",
    "gap_table_markdown",
]

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
        """Per k and mechanism kind: its ratio (variance_uniform; subset selection: the better of
        its two sizes) at eps = 1 when on the grid and its largest over the grid; the references."""
        out: dict[str, Any] = {"quick": self.quick, "ks": list(self.ks), "eps": list(self.eps)}
        out["references"] = sorted({r["reference"] for r in self.records})
        for k in self.ks:
            rows = [r for r in self.records if r["k"] == k]
            table = {}
            for kind in dict.fromkeys(r["kind"] for r in rows):
                mine = [r for r in rows if r["kind"] == kind]
                # subset selection: the better of its two roundings at each eps
                best = {e: min(r["ratio_uniform"] for r in mine if r["eps"] == e) for e in self.eps}
                text = f"{best[1.0]:.4g} at eps=1, " if 1.0 in best else ""
                table[kind] = text + f"max {max(best.values()):.4g}"
            out[f"k={k}"] = table
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


#: the gap table of docs/frequency.md: its k and eps
DOC_KS = (4, 16, 64)
DOC_EPS = (0.5, 1.0, 2.0, 4.0)
_DOC_ROWS = (
    ("grr", "GRR"),
    ("sue", "SUE = basic RAPPOR"),
    ("oue", "OUE"),
    ("olh", "OLH (g = round(e^eps + 1))"),
    ("subset_floor", "subset, floor d"),
    ("subset_ceil", "subset, ceil d"),
    ("hadamard", "Hadamard response"),
)


def gap_table_markdown(ks: Any = DOC_KS, eps: Any = DOC_EPS) -> str:
    """The Markdown gap tables of docs/frequency.md: per k, one row per mechanism, one column per
    eps, variance_uniform over the reference (subset selection's d in brackets)."""
    parts = []
    for k in ks:
        tables = [compare(k, e) for e in eps]
        lines = [f"k = {k}", "", "| mechanism | " + " | ".join(f"eps = {e:g}" for e in eps) + " |"]
        lines.append("| --- |" + " ---: |" * len(tables))
        for key, label in _DOC_ROWS:
            cells = []
            for t in tables:
                if key.startswith("subset"):
                    subsets = [r for r in t.rows if r.kind == "subset"]
                    row = subsets[0] if key == "subset_floor" else subsets[-1]
                    d = row.mechanism.split("=")[1].rstrip(")")
                    cells.append(f"{row.ratio_uniform:.4f} (d={d})")
                else:
                    cells.append(f"{next(r for r in t.rows if r.kind == key).ratio_uniform:.4f}")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append(
            "| optimum variance_uniform | " + " | ".join(f"{t.optimum_uniform:.6g}" for t in tables) + " |"
        )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
