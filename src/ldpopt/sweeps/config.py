"""Parsing and validation of ``ldpopt sweep`` configurations (TOML, or the same structure as a dict).

Every problem is reported as a :class:`SweepConfigError` naming the section, the key and the
offending value, before any work starts.  The parsed :class:`SweepConfig` is frozen; its
:meth:`SweepConfig.fingerprint` (a SHA-256 of the resolved grid, the instance source and the
chunking) identifies the sweep in the result store, so a rerun over an existing directory can
tell "the same sweep, resume it" from "a different sweep, refuse".

Configuration reference: ``docs/sweeps.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from ldpopt._validation import is_integer, is_real, short_repr
from ldpopt.deploy.pairs import read_pair_records
from ldpopt.errors import SweepConfigError

__all__ = [
    "SweepConfigError",
    "SweepConfig",
    "InstanceSpec",
    "Instances",
    "load_config",
    "parse_config",
    "BASELINES",
    "KOV_LP_MAX_K",
    "MAX_EPS_POINTS",
]

#: baseline mechanisms a sweep can evaluate next to the optimum
BASELINES = ("binary", "rr", "kov_lp")
#: largest alphabet for the ``kov_lp`` baseline (2^k - 1 LP variables per cell)
KOV_LP_MAX_K = 10
#: largest eps grid accepted (a guard against a mistyped step)
MAX_EPS_POINTS = 1_000_000
#: a {start, stop, step} range includes ``stop`` when (stop - start)/step is within this of an integer
_RANGE_SLACK = 1e-9
#: instance generators known to the config
GENERATORS = ("dirichlet",)
#: recognised instance-file suffixes
FILE_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}

_SECTIONS = {
    "instances": ("generator", "file", "k", "trials", "alpha", "seed", "normalize"),
    "grid": ("eps", "divergences", "max_outputs", "baselines"),
    "run": ("instances_per_chunk", "workers"),
}
_REQUIRED_SECTIONS = ("instances", "grid")


# ---------------------------------------------------------------------------------------------
# Small typed getters
# ---------------------------------------------------------------------------------------------
def _where(section: str, key: str) -> str:
    return f"[{section}] {key}"


def _int(value: Any, where: str, minimum: int) -> int:
    if not is_integer(value):
        raise SweepConfigError(
            f"{where} must be an integer, got {short_repr(value)} ({type(value).__name__})"
        )
    v = int(value)
    if v < minimum:
        raise SweepConfigError(f"{where} must be >= {minimum}, got {v}")
    return v


def _real(value: Any, where: str) -> float:
    if not is_real(value):
        raise SweepConfigError(f"{where} must be a number, got {short_repr(value)} ({type(value).__name__})")
    v = float(value)
    if math.isnan(v):
        raise SweepConfigError(f"{where} must be a number, got nan")
    return v


def _list(value: Any, where: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise SweepConfigError(f"{where} must be a list, got {short_repr(value)} ({type(value).__name__})")
    if len(value) == 0:
        raise SweepConfigError(f"{where} must not be empty")
    return list(value)


def _check_keys(table: Mapping, allowed: tuple, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise SweepConfigError(f"unknown key {key!r} in {where}; allowed keys: {', '.join(allowed)}")


def _no_duplicates(values: list, where: str) -> None:
    seen = set()
    for v in values:
        if v in seen:
            raise SweepConfigError(f"{where} lists {v!r} twice")
        seen.add(v)


# ---------------------------------------------------------------------------------------------
# Instances
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InstanceSpec:
    """Where the (P0, P1) pairs come from.

    ``kind == "dirichlet"``: instance i is ``(rng.dirichlet(alpha), rng.dirichlet(alpha))`` with
    ``rng = numpy.random.default_rng([seed, i])`` (one independent stream per instance, so any
    block of instances can be generated on any worker without the others).
    ``kind == "file"``: labelled pairs read from ``path`` (CSV/Parquet long format or JSON).
    """

    kind: str
    k: int | None = None
    trials: int | None = None
    alpha: tuple = ()
    seed: int = 0
    path: str | None = None
    normalize: bool = False
    file_sha256: str | None = None

    def as_dict(self) -> dict:
        if self.kind == "dirichlet":
            return {
                "generator": "dirichlet",
                "k": self.k,
                "trials": self.trials,
                "alpha": list(self.alpha),
                "seed": self.seed,
            }
        return {"file": self.path, "normalize": self.normalize, "sha256": self.file_sha256}


@dataclass(frozen=True, eq=False)
class Instances:
    """The instances of a sweep: ids, alphabet sizes and (lazily for generators) the pairs."""

    spec: InstanceSpec
    ids: tuple
    ks: np.ndarray
    pairs: tuple | None = field(default=None, repr=False)  # file: ((u, v), ...) validated

    def __len__(self) -> int:
        return len(self.ids)

    def get(self, start: int, stop: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The validated pairs of instances ``start .. stop-1``."""
        if self.pairs is not None:
            return list(self.pairs[start:stop])
        return [dirichlet_pair(self.spec, i) for i in range(start, stop)]


