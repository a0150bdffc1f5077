"""The studio's "check a mechanism" panel and its "target" mode, without the web.

* :func:`check` - a pasted or uploaded channel matrix (a mechanism file, CSV, ``.npy`` or JSON):
  its exact eps (:func:`ldpopt.certify_epsilon`) and, when a pair with as many symbols as the
  matrix has rows is loaded, its utility next to the optimal mechanism's at the same eps;
* :func:`target` - the smallest eps whose optimal mechanism's test reaches (alpha, beta) with n
  reports (:func:`ldpopt.minimum_epsilon`).

Like :mod:`ldpopt.studio.core`: one request's fields in, a JSON-ready dict out, the library's
``ValueError``/``TypeError`` for bad input.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

import ldpopt
from ldpopt.deploy.certify import ChannelFile, certify_epsilon, parse_channel_text, read_channel
from ldpopt.deploy.target import minimum_epsilon
from ldpopt.divergences import get_divergence
from ldpopt.studio import core

__all__ = ["check", "target", "TARGET_DIVERGENCES"]

#: the designs the target search runs (its test needs the Chernoff or KL design); the default is chernoff
TARGET_DIVERGENCES = ("chernoff", "kl")
#: the digits of the exact ratio shown in full (a ratio of tiny floats has hundreds)
_RATIO_DIGITS = 60


def _channel(req: Mapping) -> ChannelFile:
    """The request's channel: ``file`` (base64 content) named by ``name``, else ``text``."""
    data, name = req.get("file"), req.get("name")
    if data is not None:
        if not isinstance(data, str) or not isinstance(name, str) or not name:
            raise ValueError("an uploaded matrix needs its content (base64) and its file name")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{name}: the upload is not valid base64") from None
        return read_channel(raw, filename=name)
    text = req.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("paste a matrix (one row per line) or upload a file")
    return parse_channel_text(text, "the pasted matrix")


def _ratio_text(r: Any) -> str | None:
    if r is None:
        return None
    text = f"{r.numerator}/{r.denominator}"
    return text if len(text) <= _RATIO_DIGITS else f"{float(r):.17g} (a ratio of {len(text)} digits)"


def _aligned(ch: ChannelFile, labels: list | None, k: int) -> np.ndarray | None:
    """The channel's rows in the order of the pair's symbols, or None when they do not match."""
    m = np.asarray(ch.matrix, dtype=float)
    if m.shape[0] != k:
        return None
    if ch.labels is None or labels is None:
        return m
    names = [str(x) for x in ch.labels]
    if set(names) != set(labels):
        return m if names == [str(i) for i in range(k)] else None
    pos = {n: i for i, n in enumerate(names)}
    return m[[pos[n] for n in labels]]


def _beside(req: Mapping, ch: ChannelFile, eps: float) -> dict:
    """The checked channel's utility next to the optimal mechanism's at the same eps."""
    if req.get("p0") is None:
        return {"note": "load a pair to compare with the optimal mechanism"}
    a, b, labels = core.request_pair(req)
    k = len(a)
    m = _aligned(ch, labels, k)
    if m is None:
        return {"note": f"the matrix has {ch.matrix.shape[0]} rows, the pair {k} symbols: no comparison"}
    if not (0 < eps < math.inf):
        return {"note": f"eps = {eps:g}: the optimal mechanism is compared at a finite eps > 0 only"}
    div = core.request_divergence(req)
    u = np.array(list(a.values()) if isinstance(a, dict) else a, dtype=float)
    v = np.array(list(b.values()) if isinstance(b, dict) else b, dtype=float)
    m = m / m.sum(axis=1, keepdims=True)
    checked = float(get_divergence(div)(u @ m, v @ m))
    res = ldpopt.optimal_mechanism(a, b, eps, div)
    blocks = " | ".join(", ".join(str(x) for x in block) for block in (res.labelled_partition or ()))
    return {
        "divergence": res.divergence,
        "eps": eps,
        "rows": [
            {
                "mechanism": "checked",
                "outputs": int(m.shape[1]),
                "value": core.finite_or_none(checked),
                "blocks": None,
            },
            {
                "mechanism": "optimal at the same eps",
                "outputs": res.num_outputs,
                "value": core.finite_or_none(res.value),
                "blocks": blocks,
            },
        ],
    }


def check(req: Mapping) -> dict:
    """The exact eps of the request's channel, the worst pair, and the optimal mechanism beside it."""
    ch = _channel(req)
    if ch.matrix.size > core.MAX_MATRIX_CELLS:
        raise ValueError(
            f"the matrix has {ch.matrix.size} entries; the studio checks at most {core.MAX_MATRIX_CELLS}"
        )
    cert = certify_epsilon(
        ch.matrix, labels=ch.labels, output_labels=ch.output_labels, normalize=bool(req.get("normalize"))
    )
    finite = math.isfinite(cert.epsilon)
    return {
        "epsilon": cert.epsilon if finite else "inf",
        "epsilon_upper": cert.epsilon_upper if finite else "inf",
        "worst_inputs": [str(x) for x in cert.inputs],
        "worst_output": str(cert.output),
        "max_ratio": _ratio_text(cert.max_ratio),
        "num_inputs": cert.num_inputs,
        "num_outputs": cert.num_outputs,
        "file_eps": None if ch.claimed_eps is None else core.finite_or_none(ch.claimed_eps),
        "kind": ch.kind,
        "message": cert.message,
        "beside": _beside(req, ch, cert.epsilon_upper),
    }


def target(req: Mapping) -> dict:
    """The smallest eps at which the optimal mechanism's test reaches (alpha, beta) with n reports."""
    a, b, _ = core.request_pair(req)
    n = core.request_field(req, "n")
    n = int(n) if isinstance(n, float) and n.is_integer() else n  # "200" from a form field
    alpha, beta = core.request_level(req, "alpha"), core.request_level(req, "beta")
    div = req.get("divergence") or "chernoff"
    if div not in TARGET_DIVERGENCES:
        raise ValueError(
            f"divergence must be one of {', '.join(map(repr, TARGET_DIVERGENCES))} for the target search "
            f"(the design the test uses), got divergence={div!r}"
        )
    r = minimum_epsilon(
        a, b, n=n, alpha=alpha, beta=beta, divergence=div, max_outputs=core.request_max_outputs(req)
    )
    assert r.mechanism is not None  # the test search always returns its mechanism
    return {
        "eps": r.eps,
        "eps_below": r.eps_below,
        "type_ii": r.value,
        "size": r.size,
        "method": r.method,
        "divergence": div,
        "num_outputs": r.mechanism.num_outputs,
        "n": r.n,
        "message": r.message,
    }
