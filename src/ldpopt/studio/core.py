"""What the studio computes, without the web: each function takes the fields of one request (a
JSON object), validates them with the library's own validators and returns a JSON-ready dict.

Nothing here keeps state between requests or touches the file system: the page sends the data
with every request, uploads arrive as bytes and downloads leave as text.  Bad input raises
``ValueError``/``TypeError`` with the library's message, which the page shows as it is.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

import ldpopt
from ldpopt._mechfile import mechanism_file_text
from ldpopt._numerics import rescale
from ldpopt._validation import (
    check_eps,
    check_labelled_pair,
    check_positive_int,
    check_real,
)
from ldpopt.decision import RISKS, DecisionProblem, optimal_channel
from ldpopt.deploy.estimate import mixture_proportion
from ldpopt.deploy.files import load_mechanism
from ldpopt.deploy.pairs import pair_columns, parse_distribution_text
from ldpopt.deploy.sampling import decode_outputs
from ldpopt.deploy.shuffle import central_epsilon
from ldpopt.deploy.testing import LikelihoodRatioTest
from ldpopt.divergences import BUILTIN_NAMES, FDivergence, egamma, get_divergence, renyi
from ldpopt.mechanism import Mechanism

__all__ = [
    "MAX_K",
    "MAX_MATRIX_CELLS",
    "MAX_CURVE_POINTS",
    "MAX_PROBLEM_INPUTS",
    "as_number",
    "pair_payload",
    "read_problem",
    "options",
    "parse_pasted",
    "design",
    "curve",
    "deployment",
    "mechanism_file",
    "decide",
    "columns",
    "reports",
    "MAX_REPORTS",
    "request_field",
    "request_divergence",
    "request_max_outputs",
    "request_pair",
    "request_level",
    "finite_or_none",
]

#: the studio designs for alphabets up to this size (the library and the CLI have no such limit);
#: a design at this size takes well under a second, and the page lists every symbol
MAX_K = 10_000
#: the channel is sent for drawing only up to this many cells (a 1000 x 1000 heat map)
MAX_MATRIX_CELLS = 1_000_000
#: at most this many privacy levels in a trade-off curve
MAX_CURVE_POINTS = 201
#: decision problems with at most this many inputs (the exact LPs grow with 2^m below the
#: column-generation size; the page should answer within seconds)
MAX_PROBLEM_INPUTS = 20
#: a reports upload holds at most this many reports (a 2 MB CSV of short labels)
MAX_REPORTS = 1_000_000
#: the divergences with a parameter: name -> (factory, parameter name, default)
FAMILIES: dict[str, tuple[Any, str, float]] = {
    "egamma": (egamma, "gamma", 2.0),
    "renyi": (renyi, "alpha", 2.0),
}


# ---------------------------------------------------------------------------------------------
# fields of a request
# ---------------------------------------------------------------------------------------------
def as_number(value: Any) -> Any:
    """A form field as a number where it reads as one (``"0.5"``, ``"inf"``); anything else as it
    came, for the library's validator to refuse with its own message."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    return value


def request_field(req: Mapping, key: str, default: Any = None) -> Any:
    value = req.get(key, default)
    return default if value is None or value == "" else as_number(value)


def divergence_names() -> list[str]:
    """The utility divergences the page offers: the library's built-in names, then its families
    with a parameter, then the divergence objects the library exports by name (``chernoff``)."""
    names = list(BUILTIN_NAMES) + list(FAMILIES)
    extra = [n for n in ("chernoff",) if n not in names and callable(getattr(ldpopt, n, None))]
    return names + extra


def request_divergence(req: Mapping) -> str | FDivergence:
    name = req.get("divergence") or "kl"
    if not isinstance(name, str):
        raise TypeError(f"divergence must be a name, got divergence={name!r}")
    if name in FAMILIES:
        factory, pname, default = FAMILIES[name]
        return factory(request_field(req, "param", default))
    return get_divergence(name) if name in BUILTIN_NAMES else name


