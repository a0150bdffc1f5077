"""What a core-only install (``pip install ldpopt``, no extras) must do, run by .ci/run in a venv
that has only numpy, scipy, numba, typer and rich: import light, design, privatize, test; the
README's shell walkthrough ("From the shell") runs with this venv's ``ldpopt``; and the features
that need an extra say which one, in one line, with exit status 2."""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HEAVY = ("matplotlib", "pandas", "pyarrow", "dask", "distributed", "typer", "rich", "cdd")
HEAVY += ("starlette", "uvicorn", "plotly")  # the studio's web stack


README = Path(__file__).resolve().parents[1] / "README.md"
#: the README's shell walkthrough: the first bash block after "From the shell"
WALKTHROUGH = re.compile(r"From the shell.*?```bash\n(.*?)```", re.S)
#: the block as a script that stops at the first failing command, except `test --exit-code`'s 10
STRICT = "set -o pipefail\ntrap 'rc=$?; [ $rc -eq 10 ] || exit $rc' ERR\n"


def readme_walkthrough() -> None:
    """Run the README's shell block with this venv's ``ldpopt`` and ``python3`` first on PATH."""
    found = WALKTHROUGH.search(README.read_text())
    assert found, "README.md has no bash block after 'From the shell'"
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=os.pathsep.join([bindir, os.environ.get("PATH", "")]))
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(
            ["bash", "-c", STRICT + found.group(1)],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert "error:" not in r.stderr and "Traceback" not in r.stderr, r.stderr
        for name in ("M.json", "reports.csv", "test.json", "sizes.json"):
            assert (Path(tmp) / name).stat().st_size > 0, name


def main() -> None:
    import numpy as np

    import ldpopt

    loaded = [m for m in HEAVY if m in sys.modules]
    assert not loaded, f"import ldpopt imported {loaded}"
    for m in ("matplotlib", "pandas", "pyarrow", "dask", "cdd"):
        try:
            __import__(m)
        except ImportError:
            continue
        raise AssertionError(f"{m} is installed: this check needs a core-only environment")

    p0, p1 = [0.04, 0.09, 0.22, 0.47, 0.18], [0.25, 0.49, 0.13, 0.10, 0.03]
    res = ldpopt.optimal_mechanism(p0, p1, 1.0, "kl")
    assert res.value > 0 and res.mechanism is not None
    x = np.random.default_rng(0).choice(5, size=2000, p=p1)
    reports = res.mechanism.privatize(x)
    decision = ldpopt.LikelihoodRatioTest(res.mechanism, p0, p1, alpha=0.05).decide(reports)
    assert decision.decision == 1, decision  # the reports come from P1
    with tempfile.TemporaryDirectory() as tmp:
        res.mechanism.to_json(Path(tmp) / "M.json", p0=p0, p1=p1)
        assert ldpopt.Mechanism.from_json(Path(tmp) / "M.json").num_outputs == res.num_outputs
        cfg = Path(tmp) / "study.toml"
        cfg.write_text(
            '[instances]\ngenerator = "dirichlet"\nk = 4\ntrials = 2\n\n'
            '[grid]\neps = [1.0]\ndivergences = ["kl"]\n'
        )
        for args, extra in (
            (["sweep", str(cfg), "--out", str(Path(tmp) / "run")], "sweeps"),
            (["reproduce", "fig3", "--out", str(Path(tmp) / "fig3")], "plots"),
            (["studio"], "studio"),
        ):
            r = subprocess.run(
                [sys.executable, "-m", "ldpopt", *args], capture_output=True, text=True, timeout=300
            )
            assert r.returncode == 2, (args, r.returncode, r.stdout, r.stderr)
            assert f"ldpopt[{extra}]" in r.stderr and "Traceback" not in r.stderr, r.stderr
            assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    readme_walkthrough()
    print(
        "core-only install: import, design, privatize, test, file round trip, README walkthrough; "
        "extras named: ok"
    )


if __name__ == "__main__":
    main()
