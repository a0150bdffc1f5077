"""Privacy-utility studies on disk: configuration -> chunks -> schedulers -> Parquet store -> report.

* :mod:`~ldpopt.sweeps.config` - the TOML/JSON study configuration;
* :mod:`~ldpopt.sweeps.store` - the chunked, resumable Parquet store and its manifest;
* :mod:`~ldpopt.sweeps.runner` - chunk planning, schedulers (inline, processes, Dask) and
  :func:`run_sweep`;
* :mod:`~ldpopt.sweeps.report` - summary tables and figures.

Needs the optional dependencies of the ``sweeps`` extra (pandas, pyarrow).
"""

from ldpopt.sweeps.runner import load_results, run_sweep, summarize_sweep, write_report

__all__ = ["load_results", "run_sweep", "summarize_sweep", "write_report"]
