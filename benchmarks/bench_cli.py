"""Start-up of the command line: ``ldpopt --help``, a failed argument check and a small ``design``,
each in a fresh process, against ``python -c "import ldpopt"`` (the floor every command pays)
measured in the same run.  Median of REPEATS runs.  ``python benchmarks/bench_cli.py``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 7
#: the source tree measured (default: this checkout; set LDPOPT_BENCH_SRC to compare another)
SRC = os.environ.get("LDPOPT_BENCH_SRC", str(Path(__file__).resolve().parents[1] / "src"))
K100 = ",".join(["0.01"] * 100)
K100_Q = ",".join(["0.005"] * 50 + ["0.015"] * 50)

CASES = {
    "ldpopt --help": ["-m", "ldpopt", "--help"],
    "ldpopt design --eps x (failed check)": ["-m", "ldpopt", "design", "--eps", "x"],
    "ldpopt design, k = 3": [
        "-m",
        "ldpopt",
        "design",
        "--p0",
        "0.5,0.3,0.2",
        "--p1",
        "0.1,0.3,0.6",
        "--eps",
        "1",
    ],
    "ldpopt design, k = 100": ["-m", "ldpopt", "design", "--p0", K100, "--p1", K100_Q, "--eps", "1"],
}


def _median(argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": SRC}
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *argv], env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ref = _median(["-c", "import ldpopt"])
    print(f"reference: python -c 'import ldpopt'  {ref:.3f} s")
    for name, argv in CASES.items():
        t = _median(argv)
        print(f"{name:42s} {t:.3f} s   {t / ref:.2f}x the import")


if __name__ == "__main__":
    main()
