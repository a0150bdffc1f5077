"""The mechanism-file format: schema, digests, writing and reading a validated payload.

The format is documented in :mod:`ldpopt.deploy.files`, its public face.  It lives here, below
:mod:`ldpopt.mechanism`, so that :meth:`Mechanism.to_json <ldpopt.Mechanism.to_json>` and
:meth:`Mechanism.from_json <ldpopt.Mechanism.from_json>` can use it; it knows no ``Mechanism``
class: the writer takes any mechanism-like object (``name``, ``eps``, ``labels``,
``output_labels``, ``matrix``, ``partition``) and hypotheses already aligned with its inputs, the
reader builds the mechanism with the constructor it is given and then checks it exactly with
the sampler's realisation (:func:`ldpopt._sampler.realise`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from ldpopt._atomic import atomic_write_text
from ldpopt._json import in_memory_file, loads_strict
from ldpopt._sampler import realise
from ldpopt._validation import check_distribution, is_real
from ldpopt._version import library_version
from ldpopt.errors import MechanismFileError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MechanismFile",
    "content_digest",
    "distribution_digest",
    "read_mechanism_file",
    "mechanism_file_text",
    "write_mechanism_file",
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
#: fields a file may have (written only when set, so files without them keep their bytes)
_OPTIONAL_KEYS = ("max_outputs",)


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
    max_outputs : int or None
        The output budget of the design, when it had one (binding or not).
    """

    mechanism: Any
    p0: np.ndarray | None
    p1: np.ndarray | None
    p0_sha256: str | None
    p1_sha256: str | None
    divergence: str | None
    value: float | None
    format_version: int
    _: KW_ONLY
    library_version: str
    max_outputs: int | None = None

    def matches(self, p0: Any, p1: Any) -> bool:
        """True when (p0, p1) have the digests stored in the file (False if none stored)."""
        if self.p0_sha256 is None or self.p1_sha256 is None:
            return False
        u, v = self.mechanism.input_pair(p0, p1)
        return distribution_digest(u) == self.p0_sha256 and distribution_digest(v) == self.p1_sha256


