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
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from ldpopt._atomic import atomic_write_text
from ldpopt.errors import MechanismFileError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MechanismFile",
    "MechanismFileError",
    "distribution_digest",
    "load_mechanism",
    "save_mechanism",
]

FORMAT_NAME = "ldpopt.mechanism"
FORMAT_VERSION = 1
_KEYS = (
    "format",
    "format_version",
    "library_version",
    "name",
    "eps",
    "labels",
    "output_labels",
    "matrix",
    "partition",
    "divergence",
    "value",
    "p0",
    "p1",
    "p0_sha256",
    "p1_sha256",
    "content_sha256",
)



@dataclass(frozen=True)
class MechanismFile:
    """Contents of a mechanism file.

    Attributes
    ----------
    mechanism : Mechanism
        Re-validated mechanism (labels, output labels, partition, name restored).
    p0, p1 : ndarray or None
        The hypotheses (in the mechanism's input order) when the file stores them.
    p0_sha256, p1_sha256 : str or None
        Their digests (present even when the distributions are not stored).
    divergence : str or None
    value : float or None
    format_version : int
    library_version : str
    """

    mechanism: Any
    p0: np.ndarray | None
    p1: np.ndarray | None
    p0_sha256: str | None
    p1_sha256: str | None
    divergence: str | None
    value: float | None
    format_version: int
    library_version: str

    def matches(self, p0: Any, p1: Any) -> bool:
        """True when (p0, p1) have the digests stored in the file (False if none stored)."""
        if self.p0_sha256 is None or self.p1_sha256 is None:
            return False
        u, v = self.mechanism._pair(p0, p1)
        return distribution_digest(u) == self.p0_sha256 and distribution_digest(v) == self.p1_sha256


