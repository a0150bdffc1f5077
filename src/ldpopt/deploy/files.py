r"""Versioned mechanism files: write a designed mechanism, read it back re-validated.

Schema (``format_version`` 1; a JSON object, all keys required, ``null`` where absent)::

    {
      "format": "ldpopt.mechanism",
      "format_version": 1,
      "library_version": "0.1.0",          # ldpopt that wrote the file
      "name": "spr",
      "eps": 1.0,                          # or the string "inf"
      "labels": ["a", "b", ...] | null,     # input symbols (str or int)
      "output_labels": [...] | null,
      "matrix": [[Q(y|x) ...], ...],       # rows = inputs, floats written exactly (shortest repr)
      "partition": [[0, 3], [1, 2]] | null,  # SPR blocks (symbol indices) behind the outputs
      "divergence": "kl" | null,           # the utility the mechanism was designed for
      "value": 0.123 | null,               # its optimal utility
      "p0": [...] | null, "p1": [...] | null,            # the hypotheses (optional)
      "p0_sha256": "..." | null, "p1_sha256": "..." | null,  # digests of the hypotheses
      "max_outputs": 3,                    # optional: the design's output budget (binding or not)
      "content_sha256": "..."              # SHA-256 of every other field (canonical JSON)
    }

Floats are written with Python's shortest round-trip ``repr``, so a write/read round trip is
lossless (bit-identical matrix, eps, distributions, labels of type str/int).  Loading checks
the structure, the content digest (an *integrity* check against accidental or naive edits;
it is not a signature: anyone can recompute it), then re-validates everything: rows sum to
1, the matrix is eps-LDP (the :class:`~ldpopt.Mechanism` check) *and* can be realised as an
exactly eps-LDP channel (:func:`ldpopt.deploy.sampling.realise`), the partition is a partition of
the inputs, the stored distributions match their digests.  Any failure raises
:class:`MechanismFileError` (a ``ValueError``) naming the file and the problem.

The digests let a mechanism file travel without the hypotheses (``include_distributions=False``)
while the analyst can still check that the p0/p1 they test with are the ones it was designed for.

The format itself (schema, digests, the reader and the writer of a validated payload) is
:mod:`ldpopt._mechfile`, below :mod:`ldpopt.mechanism` so that :meth:`Mechanism.to_json
<ldpopt.Mechanism.to_json>` and :meth:`Mechanism.from_json <ldpopt.Mechanism.from_json>` can use
it; this module is its public face.  JSON is read by the library's one strict reader
(:func:`ldpopt._json.loads_strict`: no ``NaN``/``Infinity``, no number beyond the float range).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ldpopt._mechfile import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MechanismFile,
    content_digest,
    distribution_digest,
    read_mechanism_file,
)
from ldpopt.errors import MechanismFileError
from ldpopt.mechanism import Mechanism, as_mechanism

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MechanismFile",
    "MechanismFileError",
    "content_digest",
    "distribution_digest",
    "load_mechanism",
    "save_mechanism",
]


def save_mechanism(
    obj: Any,
    path: Any,
    *,
    p0: Any = None,
    p1: Any = None,
    divergence: Any = None,
    value: float | None = None,
    include_distributions: bool = True,
    normalize: bool = False,
    max_outputs: int | None = None,
) -> Path:
    """Write a mechanism (or an :class:`~ldpopt.OptimalMechanismResult`) as a versioned JSON file.

    Parameters
    ----------
    obj : Mechanism or OptimalMechanismResult
        A result also provides ``divergence`` and ``value``.
    path : str or Path
        Written atomically (temporary file in the same folder, then ``os.replace``).
    p0, p1 : optional
        The hypotheses the mechanism was designed for (dict/Series aligned with the labels).
        Their digests are always stored when given; the values too unless
        ``include_distributions=False``.
    divergence, value : optional
        Override or supply the design divergence and its value.
    normalize : bool
        Rescale ``p0`` and ``p1`` to sum to 1 (for counts).
    max_outputs : int, optional
        The output budget of the design (a result supplies its own), recorded in the file as
        ``max_outputs`` whether it binds or not.
    """
    mech = as_mechanism(obj, "obj")
    if divergence is None:
        divergence = getattr(obj, "divergence", None)
    if value is None and obj is not mech:
        value = getattr(obj, "value", None)
    if max_outputs is None and obj is not mech:
        max_outputs = getattr(obj, "max_outputs", None)
    return mech.to_json(
        path,
        p0=p0,
        p1=p1,
        divergence=divergence,
        value=value,
        include_distributions=include_distributions,
        normalize=normalize,
        max_outputs=max_outputs,
    )


def load_mechanism(path: Any, *, filename: str | None = None) -> MechanismFile:
    """Read a mechanism file and re-validate it (see the module docstring); raises
    :class:`MechanismFileError` with a clear message on any problem.

    ``path`` is the file's path, or its content in memory (``bytes`` or a binary file object)
    with ``filename`` naming it, as :func:`ldpopt.read_pair` reads uploads."""
    return read_mechanism_file(path, Mechanism, filename=filename)