def _eps(req: Mapping, key: str = "eps") -> float:
    return check_eps(request_field(req, key), name=key)


def request_max_outputs(req: Mapping) -> int | None:
    return check_positive_int(request_field(req, "max_outputs"), "max_outputs", allow_none=True)


def request_pair(req: Mapping) -> tuple[Any, Any, list | None]:
    """The pair of the request (``p0``, ``p1``: counts or probabilities; ``labels`` optional), as
    the library validates it; labelled pairs come back as dicts label -> probability."""
    pair: list[Any] = [req.get("p0"), req.get("p1")]
    labels = req.get("labels")
    for name, p in zip(("p0", "p1"), pair, strict=True):
        if not isinstance(p, list):
            raise TypeError(f"{name} must be a list of numbers, got {type(p).__name__}")
        if len(p) > MAX_K:
            raise ValueError(f"{name} has {len(p)} symbols; the studio designs for at most {MAX_K}")
    p0, p1 = ([as_number(x) for x in p] for p in pair)
    if labels is not None and (not isinstance(labels, list) or len(labels) != len(p0)):
        raise ValueError("labels must be a list with one label per symbol")
    a, b, _ = check_labelled_pair(p0, p1, normalize=True)
    if labels is None:
        return a, b, None
    labels = [str(x) for x in labels]
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels must be distinct, got {len(labels) - len(set(labels))} repeated")
    return dict(zip(labels, a, strict=True)), dict(zip(labels, b, strict=True)), labels


def finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _normalised(value: float, denom: float) -> float | None:
    """value / D_f(P0||P1), clipped to [0, 1] as ``OptimalMechanismResult.normalized_value``
    (data processing: outside only by rounding); None where undefined."""
    if not (denom and math.isfinite(denom) and math.isfinite(value)):
        return None
    return min(max(value / denom, 0.0), 1.0)


# ---------------------------------------------------------------------------------------------
# the data panel
# ---------------------------------------------------------------------------------------------
def parse_pasted(p0_text: Any, p1_text: Any) -> dict:
    """Two pasted distributions, ``"a=3, b=5"`` (one pair per comma or line) or ``"3, 5"``,
    counts or probabilities (:func:`ldpopt.deploy.pairs.parse_distribution_text`), as the
    validated pair the page sends with every request."""
    return pair_payload(parse_distribution_text(p0_text, "p0"), parse_distribution_text(p1_text, "p1"))


def pair_payload(p0: Any, p1: Any) -> dict:
    """A pair (arrays, lists or dicts label -> value; counts or probabilities) validated by the
    library and normalised, as ``{"labels", "p0", "p1", "k"}``."""
    a, b, labels = check_labelled_pair(p0, p1, normalize=True)
    if a.shape[0] > MAX_K:
        raise ValueError(f"the pair has {a.shape[0]} symbols; the studio designs for at most {MAX_K}")
    names = [str(x) for x in labels] if labels is not None else [str(i) for i in range(a.shape[0])]
    return {"labels": names, "p0": a.tolist(), "p1": b.tolist(), "k": int(a.shape[0])}


def options() -> dict:
    """What the page's controls offer."""
    return {
        "divergences": divergence_names(),
        "families": {n: {"parameter": p, "default": d} for n, (_, p, d) in FAMILIES.items()},
        "limits": {
            "max_k": MAX_K,
            "max_curve_points": MAX_CURVE_POINTS,
            "max_problem_inputs": MAX_PROBLEM_INPUTS,
        },
        "version": ldpopt.__version__,
    }


# ---------------------------------------------------------------------------------------------
# design, trade-off, deployment
# ---------------------------------------------------------------------------------------------
def _mechanisms(a: Any, b: Any, eps: float, div: Any, l: int | None) -> tuple[Any, list]:
    res = ldpopt.optimal_mechanism(a, b, eps, div, l)
    assert res.mechanism is not None  # the SPR solvers always return their mechanism
    k = res.mechanism.num_inputs
    return res, [
        ("optimal", res.mechanism),
        ("binary", ldpopt.binary_mechanism(a, b, eps)),
        ("k-RR", ldpopt.randomized_response(k, eps)),
    ]