def dirichlet_pair(spec: InstanceSpec, index: int) -> tuple[np.ndarray, np.ndarray]:
    """Instance ``index`` of a Dirichlet generator (its own stream ``default_rng([seed, index])``)."""
    rng = np.random.default_rng([spec.seed, index])
    alpha = np.asarray(spec.alpha, dtype=float)
    u = rng.dirichlet(alpha)
    v = rng.dirichlet(alpha)
    return u, v


def _parse_instances(table: Mapping, base_dir: Path | None) -> tuple[InstanceSpec, Instances]:
    where = "[instances]"
    if not isinstance(table, Mapping):
        raise SweepConfigError(f"{where} must be a table, got {short_repr(table)}")
    _check_keys(table, _SECTIONS["instances"], where)
    has_gen = "generator" in table
    has_file = "file" in table
    if has_gen == has_file:
        raise SweepConfigError(f"{where} needs exactly one of 'generator' or 'file'")
    if has_gen:
        return _parse_generator(table)
    path, fmt, normalize = _instance_file(table, base_dir)
    return _file_instances(path, fmt, normalize)


def _parse_generator(table: Mapping) -> tuple[InstanceSpec, Instances]:
    """``[instances]`` with ``generator = "dirichlet"``."""
    where = "[instances]"
    gen = table["generator"]
    if not isinstance(gen, str) or gen.strip().lower() not in GENERATORS:
        raise SweepConfigError(
            f"{_where('instances', 'generator')} must be one of {', '.join(map(repr, GENERATORS))}, "
            f"got {short_repr(gen)}"
        )
    if "normalize" in table:
        raise SweepConfigError(f"{_where('instances', 'normalize')} is only valid with 'file'")
    for key in ("k", "trials"):
        if key not in table:
            raise SweepConfigError(f"{where} with generator = 'dirichlet' needs {key!r}")
    k = _int(table["k"], _where("instances", "k"), 1)
    trials = _int(table["trials"], _where("instances", "trials"), 1)
    seed = _int(table.get("seed", 0), _where("instances", "seed"), 0)
    alpha = _dirichlet_alpha(table.get("alpha", 1.0), k)
    spec = InstanceSpec(kind="dirichlet", k=k, trials=trials, alpha=alpha, seed=seed)
    inst = Instances(
        spec=spec, ids=tuple(str(i) for i in range(trials)), ks=np.full(trials, k, dtype=np.int64)
    )
    return spec, inst


def _dirichlet_alpha(alpha_raw: Any, k: int) -> tuple[float, ...]:
    """The k Dirichlet concentrations from ``alpha`` (one number for all, or a list of k)."""
    if isinstance(alpha_raw, (list, tuple)):
        alpha_list = _list(alpha_raw, _where("instances", "alpha"))
        if len(alpha_list) != k:
            raise SweepConfigError(
                f"{_where('instances', 'alpha')} as a list must have k = {k} entries, got {len(alpha_list)}"
            )
        alpha = tuple(_real(a, _where("instances", "alpha")) for a in alpha_list)
    else:
        alpha = (_real(alpha_raw, _where("instances", "alpha")),) * k
    if any(not (a > 0 and math.isfinite(a)) for a in alpha):
        raise SweepConfigError(
            f"{_where('instances', 'alpha')} must be finite and > 0, got {short_repr(alpha_raw)}"
        )
    return alpha


