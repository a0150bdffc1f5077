"""The Python examples of README.md and docs/*.md run, and the numbers they show are what they print.

Each file's ```python blocks run in order in one namespace (a later block continues an earlier
one), in a temporary directory.  A line ``expression  # 0.0820, 0.0459`` states the value of the
expression: when the comment starts with as many numbers as the value has, each is compared to
the number shown, to half a unit of its last digit; a comment that is a string or boolean literal
(``# 'rr_closed_form'``, ``# True``) is compared for equality.  A comment that starts with a number but
describes rather than states the value is listed in ``DESCRIPTIVE``; every other one is compared.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import typer

from ldpopt import cli
from ldpopt.spr import _fast

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)

#: blocks that are not run, by their first line, and why
NOT_RUN = {
    # the dicts elide their other entries with `...` (a sketch of the workflow, not a program)
    ("deployment.md", 'p0 = {"page_view": 0.31, "search": 0.14, "checkout": 0.06, "gift_card": 0.01, ...}'),
    # the generator's description: seed, k and T are the reader's (the test of the figures runs it)
    ("experiments.md", "rng = numpy.random.default_rng(seed)"),
    # reads the study.toml of the reader and runs a sweep (tests/sweeps runs the same call)
    ("sweeps.md", 'df = ldpopt.run_sweep("study.toml", "runs/study")'),
    # the full-size Figure 6 (~30 s on 2 cores); tests/experiments runs fig6, summary(),
    # plot_utility_curves and save_figure at a reduced size
    ("experiments.md", "from ldpopt import experiments, plots"),
}
#: comments that start with a number but do not state the value of their line
DESCRIPTIVE = {
    "res.status, res.success, res.message",  # "0 / True when optimal"
    'meas("gift_card_purchase")',  # "0 or 1": a random report
}
NUMBER = re.compile(r"\s*(-?\d+(?:\.\d*)?(?:e-?\d+)?)\s*(?:,|$|(?=\S))")


def _blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text())


def _first_code_line(block: str) -> str:
    """The block's first line that is not an import, without its comment (its key in NOT_RUN)."""
    line = next(line for line in block.splitlines() if line.strip() and not line.startswith("import "))
    return line.split("  #")[0].rstrip()


def _stated_numbers(comment: str) -> list[str]:
    """The numbers a comment starts with: ``"0.0820, 0.0459 (both)"`` -> ["0.0820", "0.0459"]."""
    out, pos = [], 0
    while (m := NUMBER.match(comment, pos)) is not None:
        out.append(m.group(1))
        pos = m.end()
        if pos < len(comment) and comment[pos - 1] != ",":
            break
    return out


def _stated_literal(comment: str) -> str | bool | None:
    """A comment that is a string or a boolean literal: ``"'rr_closed_form'"``, ``"True"``."""
    try:
        literal = ast.literal_eval(comment.strip())
    except (ValueError, SyntaxError):
        return None
    return literal if isinstance(literal, (str, bool)) else None


def _numbers_of(value) -> list[float] | None:
    """The numbers of a value (a number, a tuple or an array of them); None for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return [float(value)]
    if isinstance(value, (tuple, list, np.ndarray)):
        parts = [_numbers_of(v) for v in value]
        if any(p is None for p in parts):
            return None
        return [x for p in parts for x in p]  # type: ignore[union-attr]
    return None


def _run(block: str, namespace: dict, stated: list) -> None:
    """Run the statements of ``block``; the value of every ``expr  # numbers`` line is kept."""
    lines = block.splitlines()
    for node in ast.parse(block).body:
        code = compile(ast.Module(body=[node], type_ignores=[]), "<doc>", "exec")
        line = lines[node.lineno - 1]
        if isinstance(node, ast.Expr) and "  # " in line and node.end_lineno == node.lineno:
            expr, comment = line.split("  # ", 1)
            value = eval(compile(ast.Expression(node.value), "<doc>", "eval"), namespace)
            numbers = _stated_numbers(comment)
            if numbers:
                stated.append((expr.strip(), numbers, value))
            elif (literal := _stated_literal(comment)) is not None:
                assert value == literal, (expr.strip(), literal, value)
        else:
            exec(code, namespace)


def _runnable(path: Path) -> list[str]:
    return [b for b in _blocks(path) if (path.name, _first_code_line(b)) not in NOT_RUN]


def _cases():
    for path in DOCS:
        if _runnable(path):
            yield pytest.param(path, id=path.name)


def _check_stated(stated: list) -> int:
    compared = 0
    for expr, numbers, value in stated:
        got = _numbers_of(value)
        if expr in DESCRIPTIVE:
            continue
        assert got is not None and len(got) == len(numbers), (expr, numbers, value)
        for shown, x in zip(numbers, got, strict=True):
            decimals = len(shown.split(".")[1]) if "." in shown and "e" not in shown else 0
            assert abs(x - float(shown)) <= 0.5 * 10.0**-decimals, (expr, shown, x)
            compared += 1
    return compared