def design(req: Mapping) -> dict:
    """The optimal mechanism for the request's pair, eps, divergence and output budget, with the
    binary mechanism and k-ary RR for comparison."""
    a, b, labels = request_pair(req)
    eps, div, l = _eps(req), request_divergence(req), request_max_outputs(req)
    res = ldpopt.optimal_mechanism(a, b, eps, div, l)
    # the SPR solvers always return their mechanism and its partition
    assert res.mechanism is not None and res.partition is not None
    names = labels or [str(i) for i in range(len(res.mechanism.matrix))]
    binary = ldpopt.binary_mechanism(a, b, eps)
    k = len(names)
    values = [
        ("optimal", res.num_outputs, res.value),
        ("binary", binary.num_outputs, binary.utility(a, b, div)),
        ("k-RR", k, get_divergence(div)(*_rr_outputs(*_vectors(a, b), k, eps))),
    ]
    rows = [
        {
            "mechanism": name,
            "outputs": outputs,
            "value": finite_or_none(value),
            "normalised": _normalised(value, res.input_divergence),
        }
        for name, outputs, value in values
    ]
    matrix = res.mechanism.matrix
    return {
        "eps": eps if math.isfinite(eps) else "inf",
        "divergence": res.divergence,
        "max_outputs": l,
        "value": finite_or_none(res.value),
        "normalised": _normalised(res.value, res.input_divergence),
        "input_divergence": finite_or_none(res.input_divergence),
        "num_outputs": res.num_outputs,
        "method": res.method,
        "partition": [[names[i] for i in block] for block in res.partition],
        "labels": names,
        "matrix": matrix.tolist() if matrix.size <= MAX_MATRIX_CELLS else None,
        "comparison": rows,
    }


def _grid(req: Mapping) -> np.ndarray:
    lo, hi = _eps(req, "eps_min"), _eps(req, "eps_max")
    points = check_positive_int(request_field(req, "points", 101), "points")
    if not (math.isfinite(hi) and lo < hi):
        raise ValueError(f"eps_max must be finite and > eps_min, got eps_min={lo!r}, eps_max={hi!r}")
    if not 2 <= points <= MAX_CURVE_POINTS:
        raise ValueError(f"points must be between 2 and {MAX_CURVE_POINTS}, got points={points}")
    return np.linspace(lo, hi, points)


