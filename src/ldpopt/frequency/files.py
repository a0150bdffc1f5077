r"""Frequency-mechanism files: how a deployed frequency oracle is written and read back.

A frequency mechanism is named by its kind, k, eps and size; its file is small whatever k::

    {
      "format": "ldpopt.frequency_mechanism",
      "format_version": 1,
      "library_version": "0.1.0",
      "kind": "olh",          # one of grr, sue, oue, basic_rappor, olh, subset, hadamard
      "k": 20,
      "eps": 1.0,
      "size": 4               # OLH's g, subset selection's d; null for the others
    }

:func:`read_frequency_mechanism` also reads a channel mechanism file (``ldpopt.mechanism``, the
format of :mod:`ldpopt.deploy.files`, as :meth:`FrequencyMechanism.channel(...).to_json
<ldpopt.Mechanism.to_json>` writes it) whose ``name`` is a kind: the mechanism is rebuilt from the
kind, the file's k (rows) and eps (and, for subset selection, d: the number of high entries per
column) and its channel must equal the file's matrix (relative 1e-12), else the file is refused.
OLH has no such file (its channel does not say g); use the frequency format.  Every problem
raises :class:`~ldpopt.errors.MechanismFileError` naming the file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ldpopt._atomic import atomic_write_text
from ldpopt._json import loads_strict
from ldpopt._version import library_version
from ldpopt.errors import MechanismFileError
from ldpopt.frequency.mechanisms import KINDS, FrequencyMechanism, make
from ldpopt.mechanism import Mechanism

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "read_frequency_mechanism", "write_frequency_mechanism"]

FORMAT_NAME = "ldpopt.frequency_mechanism"
FORMAT_VERSION = 1
#: a channel file must reproduce the named mechanism's channel to this relative accuracy (the
#: file stores floats exactly; both sides compute the same closed forms to a few ulps)
CHANNEL_RTOL = 1e-12
#: a channel's verified privacy level must be its eps within this (relative and absolute): the
#: level is the log of a ratio of two entries; a unary encoding's entry (the most rounded one) is
#: the exp of a sum of k + 1 <= 19 logs (2^k k <= CHANNEL_MAX_ENTRIES), each within u (eps + 1),
#: so |level - eps| <= 2 (k + 2) u (eps + 1) <= 42 u (eps + 1) < 2^-47 (eps + 1); 2^-40 leaves 100x
PRIVACY_LEVEL_TOL = 2.0**-40
_KEYS = {"format", "format_version", "library_version", "kind", "k", "eps", "size"}


def write_frequency_mechanism(mech: FrequencyMechanism, path: Any) -> Path:
    """Write ``mech`` as a frequency-mechanism file (module docstring); returns the path."""
    if not isinstance(mech, FrequencyMechanism):
        raise TypeError(f"mech must be a FrequencyMechanism, got {type(mech).__name__}")
    payload = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": library_version(),
        "kind": mech.kind,
        "k": mech.k,
        "eps": mech.eps,
        "size": mech.size if mech.kind in ("olh", "subset") else None,
    }
    return atomic_write_text(path, json.dumps(payload, indent=2) + "\n")


def _err(path: Any, message: str) -> MechanismFileError:
    return MechanismFileError(f"{path}: {message}")


def read_frequency_mechanism(path: Any) -> FrequencyMechanism:
    """Read a frequency-mechanism file, or a channel file whose name is a kind (module docstring)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _err(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _err(path, f"cannot read the file ({exc})") from None
    try:
        payload = loads_strict(text, path)
    except ValueError as exc:
        raise MechanismFileError(str(exc)) from None
    if not isinstance(payload, dict):
        raise _err(path, "not a mechanism file (a JSON object expected)")
    if payload.get("format") == "ldpopt.mechanism":
        return _from_channel_file(p)
    if payload.get("format") != FORMAT_NAME:
        raise _err(
            path, f"format must be {FORMAT_NAME!r} or 'ldpopt.mechanism', got {payload.get('format')!r}"
        )
    if payload.get("format_version") != FORMAT_VERSION:
        raise _err(path, f"format_version {payload.get('format_version')!r} is not supported (this is 1)")
    missing = _KEYS - set(payload)
    if missing:
        raise _err(path, f"missing field(s): {', '.join(sorted(missing))}")
    eps = payload["eps"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise _err(path, f"eps must be a number, got {eps!r}")
    try:
        return make(payload["kind"], payload["k"], float(eps), payload["size"])
    except (TypeError, ValueError) as exc:
        raise _err(path, f"invalid mechanism: {exc}") from None


def _from_channel_file(path: Path) -> FrequencyMechanism:
    try:
        mech = Mechanism.from_json(path)
    except MechanismFileError:
        raise
    if mech.name not in KINDS or mech.name == "olh":
        kinds = ", ".join(k for k in KINDS if k != "olh")
        raise _err(path, f"a channel file's name must be one of {kinds} to be read as a frequency mechanism")
    q = mech.matrix
    size = None
    if mech.name == "subset":
        col = q[:, 0]
        size = int(np.count_nonzero(col >= col.max() * (1 - CHANNEL_RTOL)))
    try:
        freq = make(mech.name, mech.num_inputs, mech.eps, size)
        ours = freq.channel().matrix
    except (TypeError, ValueError) as exc:
        raise _err(path, f"invalid {mech.name} mechanism: {exc}") from None
    if ours.shape != q.shape or not np.allclose(ours, q, rtol=CHANNEL_RTOL, atol=0.0):
        raise _err(path, f"the matrix is not the {freq.label} channel at k={freq.k}, eps={freq.eps!r}")
    if not math.isclose(freq.privacy_level, mech.eps, rel_tol=PRIVACY_LEVEL_TOL, abs_tol=PRIVACY_LEVEL_TOL):
        raise _err(path, "the channel's privacy level is not its eps")
    return freq