@pytest.mark.parametrize("path", list(_cases()))
def test_doc_examples_run_and_show_what_they_print(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__doc_example__"}
    stated: list = []
    # a reader's process: the solve policy's default, not the suite's "always" (tests/conftest.py),
    # which would compile the pruned kernels here (~25 s with an empty numba cache)
    with _fast.pruned_path("ready"):
        for block in _runnable(path):
            _run(block, namespace, stated)
    _check_stated(stated)


def test_every_exclusion_names_a_block_that_exists():
    firsts = {(p.name, _first_code_line(b)) for p in DOCS for b in _blocks(p)}
    assert NOT_RUN <= firsts
    lines = {line.split("  # ")[0].strip() for p in DOCS for b in _blocks(p) for line in b.splitlines()}
    assert DESCRIPTIVE <= lines


def test_stated_values_are_compared_and_a_wrong_one_fails():
    assert _stated_numbers("0.0820, 0.0459, 0.1188 (both ends closed)") == ["0.0820", "0.0459", "0.1188"]
    assert _stated_numbers("5.917: eps0 for a central 0.5") == ["5.917"]
    assert _stated_numbers("the guarantee") == []
    assert _check_stated([("x", ["0.0820", "1"], (0.08204, 1))]) == 2
    with pytest.raises(AssertionError):
        _check_stated([("x", ["0.0820"], 0.0826)])
    with pytest.raises(AssertionError):  # a count that does not match is not silently skipped
        _check_stated([("x", ["0.0820"], (0.082, 0.5))])
    ns: dict = {}
    stated: list = []
    _run("a = 2\na / 4  # 0.5\n", ns, stated)
    assert _check_stated(stated) == 1
    _run("'x' + 'y'  # 'xy'\na == 2  # True\n", ns, stated)  # literals are compared as they run
    with pytest.raises(AssertionError):
        _run("'x'  # 'y'\n", ns, stated)
    with pytest.raises(AssertionError):
        _run("a == 3  # True\n", ns, stated)


SHELL_BLOCK = re.compile(r"```(?:bash|console|sh)\n(.*?)```", re.S)
#: ``ldpopt COMMAND ARGS`` up to the end of the line, a pipe, ``&&`` or a comment
SHELL_CALL = re.compile(r"(?:^|[\s/])ldpopt ([a-z-]+)([^#|&\n]*)")


def _shell_calls(text: str) -> list[tuple[str, list[str]]]:
    """The ``ldpopt`` commands of the shell blocks of a doc: (command, its arguments)."""
    calls = []
    for block in SHELL_BLOCK.findall(text):
        variables = dict(re.findall(r'^(\w+)="([^"]*)"$', block, re.M))
        for line in block.splitlines():
            for var, value in variables.items():
                line = line.replace(f"${var}", value)
            for command, args in SHELL_CALL.findall(line):
                calls.append((command, args.split()))
    return calls


def _prose_calls(text: str) -> list[tuple[str, list[str]]]:
    """The ``ldpopt`` commands of the inline code of a doc's prose: `ldpopt compare M.json --json F`."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    spans = re.findall(r"`(ldpopt [a-z][^`]*)`", prose)
    return [(command, args.split()) for span in spans for command, args in SHELL_CALL.findall(span)]


def test_the_shell_examples_name_commands_and_options_that_exist():
    # the commands are run by hand (they write files, some start a server); here every command and
    # option the docs show, in shell blocks and in the prose, is one the command line accepts
    commands = typer.main.get_command(cli.app).commands
    calls = [
        (p.name, c, args)
        for p in DOCS
        for c, args in _shell_calls(p.read_text()) + _prose_calls(p.read_text())
    ]
    assert len(calls) >= 60
    for doc, command, args in calls:
        assert command in commands, (doc, command)
        cmd = commands[command]
        # `ldpopt reproduce fig1 --out DIR`: the subcommand's options (`reproduce NAME`: a placeholder)
        if hasattr(cmd, "commands") and args and args[0].islower():
            assert args[0] in cmd.commands, (doc, command, args[0])
            cmd = cmd.commands[args[0]]
        known = {o for param in cmd.params for o in param.opts} | {"--help"}
        opts = {a.split("=")[0] for a in args if a.startswith("--")}
        assert opts <= known, (doc, command, opts - known)


def test_shell_calls_are_parsed_with_their_options():
    text = '```bash\nF="--p0 1 --eps 1"\nldpopt design $F --json - | python3  # --quick\n$ ldpopt demo\n```\n'
    assert _shell_calls(text) == [("design", ["--p0", "1", "--eps", "1", "--json", "-"]), ("demo", [])]
    prose = "Run `ldpopt warmup --path small` (or `ldpopt.warm_up()`), not\n```bash\nldpopt demo\n```\n"
    assert _prose_calls(prose) == [("warmup", ["--path", "small"])]


#: ``ldpopt`` as the console script runs it, with the extras' pandas and pyarrow hidden
CORE_LDPOPT = (
    "import sys\n"
    "for name in ('pandas', 'pyarrow'):\n"
    "    sys.modules[name] = None\n"
    "from ldpopt.cli import main\n"
    "main()\n"
)


def _walkthroughs() -> list[str]:
    """The shell walkthroughs (design, export, privatize, test, samplesize), each text once."""
    blocks = {b for p in DOCS for b in SHELL_BLOCK.findall(p.read_text()) if "cat > counts.csv" in b}
    return sorted(blocks)


@pytest.mark.parametrize("block", _walkthroughs(), ids=lambda b: f"walkthrough{len(b)}")
def test_the_shell_walkthrough_runs(block, tmp_path):
    # `ldpopt` and `python3` are this interpreter's, `ldpopt` as on the core install: without
    # pandas and pyarrow (a module set to None in sys.modules cannot be imported)
    py = shlex.quote(sys.executable)
    core = shlex.quote(CORE_LDPOPT)
    script = f'ldpopt() {{ {py} -c {core} "$@"; }}\npython3() {{ {py} "$@"; }}\n{block}'
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "error:" not in run.stderr, run.stderr
    value = [line for line in run.stdout.splitlines() if re.fullmatch(r"[0-9.e-]+", line)]
    assert len(value) == 1 and float(value[0]) > 0, run.stdout  # the design's value, from --json -
    for name in ("M.json", "reports.csv", "test.json", "sizes.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    reports = (tmp_path / "reports.csv").read_text().splitlines()
    # the four sessions, each report with what it means
    assert reports[0] == "user_id,report,report_block" and len(reports) == 5