def distribution_digest(p: Any) -> str:
    """SHA-256 of a distribution's exact float values (shortest-repr JSON list), hex."""
    values = [float(x) for x in np.asarray(p, dtype=float).ravel()]
    text = "ldpopt-distribution-v1:" + json.dumps(values, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _content_digest(payload: dict) -> str:
    body = {k: v for k, v in payload.items() if k != "content_sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _label_list(labels: Any, what: str) -> list | None:
    if labels is None:
        return None
    out: list[int | str] = []
    for lab in labels:
        if isinstance(lab, (bool, np.bool_)):
            raise TypeError(f"{what} must be str or int to be saved, got {lab!r}")
        if isinstance(lab, (np.integer, int)):
            out.append(int(lab))
        elif isinstance(lab, (np.str_, str)):
            out.append(str(lab))
        else:
            raise TypeError(
                f"{what} must be str or int to be saved, got {lab!r} of type {type(lab).__name__}"
            )
    return out


def _library_version() -> str:
    import ldpopt

    return str(getattr(ldpopt, "__version__", "0.0.0"))


def save_mechanism(
    obj: Any,
    path: Any,
    *,
    p0: Any = None,
    p1: Any = None,
    divergence: Any = None,
    value: float | None = None,
    include_distributions: bool = True,
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
    """
    from ldpopt.divergences import FDivergence

    mech = getattr(obj, "mechanism", obj)
    if not hasattr(mech, "matrix") or not hasattr(mech, "eps"):
        raise TypeError(f"obj must be a Mechanism or an OptimalMechanismResult, got {type(obj).__name__}")
    if divergence is None:
        divergence = getattr(obj, "divergence", None)
    if isinstance(divergence, FDivergence):
        divergence = divergence.name
    if value is None and hasattr(obj, "value") and obj is not mech:
        value = obj.value
    if (p0 is None) != (p1 is None):
        raise ValueError("give both p0 and p1, or neither")
    u = v = None
    if p0 is not None:
        u, v = mech._pair(p0, p1)
    if value is not None:
        value = float(value)
        if not math.isfinite(value):
            value = None
    payload = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": _library_version(),
        "name": str(mech.name),
        "eps": "inf" if math.isinf(mech.eps) else float(mech.eps),
        "labels": _label_list(mech.labels, "labels"),
        "output_labels": _label_list(mech.output_labels, "output_labels"),
        "matrix": [[float(x) for x in row] for row in np.asarray(mech.matrix)],
        "partition": None if mech.partition is None else [[int(i) for i in b] for b in mech.partition],
        "divergence": None if divergence is None else str(divergence),
        "value": value,
        "p0": [float(x) for x in u] if (u is not None and include_distributions) else None,
        "p1": [float(x) for x in v] if (v is not None and include_distributions) else None,
        "p0_sha256": distribution_digest(u) if u is not None else None,
        "p1_sha256": distribution_digest(v) if v is not None else None,
    }
    payload["content_sha256"] = _content_digest(payload)
    return atomic_write_text(Path(path), _format(payload))


def _format(payload: dict) -> str:
    """One field per line, one matrix row per line (still plain JSON)."""

    def dump(v: Any) -> str:
        return json.dumps(v, separators=(", ", ": "), allow_nan=False)

    lines = []
    for key, val in payload.items():
        if key == "matrix":
            rows = ",\n".join("    " + dump(r) for r in val)
            lines.append(f'  "matrix": [\n{rows}\n  ]')
        else:
            lines.append(f"  {dump(key)}: {dump(val)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _err(path: Any, msg: str) -> MechanismFileError:
    return MechanismFileError(f"{path}: {msg}")


def _is_num(x: Any) -> bool:
    from ldpopt._validation import is_real

    return is_real(x)


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_str(x: Any) -> bool:
    return isinstance(x, str)


def _is_str_or_null(x: Any) -> bool:
    return x is None or isinstance(x, str)


def _is_num_or_null(x: Any) -> bool:
    return x is None or _is_num(x)


def _is_matrix(x: Any) -> bool:
    return (
        isinstance(x, list)
        and bool(x)
        and all(isinstance(r, list) for r in x)
        and len({len(r) for r in x}) == 1
        and all(_is_num(v) for r in x for v in r)
    )


def _is_labels_or_null(x: Any) -> bool:
    return x is None or (isinstance(x, list) and all(isinstance(v, str) or _is_int(v) for v in x))


def _is_partition_or_null(x: Any) -> bool:
    return x is None or (
        isinstance(x, list) and all(isinstance(b, list) and all(_is_int(i) for i in b) for b in x)
    )


#: the type of a field: field -> (test, what the field must be); checked by :func:`_check_field`
_FIELD_TYPES = {
    "matrix": (_is_matrix, "a non-empty list of equally long lists of numbers"),
    "labels": (_is_labels_or_null, "a list of strings/integers or null"),
    "output_labels": (_is_labels_or_null, "a list of strings/integers or null"),
    "partition": (_is_partition_or_null, "a list of lists of integers or null"),
    "name": (_is_str, "a string"),
    "p0_sha256": (_is_str_or_null, "a string or null"),
    "p1_sha256": (_is_str_or_null, "a string or null"),
    "divergence": (_is_str_or_null, "a string or null"),
    "value": (_is_num_or_null, "a number or null"),
    "library_version": (_is_str, "a string"),
}


def _check_field(payload: dict, key: str, path: Any) -> Any:
    """The value of field ``key`` after the type check of :data:`_FIELD_TYPES`."""
    accepts, what = _FIELD_TYPES[key]
    if not accepts(payload[key]):
        raise _err(path, f"{key} must be {what}")
    return payload[key]


def _vector(payload: dict, key: str, path: Any, k: int) -> np.ndarray | None:
    val = payload[key]
    if val is None:
        return None
    if not isinstance(val, list) or len(val) != k or not all(_is_num(x) for x in val):
        raise _err(path, f"'{key}' must be a list of {k} numbers")
    return np.array(val, dtype=float)


def _reject_constant(name: str) -> Any:
    raise ValueError(name)  # NaN / Infinity are not JSON


def _read_payload(path: Any) -> dict:
    """The file's top-level JSON object (read and parsed, nothing checked yet)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _err(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _err(path, f"cannot read the file ({exc})") from None
    if not text.strip():
        raise _err(path, "the file is empty")
    try:
        payload = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _err(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except ValueError as exc:
        raise _err(path, f"not valid JSON (non-standard constant {exc})") from None
    if not isinstance(payload, dict):
        raise _err(path, "not a mechanism file (the top level must be a JSON object)")
    return payload


def _check_envelope(payload: dict, path: Any) -> int:
    """Format name and version, exactly the known fields, the content digest; returns the version."""
    if payload.get("format") != FORMAT_NAME:
        raise _err(
            path, f"not a mechanism file (format is {payload.get('format')!r}, expected {FORMAT_NAME!r})"
        )
    version = payload.get("format_version")
    if not _is_int(version):
        raise _err(path, f"format_version must be an integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise _err(
            path,
            f"format_version {version} is newer than this ldpopt reads ({FORMAT_VERSION}); upgrade ldpopt",
        )
    if version < 1:
        raise _err(path, f"unknown format_version {version}")
    missing = [k for k in _KEYS if k not in payload]
    if missing:
        raise _err(path, f"missing field(s): {', '.join(missing)}")
    extra = sorted(set(payload) - set(_KEYS))
    if extra:
        raise _err(path, f"unknown field(s): {', '.join(extra)}")
    if (
        not isinstance(payload["content_sha256"], str)
        or _content_digest(payload) != payload["content_sha256"]
    ):
        raise _err(path, "content digest mismatch: the file was modified after it was written")
    return version


def _eps(payload: dict, path: Any) -> float:
    eps = payload["eps"]
    if eps == "inf":
        return math.inf
    if not _is_num(eps):
        raise _err(path, f'eps must be a number or "inf", got {eps!r}')
    return eps


def _optional_tuple(value: list | None) -> tuple | None:
    return None if value is None else tuple(value)


def _check_blocks(part: tuple, mech: Any, path: Any) -> None:
    """The partition splits the inputs into one non-empty block per output."""
    k = mech.num_inputs
    flat = sorted(i for b in part for i in b)
    if flat != list(range(k)) or any(not b for b in part):
        raise _err(path, f"partition must split range({k}) into non-empty disjoint blocks")
    if len(part) != mech.num_outputs:
        raise _err(path, f"partition has {len(part)} blocks but the matrix has {mech.num_outputs} outputs")


def _mechanism(payload: dict, path: Any) -> Any:
    """The re-validated mechanism: eps-LDP, and realisable as an exactly eps-LDP channel."""
    from ldpopt.deploy.sampling import realise
    from ldpopt.mechanism import Mechanism

    eps = _eps(payload, path)
    matrix = _check_field(payload, "matrix", path)
    labels = _check_field(payload, "labels", path)
    output_labels = _check_field(payload, "output_labels", path)
    part = _check_field(payload, "partition", path)
    if part is not None:
        part = tuple(tuple(b) for b in part)
    name = _check_field(payload, "name", path)
    try:
        mech = Mechanism(
            np.array(matrix, dtype=float),
            eps,
            labels=_optional_tuple(labels),
            output_labels=_optional_tuple(output_labels),
            partition=part,
            name=name,
        )
    except (TypeError, ValueError) as exc:
        raise _err(path, f"invalid mechanism: {exc}") from None
    if part is not None:
        _check_blocks(part, mech, path)
    try:
        realise(mech)
    except ValueError as exc:
        raise _err(path, f"invalid mechanism: {exc}") from None
    return mech


def _distribution(payload: dict, key: str, path: Any, k: int) -> np.ndarray | None:
    """Stored distribution ``key`` (``"p0"`` or ``"p1"``), checked against its digest; None if absent."""
    from ldpopt._validation import check_distribution

    vec = _vector(payload, key, path, k)
    digest = _check_field(payload, f"{key}_sha256", path)
    if vec is None:
        return None
    try:
        vec = check_distribution(vec, key)
    except (TypeError, ValueError) as exc:
        raise _err(path, str(exc)) from None
    if digest is None or distribution_digest(vec) != digest:
        raise _err(path, f"{key} does not match {key}_sha256")
    return vec


def load_mechanism(path: Any) -> MechanismFile:
    """Read a mechanism file and re-validate it (see the module docstring); raises
    :class:`MechanismFileError` with a clear message on any problem."""
    payload = _read_payload(path)
    version = _check_envelope(payload, path)
    mech = _mechanism(payload, path)
    p0 = _distribution(payload, "p0", path, mech.num_inputs)
    p1 = _distribution(payload, "p1", path, mech.num_inputs)
    divergence = _check_field(payload, "divergence", path)
    value = _check_field(payload, "value", path)
    library_version = _check_field(payload, "library_version", path)
    return MechanismFile(
        mechanism=mech,
        p0=p0,
        p1=p1,
        p0_sha256=payload["p0_sha256"],
        p1_sha256=payload["p1_sha256"],
        divergence=divergence,
        value=None if value is None else float(value),
        format_version=version,
        library_version=library_version,
    )
