"""Run every benchmark and rewrite its table in ``benchmarks/README.md``.

Run from the repository root::

    python benchmarks/run.py                 # every bench_*.py, full size (tens of minutes on 2 cores)
    python benchmarks/run.py --quick         # the quick variants
    python benchmarks/run.py --only speed    # only bench_speed.py
    python benchmarks/run.py --only sweep_cli   # only the ldpopt sweep command (bench_sweep.py --cli)
    python benchmarks/run.py --no-write      # print, leave the README alone

Each ``bench_NAME.py`` runs in its own process (which starts its own fresh child processes where
a row needs one); its standard output is put between the markers ``<!-- run.py: NAME -->`` and
``<!-- /run.py: NAME -->`` of the README (appended at the end the first time), under one line
naming the host, the versions, the date and the load average before and after the script:
every number in a section was measured in that run, ours next to its reference.  Markdown table
lines are kept as they are; other output goes into a text block.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
#: extra arguments of each script for ``--quick``
QUICK_ARGS = {
    "bench_speed": ["--quick"],
    "bench_fast": ["--skip-1e5"],
    "bench_decision": ["--quick"],
    "bench_sweep": ["--quick"],
    "bench_privatize": ["--reports", "200000"],
    "bench_certify": ["--k", "3000"],
}


#: sections that run a script with arguments of their own: section -> (script, arguments,
#: arguments with --quick); ``bench_sweep_cli`` is the ``ldpopt sweep`` command itself, warm and
#: cold, in fresh processes
VARIANTS = {
    "bench_sweep_cli": ("bench_sweep", ["--cli"], ["--cli", "--quick", "--repeats", "1"]),
}


def scripts() -> list[str]:
    """Every section: one per ``bench_*.py``, then the variants."""
    return sorted(p.stem for p in HERE.glob("bench_*.py")) + sorted(VARIANTS)


def command(name: str, quick: bool) -> list[str]:
    """The script of section ``name`` and its arguments."""
    if name in VARIANTS:
        script, full, short = VARIANTS[name]
        return [sys.executable, str(HERE / f"{script}.py"), *(short if quick else full)]
    return [sys.executable, str(HERE / f"{name}.py"), *(QUICK_ARGS.get(name, []) if quick else [])]


def host_line() -> str:
    """Host, core count, CPU model and library versions (of the interpreter that runs the benchmarks)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    code = (
        "import numpy, numba, scipy, ldpopt; "
        "print(f'ldpopt {ldpopt.__version__}, numpy {numpy.__version__}, numba {numba.__version__}, "
        "scipy {scipy.__version__}')"
    )
    versions = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {versions}"


def load() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def as_markdown(output: str) -> str:
    """Table lines as they are, every other run of lines in a text block."""
    out: list[str] = []
    text: list[str] = []

    def flush() -> None:
        if any(t.strip() for t in text):
            out.extend(["```text", *text, "```"])
        text.clear()

    for line in output.rstrip().splitlines():
        if line.startswith("|"):
            flush()
            out.append(line)
        else:
            text.append(line)
    flush()
    return "\n".join(out)


def replace_section(readme: str, name: str, body: str) -> str:
    start, end = f"<!-- run.py: {name} -->", f"<!-- /run.py: {name} -->"
    block = f"{start}\n{body}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(readme):
        return pattern.sub(lambda _: block, readme)
    return readme.rstrip() + f"\n\n## `{name}.py`\n\n{block}\n"


def run_one(name: str, quick: bool) -> str:
    cmd = command(name, quick)
    before = load()
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
    wall = time.perf_counter() - t
    status = "" if proc.returncode == 0 else f" **exit status {proc.returncode}**"
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = (
        f"Measured by `python benchmarks/run.py{' --quick' if quick else ''}` on {when}: "
        f"`{' '.join(['python', *cmd[1:]]).replace(str(HERE.parent) + os.sep, '')}` "
        f"({wall:.0f} s{status}); load average {before} before, {load()} after."
    )
    body = as_markdown(proc.stdout)
    if proc.returncode != 0:
        body += "\n```text\n" + "\n".join(proc.stderr.strip().splitlines()[-15:]) + "\n```"
    return f"{head}\n\n{body}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the quick variant of every script")
    ap.add_argument("--only", nargs="*", default=None, help="script names, e.g. speed fast")
    ap.add_argument("--no-write", action="store_true", help="print the sections, leave README.md alone")
    args = ap.parse_args()
    names = scripts()
    if args.only:
        names = [n for n in names if n in {f"bench_{o}".replace("bench_bench_", "bench_") for o in args.only}]
    host = host_line()
    print(host, flush=True)
    for name in names:
        print(f"running {name} ...", flush=True)
        section = f"Host: {host}.\n\n" + run_one(name, args.quick)
        print(section, flush=True)
        if not args.no_write:
            README.write_text(replace_section(README.read_text(), name, section))


if __name__ == "__main__":
    main()