def _vectors(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """The pair of :func:`request_pair` (arrays, or dicts label -> probability) as two float arrays."""
    u, v = (np.fromiter(p.values(), float) if isinstance(p, dict) else np.asarray(p, float) for p in (a, b))
    return u, v


def _rr_outputs(u: np.ndarray, v: np.ndarray, k: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The output laws of k-ary RR without its k x k matrix (10^8 cells at the studio's largest k):
    :math:`M(y) = (e^\varepsilon p_y + 1 - p_y) / (e^\varepsilon + k - 1) = (c + A p_y) / (1 + (k-1) c)`
    with :math:`c = e^{-\varepsilon}`, :math:`A = 1 - c` (:func:`ldpopt._numerics.rescale`)."""
    r = rescale(eps)
    den = 1.0 + (k - 1) * r.c
    return (r.c + r.A * u) / den, (r.c + r.A * v) / den


def curve(req: Mapping) -> dict:
    """Utility against eps over the request's range: the optimal value (one batched
    :func:`ldpopt.sweep`), the binary mechanism and k-RR; the optimal number of outputs."""
    a, b, _ = request_pair(req)
    div, l, grid = request_divergence(req), request_max_outputs(req), _grid(req)
    sw = ldpopt.sweep([a], [b], grid, div, l, progress=False)
    k = len(a)
    denom = float(sw.input_divergence[0])
    series: dict[str, list] = {"binary": [], "k-RR": []}
    u, v = _vectors(a, b)
    measure = get_divergence(div)
    for eps in grid:
        series["binary"].append(ldpopt.binary_mechanism(a, b, eps).utility(a, b, div))
        series["k-RR"].append(measure(*_rr_outputs(u, v, k, float(eps))))
    out = {"optimal": [float(v) for v in sw.values[0]], **series}
    return {
        "eps": grid.tolist(),
        "divergence": sw.divergence,
        "input_divergence": finite_or_none(denom),
        "value": {n: [finite_or_none(v) for v in vs] for n, vs in out.items()},
        "normalised": {n: [_normalised(v, denom) for v in vs] for n, vs in out.items()},
        "num_outputs": [int(n) for n in sw.num_outputs[0]],
    }


def request_level(req: Mapping, key: str) -> float:
    return check_real(request_field(req, key, 0.05), key)


def deployment(req: Mapping) -> dict:
    """Reports needed for type-I error <= alpha and type-II error <= beta, per mechanism."""
    a, b, _ = request_pair(req)
    eps, div, l = _eps(req), request_divergence(req), request_max_outputs(req)
    alpha, beta = request_level(req, "alpha"), request_level(req, "beta")
    _, mechs = _mechanisms(a, b, eps, div, l)
    rows = []
    for name, mech in mechs:
        try:
            s = ldpopt.sample_size(mech, a, b, alpha, beta)
        except ValueError as exc:
            if name == "optimal":  # the same alpha/beta problem for every mechanism: say it once
                raise
            rows.append({"mechanism": name, "n": None, "message": str(exc)})
            continue
        rows.append(
            {
                "mechanism": name,
                "n": s.n,
                "method": s.method,
                "exact": s.exact,
                "chernoff_n": s.chernoff_n,
                "stein_n": s.stein_n,
                "message": s.message,
            }
        )
    return {"alpha": alpha, "beta": beta, "rows": rows}


def mechanism_file(req: Mapping) -> str:
    """The mechanism file (the format of ``ldpopt export``) of the request's optimal design, or of
    one of its baselines (``which``: ``optimal``, ``binary`` or ``k-RR``)."""
    a, b, _ = request_pair(req)
    eps, div, l = _eps(req), request_divergence(req), request_max_outputs(req)
    res, mechs = _mechanisms(a, b, eps, div, l)
    which = req.get("which") or "optimal"
    chosen = dict(mechs).get(which)
    if chosen is None:
        raise ValueError(f"which must be one of {', '.join(n for n, _ in mechs)}, got which={which!r}")
    mech: Mechanism = chosen
    u, v = mech.input_pair(a, b)
    value = res.value if which == "optimal" else mech.utility(a, b, div)
    return mechanism_file_text(mech, p0=u, p1=v, divergence=res.divergence, value=value)


# ---------------------------------------------------------------------------------------------
# decision problems
# ---------------------------------------------------------------------------------------------
def read_problem(data: bytes, name: str) -> DecisionProblem:
    """A ``decide`` problem file (``docs/decision.md``) from its bytes, read by
    :meth:`ldpopt.DecisionProblem.from_json` (the library's reader and its messages), refused past
    :data:`MAX_PROBLEM_INPUTS` inputs."""
    prob = DecisionProblem.from_json(data, filename=name)
    if prob.num_inputs > MAX_PROBLEM_INPUTS:
        raise ValueError(
            f"{name}: {prob.num_inputs} inputs; the studio solves problems with at most {MAX_PROBLEM_INPUTS}"
        )
    return prob


def _channel(prob: DecisionProblem, res: Any) -> dict:
    inputs = (
        [str(x) for x in prob.labels] if prob.labels is not None else [str(i) for i in range(prob.num_inputs)]
    )
    actions = [str(a) for a in (prob.action_labels or range(prob.num_actions))]
    outputs = []
    for j, subset in enumerate(res.weights):
        rule = None if res.decision_rule is None else res.decision_rule[j]
        decision = {} if rule is None else {actions[a]: float(rule[a]) for a in np.flatnonzero(rule > 0)}
        outputs.append({"subset": [inputs[i] for i in sorted(subset)], "decision": decision})
    return {
        "risk": res.risk,
        "value": finite_or_none(res.value),
        "method": res.method,
        "status": res.status,
        "message": res.message,
        "num_outputs": res.num_outputs,
        "inputs": inputs,
        "matrix": None if res.mechanism is None else res.mechanism.matrix.tolist(),
        "outputs": outputs,
    }


def decide(data: bytes, name: str, eps: Any) -> dict:
    """The optimal eps-LDP channel of an uploaded decision problem, for the Bayes and the minimax
    risk."""
    prob = read_problem(data, name)
    e = check_eps(as_number(eps), allow_inf=False)
    results = [_channel(prob, optimal_channel(prob, e, risk=risk)) for risk in RISKS]
    return {
        "name": prob.name,
        "eps": e,
        "inputs": prob.num_inputs,
        "parameters": prob.num_parameters,
        "actions": prob.num_actions,
        "results": results,
    }


# ---------------------------------------------------------------------------------------------
# uploads: which columns hold the pair
# ---------------------------------------------------------------------------------------------
def columns(data: bytes, name: str) -> dict:
    """The columns of an uploaded pair file and the guess of its label, P0 and P1 columns
    (:func:`ldpopt.deploy.pairs.pair_columns`), for the page's column pickers."""
    cols = pair_columns(data, filename=name)
    return {
        "columns": list(cols.columns),
        "numeric": list(cols.numeric),
        "guess": {"label": cols.label, "p0": cols.p0, "p1": cols.p1},
    }


# ---------------------------------------------------------------------------------------------
# the reports panel: test, estimate, shuffled guarantee
# ---------------------------------------------------------------------------------------------
def _report_column(rows: list[list[str]]) -> tuple[str, int]:
    header = [c.strip() for c in rows[0]]
    if "report" in header:
        return "report", header.index("report")
    if len(header) == 1:
        return header[0], 0
    raise ValueError(
        f"reports: no column 'report' (the column ldpopt privatize writes); columns: {', '.join(header)}"
    )


def _report_counts(text: Any, mech: Mechanism) -> np.ndarray:
    """Counts per output of a reports CSV (its column ``report``, or its only column; output labels
    or output indices, as ``ldpopt privatize`` writes them)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("reports: upload a CSV of reports (the output of ldpopt privatize)")
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise ValueError("reports: the file has a header but no reports")
    if len(rows) - 1 > MAX_REPORTS:
        raise ValueError(f"reports: {len(rows) - 1} reports; the studio reads at most {MAX_REPORTS}")
    col, j = _report_column(rows)
    shown = [str(x) for x in decode_outputs(mech, np.arange(mech.num_outputs))]
    index = {name: i for i, name in enumerate(shown)}
    index.update({str(i): i for i in range(mech.num_outputs)} if mech.output_labels is None else {})
    counts = np.zeros(mech.num_outputs, dtype=np.int64)
    for n, r in enumerate(rows[1:], start=2):
        value = r[j].strip() if j < len(r) else ""
        if value not in index:
            raise ValueError(
                f"reports: row {n}: {value!r} in column {col!r} is not an output of the mechanism "
                f"(its outputs: {', '.join(shown[:10])}{', ...' if len(shown) > 10 else ''})"
            )
        counts[index[value]] += 1
    return counts


def _reports_mechanism(req: Mapping) -> tuple[Mechanism, Any, Any, str]:
    """The mechanism that privatized the reports, and its P0, P1: the uploaded mechanism file's
    (with its stored pair, else the page's pair), or the page's current design."""
    text = req.get("mechanism_file")
    if text:
        if not isinstance(text, str):
            raise TypeError("mechanism_file must be the file's text")
        mf = load_mechanism(text.encode("utf-8"), filename=str(req.get("mechanism_name") or "mechanism.json"))
        if mf.p0 is not None:
            return mf.mechanism, mf.p0, mf.p1, "uploaded mechanism file"
        a, b, _ = request_pair(req)
        return mf.mechanism, a, b, "uploaded mechanism file, the page's P0 and P1"
    a, b, _ = request_pair(req)
    _, mechs = _mechanisms(a, b, _eps(req), request_divergence(req), request_max_outputs(req))
    which = req.get("which") or "optimal"
    chosen = dict(mechs).get(which)
    if chosen is None:
        raise ValueError(f"which must be one of {', '.join(n for n, _ in mechs)}, got which={which!r}")
    return chosen, a, b, f"the current design ({which})"


def _test_summary(test: LikelihoodRatioTest, counts: np.ndarray) -> dict:
    res = test.decide_counts(counts)
    m0, m1 = test.output_distributions
    llr = test.per_report_llr
    n = int(counts.sum())
    with np.errstate(invalid="ignore"):  # 0 * inf where an output is impossible: it adds nothing
        mean0 = float(np.sum(np.where(m0 > 0, m0 * llr, 0.0)))
        mean1 = float(np.sum(np.where(m1 > 0, m1 * llr, 0.0)))
    if res.decision == 1:
        verdict = "reject H0: the reports are not consistent with P0"
    else:
        verdict = "keep H0: the reports are consistent with P0"
    return {
        "decision": res.decision,
        "verdict": verdict,
        "llr": finite_or_none(res.llr),
        "expected_llr_p0": finite_or_none(n * mean0),
        "expected_llr_p1": finite_or_none(n * mean1),
        "direction": _direction(res.llr, n * mean0, n * mean1),
        "threshold": finite_or_none(res.threshold),
        "p_value": res.p_value,
        "method": res.method,
    }


def _direction(llr: float, e0: float, e1: float) -> str:
    """Where the observed log-likelihood ratio lies between its expectations under P0 and P1."""
    if not (math.isfinite(e0) and math.isfinite(e1) and e0 < e1):
        return "P0 and P1 give these outputs the same law: the reports cannot lean either way"
    where = (llr - e0) / (e1 - e0)
    if where <= 0.0:
        return "the log-likelihood ratio is at or below its mean under P0: nothing leans toward P1"
    if where >= 1.0:
        return "the log-likelihood ratio is at or above its mean under P1: the reports lean fully toward P1"
    return (
        f"the log-likelihood ratio lies {where:.0%} of the way from its mean under P0 to its mean "
        "under P1: a mixture of the two fits; see the estimated proportion"
    )


def _shuffle_summary(eps0: float, n: int, delta: float) -> dict:
    out: dict[str, Any] = {"delta": delta, "n": n, "eps0": eps0 if math.isfinite(eps0) else None}
    try:
        bound = central_epsilon(eps0, n, delta)
    except ValueError as exc:
        return {**out, "value": None, "method": None, "message": str(exc)}
    return {**out, "value": bound.value, "method": bound.method, "message": bound.validity}


def reports(req: Mapping) -> dict:
    """The reports panel: the likelihood-ratio test of H0: P0, the estimated proportion of P1 in a
    mixture (with its interval) and the central eps of the reports once shuffled."""
    mech, a, b, source = _reports_mechanism(req)
    counts = _report_counts(req.get("reports"), mech)
    alpha = request_level(req, "alpha")
    delta = check_real(request_field(req, "delta", 1e-6), "delta")
    confidence = check_real(request_field(req, "confidence", 0.95), "confidence")
    test = LikelihoodRatioTest(mech, a, b, alpha)
    est = mixture_proportion(mech, p0=a, p1=b, reports=None, counts=counts, confidence=confidence)
    n = int(counts.sum())
    names = [str(x) for x in decode_outputs(mech, np.arange(mech.num_outputs))]
    return {
        "source": source,
        "n": n,
        "eps": mech.eps if math.isfinite(mech.eps) else None,
        "counts": [{"output": names[j], "count": int(c)} for j, c in enumerate(counts)],
        "alpha": alpha,
        "test": _test_summary(test, counts),
        "estimate": {
            "value": est.value,
            "lower": est.lower,
            "upper": est.upper,
            "confidence": est.confidence,
        },
        "shuffle": _shuffle_summary(mech.eps, n, delta),
    }
