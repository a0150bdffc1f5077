"""Privacy-utility studies on disk: configuration -> chunks -> schedulers -> Parquet store -> report.

* :mod:`~ldpopt.sweeps.config` - the TOML/JSON study configuration;
* :mod:`~ldpopt.sweeps.chunks` - the unit of work: chunk planning, computing one chunk, partition
  strings;
* :mod:`~ldpopt.sweeps.schedulers` - where chunks run: inline, a process pool, Dask;
* :mod:`~ldpopt.sweeps.store` - the chunked, resumable Parquet store, its manifest and
  :func:`load_results`;
* :mod:`~ldpopt.sweeps.runner` - :func:`run_sweep`, the driver that ties them together;
* :mod:`~ldpopt.sweeps.report` - summary tables and figures.

Needs the optional dependencies of the ``sweeps`` extra (pyarrow, pandas; the figures of a
report also need the ``plots`` extra, matplotlib).  Without pyarrow importing this package raises
:class:`~ldpopt.errors.MissingExtraError` naming the extra; without pandas (or matplotlib) the
functions that need it do, before any work.
"""

from ldpopt.sweeps.report import summarize_sweep, write_report
from ldpopt.sweeps.runner import run_sweep
from ldpopt.sweeps.store import load_results

__all__ = ["load_results", "run_sweep", "summarize_sweep", "write_report"]