def _instance_file(table: Mapping, base_dir: Path | None) -> tuple[Path, str, bool]:
    """``[instances]`` with ``file``: the resolved path, its format and ``normalize``."""
    for key in ("k", "trials", "alpha", "seed"):
        if key in table:
            raise SweepConfigError(f"{_where('instances', key)} is only valid with generator = 'dirichlet'")
    path_raw = table["file"]
    if not isinstance(path_raw, (str, os.PathLike)):
        raise SweepConfigError(
            f"{_where('instances', 'file')} must be a path string, got {short_repr(path_raw)}"
        )
    normalize = table.get("normalize", False)
    if not isinstance(normalize, bool):
        raise SweepConfigError(
            f"{_where('instances', 'normalize')} must be true or false, got {short_repr(normalize)}"
        )
    path = Path(path_raw).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    path = path.resolve()
    fmt = FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SweepConfigError(
            f"{_where('instances', 'file')} = {str(path_raw)!r}: unknown format {path.suffix!r}; "
            f"use one of {', '.join(FILE_FORMATS)}"
        )
    if not path.is_file():
        raise SweepConfigError(f"{_where('instances', 'file')}: no such file {str(path)!r}")
    return path, fmt, normalize


def _file_instances(path: Path, fmt: str, normalize: bool) -> tuple[InstanceSpec, Instances]:
    """The validated labelled pairs of an instance file."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    records = _read_pairs(path, fmt)
    if not records:
        raise SweepConfigError(f"{_where('instances', 'file')} {str(path)!r} holds no instances")
    from ldpopt._validation import check_labelled_pair

    ids, pairs, ks = [], [], []
    for ident, p0, p1 in records:
        try:
            u, v, _ = check_labelled_pair(
                p0, p1, names=(f"instance {ident!r} p0", f"instance {ident!r} p1"), normalize=normalize
            )
        except (ValueError, TypeError) as exc:
            raise SweepConfigError(f"{_where('instances', 'file')} {path.name}: {exc}") from None
        ids.append(ident)
        pairs.append((u, v))
        ks.append(u.shape[0])
    _no_duplicates(ids, f"{_where('instances', 'file')} {path.name} (instance ids)")
    spec = InstanceSpec(kind="file", path=str(path), normalize=normalize, file_sha256=digest)
    return spec, Instances(spec=spec, ids=tuple(ids), ks=np.asarray(ks, dtype=np.int64), pairs=tuple(pairs))


def _read_pairs(path: Path, fmt: str) -> list[tuple[str, Any, Any]]:
    """Read labelled pairs: a list of (instance id, p0, p1) with p0/p1 lists or label->prob dicts,
    through the library's one reader of pair files (:func:`ldpopt.deploy.pairs.read_pair_records`):
    a table in long format (instance, symbol (optional), p0, p1) or a JSON list of {id, p0, p1}."""
    where = f"{_where('instances', 'file')} {path.name}"
    try:
        records = read_pair_records(
            path,
            label="symbol",
            instance="id" if fmt == "json" else "instance",
            optional_label=True,
            other_columns=False,
            fmt=fmt,
        )
    except (ValueError, TypeError) as exc:
        raise SweepConfigError(f"{where}: {exc}") from None
    return [
        (str(ident), a, b)
        if labels is None
        else (str(ident), dict(zip(labels, a, strict=True)), dict(zip(labels, b, strict=True)))
        for ident, a, b, labels in records
    ]


# ---------------------------------------------------------------------------------------------
# Grid
# ---------------------------------------------------------------------------------------------
def _dec(x: float) -> Decimal:
    return Decimal(repr(float(x)))


def _parse_eps(value: Any) -> tuple[float, ...]:
    where = _where("grid", "eps")
    if isinstance(value, Mapping):
        _check_keys(value, ("start", "stop", "step"), where)
        for key in ("start", "stop", "step"):
            if key not in value:
                raise SweepConfigError(f"{where} range needs 'start', 'stop' and 'step'; missing {key!r}")
        start = _real(value["start"], f"{where}.start")
        stop = _real(value["stop"], f"{where}.stop")
        step = _real(value["step"], f"{where}.step")
        if not all(math.isfinite(x) for x in (start, stop, step)):
            raise SweepConfigError(f"{where} range must be finite, got {short_repr(dict(value))}")
        if start <= 0:
            raise SweepConfigError(f"{where}.start must be > 0, got {start!r}")
        if step <= 0:
            raise SweepConfigError(f"{where}.step must be > 0, got {step!r}")
        if stop < start:
            raise SweepConfigError(f"{where} is empty: stop = {stop!r} < start = {start!r}")
        # decimal arithmetic so that 0.1 + 2 * 0.1 is the float nearest 0.3, as written
        try:
            span = (_dec(stop) - _dec(start)) / _dec(step)
        except InvalidOperation:  # pragma: no cover - finite inputs
            raise SweepConfigError(f"{where}: cannot build the range {short_repr(dict(value))}") from None
        n = int(span + Decimal(repr(_RANGE_SLACK)))
        if n + 1 > MAX_EPS_POINTS:
            raise SweepConfigError(f"{where} has {n + 1} points, more than {MAX_EPS_POINTS}; check 'step'")
        values = [float(_dec(start) + i * _dec(step)) for i in range(n + 1)]
    else:
        raw = _list(value, where) if isinstance(value, (list, tuple)) else None
        if raw is None:
            raise SweepConfigError(
                f"{where} must be a list of numbers or a {{start, stop, step}} table, got {short_repr(value)}"
            )
        if len(raw) > MAX_EPS_POINTS:
            raise SweepConfigError(f"{where} has {len(raw)} points, more than {MAX_EPS_POINTS}")
        values = []
        for x in raw:
            e = _real(x, f"{where} entry")
            if not (e > 0 and math.isfinite(e)):
                raise SweepConfigError(f"{where} entries must be finite and > 0, got {x!r}")
            values.append(e)
        _no_duplicates(values, where)
    return tuple(values)


def _parse_divergences(value: Any) -> tuple[str, ...]:
    from ldpopt.divergences import get_divergence

    where = _where("grid", "divergences")
    names = []
    for x in _list(value, where):
        if not isinstance(x, str):
            raise SweepConfigError(f"{where} entries must be strings, got {short_repr(x)}")
        name = x.strip().lower()
        try:
            get_divergence(name)
        except (ValueError, TypeError) as exc:
            raise SweepConfigError(f"{where}: {exc}") from None
        names.append(name)
    _no_duplicates(names, where)
    return tuple(names)


def _parse_budgets(value: Any) -> tuple[int, ...]:
    where = _where("grid", "max_outputs")
    budgets = [_int(x, f"{where} entry", 0) for x in _list(value, where)]
    _no_duplicates(budgets, where)
    return tuple(budgets)


def _parse_baselines(value: Any) -> tuple[str, ...]:
    where = _where("grid", "baselines")
    if isinstance(value, (list, tuple)) and len(value) == 0:
        return ()
    names = []
    for x in _list(value, where):
        if not isinstance(x, str) or x.strip().lower() not in BASELINES:
            raise SweepConfigError(
                f"{where} entries must be among {', '.join(map(repr, BASELINES))}, got {short_repr(x)}"
            )
        names.append(x.strip().lower())
    _no_duplicates(names, where)
    return tuple(names)


# ---------------------------------------------------------------------------------------------
# The config
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SweepConfig:
    """A validated sweep configuration.

    Attributes
    ----------
    instances : Instances
        The (P0, P1) pairs (ids, alphabet sizes; pairs for file sources).
    eps : tuple of float
        The privacy grid, in the order given (ranges expanded, stop included).
    divergences : tuple of str
        Utility divergences (names accepted by :func:`ldpopt.get_divergence`, ``"chernoff"`` included).
    budgets : tuple of int
        Output budgets; 0 means no budget.
    baselines : tuple of str
        Among ``"binary"``, ``"rr"``, ``"kov_lp"``.
    instances_per_chunk : int or None
        Chunk size asked for (``None``: chosen by :func:`ldpopt.sweeps.runner.plan_chunks`).
    workers : int or None
        Worker count asked for (``None``: all cores).
    raw : dict
        The configuration as given (for the manifest).
    source : str or None
        The TOML file the configuration came from.
    """

    instances: Instances
    eps: tuple
    divergences: tuple
    budgets: tuple
    baselines: tuple
    instances_per_chunk: int | None = None
    workers: int | None = None
    raw: dict = field(default_factory=dict, repr=False)
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    source: str | None = None

    @property
    def num_instances(self) -> int:
        return len(self.instances)

    @property
    def cells_per_instance(self) -> int:
        """Optimal solves per instance: eps x divergences x budgets."""
        return len(self.eps) * len(self.divergences) * len(self.budgets)

    @property
    def num_cells(self) -> int:
        """(instance, eps, divergence, budget) cells of the sweep."""
        return self.num_instances * self.cells_per_instance

    @property
    def rows_per_instance(self) -> int:
        """Result rows per instance: one per cell plus one per (eps, divergence, baseline)."""
        return len(self.eps) * len(self.divergences) * (len(self.budgets) + len(self.baselines))

    def resolved(self) -> dict:
        """Everything that determines the results (JSON-serialisable, canonical)."""
        return {
            "instances": self.instances.spec.as_dict(),
            "num_instances": self.num_instances,
            "eps": list(self.eps),
            "divergences": list(self.divergences),
            "max_outputs": list(self.budgets),
            "baselines": list(self.baselines),
        }

    def fingerprint(self, instances_per_chunk: int) -> str:
        """SHA-256 of the resolved configuration and the chunking (identifies the sweep in a store)."""
        payload = dict(self.resolved(), instances_per_chunk=int(instances_per_chunk))
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def parse_config(
    data: Mapping, base_dir: str | os.PathLike | None = None, source: str | None = None
) -> SweepConfig:
    """Validate a configuration given as nested mappings (the structure of the TOML file).

    Parameters
    ----------
    data : mapping
        ``{"instances": {...}, "grid": {...}, "run": {...}}``.
    base_dir : path, optional
        Directory relative instance-file paths are resolved against (the config file's).
    source : str, optional
        Where the configuration came from (recorded in the manifest).

    Raises
    ------
    SweepConfigError
        On unknown keys, wrong types, empty grids, unreadable or invalid instance files.
    """
    if not isinstance(data, Mapping):
        raise SweepConfigError(f"a sweep config must be a table/dict, got {type(data).__name__}")
    for key in data:
        if key not in _SECTIONS:
            raise SweepConfigError(f"unknown section [{key}]; allowed sections: {', '.join(_SECTIONS)}")
    for sec in _REQUIRED_SECTIONS:
        if sec not in data:
            raise SweepConfigError(f"missing section [{sec}]")
    for sec in data:
        if not isinstance(data[sec], Mapping):
            raise SweepConfigError(f"[{sec}] must be a table, got {short_repr(data[sec])}")
    base = Path(base_dir) if base_dir is not None else None
    spec, instances = _parse_instances(data["instances"], base)
    grid = data["grid"]
    _check_keys(grid, _SECTIONS["grid"], "[grid]")
    for key in ("eps", "divergences"):
        if key not in grid:
            raise SweepConfigError(f"[grid] needs {key!r}")
    eps = _parse_eps(grid["eps"])
    divergences = _parse_divergences(grid["divergences"])
    budgets = _parse_budgets(grid.get("max_outputs", [0]))
    baselines = _parse_baselines(grid.get("baselines", []))
    if "kov_lp" in baselines:
        kmax = int(instances.ks.max())
        if kmax > KOV_LP_MAX_K:
            bad = instances.ids[int(np.argmax(instances.ks))]
            raise SweepConfigError(
                f"{_where('grid', 'baselines')}: 'kov_lp' enumerates 2^k - 1 high sets and is limited to "
                f"k <= {KOV_LP_MAX_K}, but instance {bad!r} has k = {kmax}"
            )
    run = data.get("run", {})
    _check_keys(run, _SECTIONS["run"], "[run]")
    ipc = run.get("instances_per_chunk")
    ipc = None if ipc is None else _int(ipc, _where("run", "instances_per_chunk"), 1)
    workers = run.get("workers")
    workers = None if workers is None else _int(workers, _where("run", "workers"), 1)
    return SweepConfig(
        instances=instances,
        eps=eps,
        divergences=divergences,
        budgets=budgets,
        baselines=baselines,
        instances_per_chunk=ipc,
        workers=workers,
        raw=_jsonable(data),
        source=source,
    )


def load_config(config: Any) -> SweepConfig:
    """A :class:`SweepConfig` from a TOML path, a mapping, or an existing ``SweepConfig``."""
    if isinstance(config, SweepConfig):
        return config
    if isinstance(config, Mapping):
        return parse_config(config)
    if isinstance(config, (str, os.PathLike)):
        import tomllib

        path = Path(config).expanduser()
        if not path.is_file():
            raise SweepConfigError(f"config file {str(path)!r} does not exist")
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise SweepConfigError(f"config file {str(path)!r} is not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise SweepConfigError(f"config file {str(path)!r} is not UTF-8 text: {exc}") from None
        return parse_config(data, base_dir=path.resolve().parent, source=str(path.resolve()))
    raise TypeError(f"config must be a TOML path, a dict or a SweepConfig, got {type(config).__name__}")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)