def distribution_digest(p: Any) -> str:
    """SHA-256 of a distribution's exact float values (shortest-repr JSON list), hex."""
    values = [float(x) for x in np.asarray(p, dtype=float).ravel()]
    text = "ldpopt-distribution-v1:" + json.dumps(values, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def content_digest(payload: dict) -> str:
    """SHA-256 of every field of a payload but ``content_sha256`` (canonical JSON), hex."""
    body = {k: v for k, v in payload.items() if k != "content_sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------
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


def _finite_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def write_mechanism_file(
    path: Any,
    mech: Any,
    *,
    p0: np.ndarray | None = None,
    p1: np.ndarray | None = None,
    divergence: str | None = None,
    value: float | None = None,
    include_distributions: bool = True,
    max_outputs: int | None = None,
) -> Path:
    """Write ``mech`` atomically as a versioned mechanism file (:func:`mechanism_file_text`);
    returns the path."""
    text = mechanism_file_text(
        mech,
        p0=p0,
        p1=p1,
        divergence=divergence,
        value=value,
        include_distributions=include_distributions,
        max_outputs=max_outputs,
    )
    return atomic_write_text(Path(path), text)


def mechanism_file_text(
    mech: Any,
    *,
    p0: np.ndarray | None = None,
    p1: np.ndarray | None = None,
    divergence: str | None = None,
    value: float | None = None,
    include_distributions: bool = True,
    max_outputs: int | None = None,
) -> str:
    """The text of the versioned mechanism file of ``mech`` (what :func:`write_mechanism_file` writes).

    ``p0``/``p1`` are the hypotheses already aligned with the mechanism's inputs (their digests
    are always written, the values unless ``include_distributions=False``); a non-finite
    ``value`` is written as null; ``max_outputs`` (the output budget of the design, when one was
    given) is recorded only when set, so files without a budget keep their bytes.
    """
    store = include_distributions
    payload = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": library_version(),
        "name": str(mech.name),
        "eps": "inf" if math.isinf(mech.eps) else float(mech.eps),
        "labels": _label_list(mech.labels, "labels"),
        "output_labels": _label_list(mech.output_labels, "output_labels"),
        "matrix": [[float(x) for x in row] for row in np.asarray(mech.matrix)],
        "partition": None if mech.partition is None else [[int(i) for i in b] for b in mech.partition],
        "divergence": None if divergence is None else str(divergence),
        "value": _finite_or_none(value),
        "p0": [float(x) for x in p0] if (p0 is not None and store) else None,
        "p1": [float(x) for x in p1] if (p1 is not None and store) else None,
        "p0_sha256": distribution_digest(p0) if p0 is not None else None,
        "p1_sha256": distribution_digest(p1) if p1 is not None else None,
    }
    if max_outputs is not None:
        payload["max_outputs"] = int(max_outputs)
    payload["content_sha256"] = content_digest(payload)
    return _format(payload)


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


# ---------------------------------------------------------------------------------------------
# Field types
# ---------------------------------------------------------------------------------------------
def _err(path: Any, msg: str) -> MechanismFileError:
    return MechanismFileError(f"{path}: {msg}")


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_str(x: Any) -> bool:
    return isinstance(x, str)


def _is_str_or_null(x: Any) -> bool:
    return x is None or isinstance(x, str)


def _is_num_or_null(x: Any) -> bool:
    return x is None or is_real(x)


def _is_matrix(x: Any) -> bool:
    return (
        isinstance(x, list)
        and bool(x)
        and all(isinstance(r, list) for r in x)
        and len({len(r) for r in x}) == 1
        and all(is_real(v) for r in x for v in r)
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


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
def _read_payload(path: Any) -> dict:
    """The file's top-level JSON object (read and parsed, nothing checked yet)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _err(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _err(path, f"cannot read the file ({exc})") from None
    return _parse_payload(text, path)


def _parse_payload(text: str, path: Any) -> dict:
    if not text.strip():
        raise _err(path, "the file is empty")
    try:
        payload = loads_strict(text, path)
    except ValueError as exc:
        raise MechanismFileError(str(exc)) from None
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
    extra = sorted(set(payload) - set(_KEYS) - set(_OPTIONAL_KEYS))
    if extra:
        raise _err(path, f"unknown field(s): {', '.join(extra)}")
    if not isinstance(payload["content_sha256"], str) or content_digest(payload) != payload["content_sha256"]:
        raise _err(path, "content digest mismatch: the file was modified after it was written")
    return version


def _eps(payload: dict, path: Any) -> float:
    eps = payload["eps"]
    if eps == "inf":
        return math.inf
    if not is_real(eps):
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


def _mechanism(payload: dict, path: Any, build: Callable[..., Any]) -> Any:
    """The re-validated mechanism: eps-LDP (``build``'s check), and realisable as an exactly
    eps-LDP channel."""
    eps = _eps(payload, path)
    matrix = _check_field(payload, "matrix", path)
    labels = _check_field(payload, "labels", path)
    output_labels = _check_field(payload, "output_labels", path)
    part = _check_field(payload, "partition", path)
    if part is not None:
        part = tuple(tuple(b) for b in part)
    name = _check_field(payload, "name", path)
    try:
        mech = build(
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
    val = payload[key]
    if val is not None and (not isinstance(val, list) or len(val) != k or not all(is_real(x) for x in val)):
        raise _err(path, f"'{key}' must be a list of {k} numbers")
    digest = _check_field(payload, f"{key}_sha256", path)
    if val is None:
        return None
    try:
        vec = check_distribution(np.array(val, dtype=float), key)
    except (TypeError, ValueError) as exc:
        raise _err(path, str(exc)) from None
    if digest is None or distribution_digest(vec) != digest:
        raise _err(path, f"{key} does not match {key}_sha256")
    return vec


def read_mechanism_file(
    path: Any, build: Callable[..., Any], *, filename: str | None = None
) -> MechanismFile:
    """Read a mechanism file and re-validate it; raises :class:`MechanismFileError` naming the file.

    ``path`` is the file's path, or its content in memory (``bytes`` or a binary file object) with
    ``filename`` naming it (:func:`ldpopt._json.in_memory_file`).

    ``build(matrix, eps, *, labels, output_labels, partition, name)`` makes the mechanism (the
    ``Mechanism`` constructor, whose ``TypeError``/``ValueError`` become "invalid mechanism: ...").
    """
    content = in_memory_file(path, filename)
    if content is None:
        payload = _read_payload(path)
    else:
        path, data = content
        try:
            payload = _parse_payload(data.decode("utf-8"), path)
        except UnicodeDecodeError as exc:
            raise _err(path, f"cannot read the file ({exc})") from None
    version = _check_envelope(payload, path)
    mech = _mechanism(payload, path, build)
    p0 = _distribution(payload, "p0", path, mech.num_inputs)
    p1 = _distribution(payload, "p1", path, mech.num_inputs)
    divergence = _check_field(payload, "divergence", path)
    value = _check_field(payload, "value", path)
    library_version = _check_field(payload, "library_version", path)
    budget = payload.get("max_outputs")
    if budget is not None and not (_is_int(budget) and budget >= 1):
        raise _err(path, f"max_outputs must be an integer >= 1 or null, got {budget!r}")
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
        max_outputs=budget,
    )
