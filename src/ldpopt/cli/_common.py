"""What every command shares: the typer application, the consoles, one-line failures (also for a
missing optional dependency), the parsers of inline distributions, value formatting, the partition
table and JSON output.

Each command group is a module of :mod:`ldpopt.cli` that registers its commands on :data:`app`;
heavy dependencies are imported inside the commands, so ``ldpopt --help`` stays fast.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, NoReturn, cast

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from ldpopt._atomic import atomic_write_text, is_stdout
from ldpopt._extras import require
from ldpopt.errors import MissingExtraError


class _Verbose:
    """Whether the running command was given ``--verbose`` (see :class:`_Group`)."""

    on = False


def _set_verbose(ctx: Any, param: Any, value: bool) -> bool:
    _Verbose.on = bool(value)
    return value


#: the ``--verbose`` flag every command with ``--json`` gets (see :class:`_Group`)
VERBOSE_HELP = "With --json -: also print the tables and messages (on standard error)."


class _Group(typer.core.TyperGroup):
    """The command group: every command that writes ``--json`` also takes ``--verbose`` (the human
    output with ``--json -``, on standard error; see :func:`report_to_stderr_if_json_on_stdout`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for cmd in self.commands.values():
            opts = {o for p in cmd.params for o in p.opts}
            if "--json" in opts and "--verbose" not in opts:
                cmd.params.append(_verbose_option())


def _verbose_option() -> Any:
    """A fresh ``--verbose`` flag, as typer builds it (not passed to the command: it sets
    :class:`_Verbose`)."""
    flag = typer.Typer()

    @flag.command()
    def _flag(
        verbose: bool = typer.Option(
            False, "--verbose", help=VERBOSE_HELP, expose_value=False, callback=_set_verbose
        ),
    ) -> None:
        """A holder of the flag."""

    return typer.main.get_command(flag).params[0]


app = typer.Typer(
    name="ldpopt",
    cls=_Group,
    help="Exactly optimal local-differential-privacy mechanisms.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain click help: no "<bool>" or "{problem}" placeholders, flags shown as flags
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


#: rich's own ``Console.file`` property (its getter and setter)
_RICH_FILE = cast(property, vars(Console)["file"])


class _Console(Console):
    """A rich console that prints tables as CSV (a ``# title`` line, a header row, the rows, in
    full) when its output is not a terminal, so piped output is never truncated nor boxed.

    :meth:`redirect` sends its output to another stream for a while without touching the file it
    was given (usually none: it follows ``sys.stdout``, which test runners replace)."""

    #: the stream of a :meth:`redirect` in progress, else None
    redirected_to: IO[str] | None = None

    @property
    def file(self) -> IO[str]:
        return self.redirected_to if self.redirected_to is not None else super().file

    @file.setter
    def file(self, new_file: IO[str]) -> None:
        _RICH_FILE.__set__(self, new_file)

    @contextmanager
    def redirect(self, stream: IO[str]) -> Iterator[None]:
        """Write to ``stream`` inside the block; afterwards to the console's own file again."""
        previous, self.redirected_to = self.redirected_to, stream
        try:
            yield
        finally:
            self.redirected_to = previous

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if len(objects) == 1 and isinstance(objects[0], Table) and not self.is_terminal:
            self.file.write(table_csv(objects[0]))
            self.file.flush()
            return
        super().print(*objects, **kwargs)


def _plain(value: Any) -> str:
    from rich.text import Text

    return value.plain if isinstance(value, Text) else Text.from_markup(str(value)).plain


def table_csv(table: Table) -> str:
    """A rich table as CSV text: its title as a ``# `` line, then the header and the rows."""
    import csv
    import io

    buf = io.StringIO()
    if table.title:
        buf.write(f"# {_plain(table.title)}\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([_plain(c.header) for c in table.columns])
    columns = [[_plain(cell) for cell in c.cells] for c in table.columns]
    writer.writerows(zip(*columns, strict=True))
    return buf.getvalue()


# soft_wrap: messages are not wrapped at 80 columns when piped (the terminal wraps them)
console = _Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = 2, *, verbatim: bool = False) -> NoReturn:
    """Print a one-line error and exit non-zero (no traceback); ``verbatim``: the message is the
    user's own text quoted back, printed as it is (not through :func:`_to_cli`)."""
    from rich.markup import escape

    text = message if verbatim else _to_cli(message)
    # messages quote user input ("[instances]", "[1, 2]"): never let rich read them as markup
    err_console.print(f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    """A one-line warning on standard error (``warning: ...``), as the CLI prints them."""
    from rich.markup import escape

    err_console.print(f"[yellow]warning:[/] {escape(_to_cli(message))}", highlight=False, soft_wrap=True)


#: exit status of an interrupted command (Ctrl-C; SIGTERM during a sweep)
EXIT_INTERRUPTED = 130


class _Interrupt:
    """Whether the running command printed its own line for an interruption (see
    :func:`interrupted`); typer turns a Ctrl-C that no command handled into a silent exit 130, after
    which the entry point prints ``interrupted``."""

    reported = False


def interrupted(message: str) -> NoReturn:
    """Print ``message``, the one line of an interrupted command, and exit 130."""
    err_console.print(message, markup=False, highlight=False, soft_wrap=True)
    _Interrupt.reported = True
    raise typer.Exit(EXIT_INTERRUPTED)


def interrupt_reported() -> bool:
    """True once a command has printed its line for an interruption (:func:`interrupted`)."""
    return _Interrupt.reported


def parse_distribution(text: str, name: str) -> Any:
    """``"0.5,0.3,0.2"`` -> array, ``"a=0.5,b=0.3,c=0.2"`` -> dict label -> prob (the grammar of
    :func:`ldpopt.deploy.pairs.parse_distribution_text`); a problem is a one-line error (exit 2)."""
    from ldpopt.deploy.pairs import parse_distribution_text

    try:
        return parse_distribution_text(text, f"--{name}")
    except (ValueError, TypeError) as exc:
        fail(str(exc), verbatim=True)  # it quotes what was typed ("'np.int64(1)' is not a number")


# Options shared by every command that takes P0 and P1 or writes a result (typer reads these
# singletons afresh for each command).
FromOpt: Any = typer.Option(
    None,
    "--from",
    help="Read P0 and P1 from a CSV, Parquet or JSON file (columns --p0-col, --p1-col, --label-col) "
    "instead of --p0/--p1.",
)
P0ColOpt: Any = typer.Option("p0", "--p0-col", help="Column of P0 in the --from file.")
P1ColOpt: Any = typer.Option("p1", "--p1-col", help="Column of P1 in the --from file.")
LabelColOpt: Any = typer.Option(None, "--label-col", help="Column of the symbol labels in the --from file.")
NormalizeOpt: Any = typer.Option(False, "--normalize", help="Rescale P0 and P1 to sum to 1 (for counts).")


def one_eps(text: Any) -> float:
    """``--eps`` of a command that answers for one eps: a number (``inf`` where the command takes
    it); a list (``0.5,1,2``) is refused with the one message every such command gives.  A default
    comes as the number it is."""
    if not isinstance(text, str):
        return float(text)
    if "," in text or ";" in text:
        raise typer.BadParameter(
            f"{text!r} is a list, and --eps takes one number here "
            "(run the command once per eps; 'ldpopt samplesize --eps 0.5,1,2' answers for a list)"
        )
    try:
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number") from None


JsonOpt: Any = typer.Option(
    None, "--json", help="Write the result as JSON to FILE ('-': standard output, the JSON alone)."
)


#: a numpy array's repr in a message ("array([0.5, 0.3])") and the list inside it
_ARRAY_REPR = re.compile(r"\barray\((\[[^()]*\])\)")
#: a numpy scalar's repr in a message ("np.float64(0.6)") and the number inside it; not one
#: right after a quote, which is the user's own text quoted back ("'np.float64(0.5)' is not a number")
_NUMPY_REPR = re.compile(r"(?<!['\"])\bnp\.(?:float|int|uint|bool|complex)\w*\(([^()]*)\)")


def _to_cli(message: str, options: Mapping[str, str] | None = None) -> str:
    """An API message in the CLI's words (and without numpy reprs); ``options`` maps the API's
    argument names to the command's options (``{"paths": "--path"}``), replaced as whole words."""
    message = _ARRAY_REPR.sub(r"\1", _NUMPY_REPR.sub(r"\1", message))
    for name, option in (options or {}).items():
        message = re.sub(rf"(?<![-\w]){re.escape(name)}\b", option, message)
    return message.replace("pass normalize=True to rescale", "pass --normalize to rescale").replace(
        "normalize=True", "--normalize"
    )


def fail_api(exc: BaseException, options: Mapping[str, str], code: int = 2, *, context: str = "") -> NoReturn:
    """:func:`fail` with an API error's message, its argument names turned into ``options``
    (after ``context``, e.g. the option the error is about: ``"--from-counts: "``)."""
    fail(context + _to_cli(str(exc), options), code)


def load_pair(
    p0: str | None,
    p1: str | None,
    source: Path | None,
    p0_col: str,
    p1_col: str,
    label_col: str | None,
    normalize: bool,
    *,
    counts: bool = False,
) -> tuple[Any, Any] | None:
    """P0 and P1 from ``--p0``/``--p1`` (inline) or ``--from FILE``; None when neither is given.

    Labelled pairs come back as ``{label: probability}`` dicts, others as arrays; with ``normalize``
    each is rescaled to sum to 1; with ``counts`` the file's columns come back as they are (raw
    counts, checked by the caller).  Every problem is a one-line error (exit 2)."""
    if source is not None and counts:
        return _raw_pair(p0, p1, source, p0_col, p1_col, label_col, normalize)
    if source is not None:
        if p0 is not None or p1 is not None:
            fail("give P0 and P1 either inline (--p0/--p1) or from a file (--from), not both")
        from ldpopt.deploy.pairs import read_pair

        try:
            return read_pair(source, p0=p0_col, p1=p1_col, label=label_col, normalize=normalize).as_dicts()
        except (ValueError, TypeError) as exc:
            fail(f"--from {_to_cli(str(exc))}")
    if p0 is None and p1 is None:
        return None
    if p0 is None or p1 is None:
        fail("give both --p0 and --p1 (or --from FILE)")
    a, b = parse_distribution(p0, "p0"), parse_distribution(p1, "p1")
    if normalize:
        from ldpopt._validation import check_labelled_pair

        try:
            u, v, labels = check_labelled_pair(a, b, normalize=True)
        except (ValueError, TypeError) as exc:
            fail(_to_cli(str(exc)))
        if labels is None:
            return u, v
        return dict(zip(labels, u.tolist(), strict=True)), dict(zip(labels, v.tolist(), strict=True))
    return a, b


def _raw_pair(
    p0: str | None,
    p1: str | None,
    source: Path,
    p0_col: str,
    p1_col: str,
    label_col: str | None,
    normalize: bool,
) -> tuple[Any, Any]:
    """The ``--from`` file's two columns as they are (counts for ``--from-counts``)."""
    if p0 is not None or p1 is not None:
        fail("give P0 and P1 either inline (--p0/--p1) or from a file (--from), not both")
    if normalize:
        fail("--normalize rescales probabilities; --from-counts needs the counts as they are")
    from ldpopt.deploy.pairs import read_pair_records

    try:
        _, a, b, labels = read_pair_records(source, p0=p0_col, p1=p1_col, label=label_col)[0]
    except (ValueError, TypeError) as exc:
        fail(f"--from {_to_cli(str(exc))}")
    if labels is None:
        return np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return dict(zip(labels, a, strict=True)), dict(zip(labels, b, strict=True))


def load_mechanism_file(path: Path, option: str | None = None) -> Any:
    """The mechanism file at ``path`` (a :class:`~ldpopt.deploy.files.MechanismFile`), read and
    re-validated by :func:`ldpopt.load_mechanism`; any problem is a one-line error (exit 2) naming
    the file, after ``option`` (``"--mechanism"``) when the file was given with one."""
    from ldpopt.deploy.files import MechanismFileError, load_mechanism

    try:
        return load_mechanism(path)
    except MechanismFileError as exc:
        fail(f"{option} {exc}" if option else str(exc))


#: up to this alphabet size the CLI solves with the readable dynamic program (method="dp", numpy
#: only): it answers in milliseconds there, while the compiled solver's first call loads numba
#: (about a second); both are exact (benchmarks/README.md, "CLI start-up")
CLI_READABLE_MAX_K = 100


def solve(p0: Any, p1: Any, eps: float, divergence: Any = "kl", max_outputs: int | None = None) -> Any:
    """:func:`ldpopt.optimal_mechanism` with the solver a command-line call wants (see
    :data:`CLI_READABLE_MAX_K`)."""
    import ldpopt

    method = "dp" if len(p0) <= CLI_READABLE_MAX_K else "auto"
    return ldpopt.optimal_mechanism(p0, p1, eps, divergence, max_outputs, method=method)


def need(module: str, feature: str, extra: str) -> Any:
    """``module`` imported, or a one-line error (exit 2) naming the extra that installs it."""
    try:
        return require(module, feature, extra)
    except MissingExtraError as exc:
        fail(str(exc))


def fmt(value: Any) -> str:
    """A value for a table cell or a message.

    Real numbers to 6 significant digits, integers in full, ``-`` for None and NaN, booleans as
    ``true``/``false``, lists and tuples comma-joined (``[n items]`` beyond 12), anything else
    with ``str``.
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (float, np.floating)):
        return "-" if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(x) for x in value) if len(value) <= 12 else f"[{len(value)} items]"
    return str(value)


def plural(n: int, noun: str) -> str:
    """``"1 output"``, ``"3 outputs"``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def json_safe(obj: Any) -> Any:
    """A JSON-ready copy of ``obj``: dict keys as strings, tuples as lists, numpy scalars as Python
    numbers, non-finite floats as None (JSON has no NaN or infinity)."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return json_safe(obj.item())
    return obj


def partition_table(res, title: str, column: str = "symbols (likelihood-ratio order)") -> Table:
    """A table of the result's blocks, one row per output, symbols shown by label."""
    t = Table(title=title)
    t.add_column("output")
    t.add_column(column)
    for j, block in enumerate(res.labelled_partition):
        t.add_row(str(j), ", ".join(map(str, block)))
    return t


def write_json(path: Path, payload: dict | list, *, announce: bool = True) -> None:
    """Write ``payload`` as indented, strict JSON (no NaN or Infinity: non-finite numbers become
    ``null``) to ``path`` (``-``: standard output) through the atomic-write helper, which never
    replaces a link, FIFO or device; a failure is a one-line error.  ``announce``: say "wrote
    PATH" (never for standard output, which holds the JSON alone)."""
    text = json.dumps(json_safe(payload), indent=2, allow_nan=False) + "\n"
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        fail(f"cannot write --json {path}: {exc.strerror or exc}")
    if announce and not is_stdout(path):
        console.print(f"wrote {path}")


def one_stdout(outputs: Mapping[str, Path | None]) -> None:
    """Refuse (exit 2) two outputs named ``-``: standard output holds one document, and two
    written one after the other parse as neither.  ``outputs``: option -> path given."""
    named = [option for option, path in outputs.items() if path is not None and is_stdout(path)]
    if len(named) > 1:
        fail(f"{' and '.join(named)} both name standard output ('-'); give a file for all but one")


@contextmanager
def report_to_stderr_if_json_on_stdout(json_out: Path | None, *, quiet: bool = True) -> Iterator[None]:
    """While a command's JSON result (or another output named ``-``) goes to standard output, its
    tables and messages go away (``quiet``, unless ``--verbose``) or to standard error, so that
    stdout is that document alone."""
    if json_out is None or not is_stdout(json_out):
        yield
        return
    import io

    with console.redirect(sys.stderr if _Verbose.on or not quiet else io.StringIO()):
        yield


#: help-text metavars by typer's type label (typer 0.29 prints "<float>", "<bool>", "<int range>", ...)
_METAVARS = {
    "<float>": "X",
    "<float range>": "X",
    "<int>": "N",
    "<int range>": "N",
    "<str>": "TEXT",
    "<list[str]>": "TEXT",
    "<path>": "FILE",
}


def _plain_argument(param: Any) -> None:
    """An argument shown as click shows it: ``NAME`` (``[NAME]`` when optional) in the usage line,
    no type label (typer 0.29 prints ``{NAME}`` and ``NAME <path>``)."""
    if param.metavar is None and param.name:
        param.metavar = param.name.upper()
    shown = param.metavar if param.required else f"[{param.metavar}]"
    shown += "..." if param.nargs != 1 else ""
    param.get_usage_pieces = lambda ctx: [shown]
    param.display_type_rich = lambda ctx: None


def command(help_requested: bool = True) -> Any:
    """The click command of :data:`app`; when help is requested, with plain help texts: flags
    without a placeholder, values as ``X``/``N``/``TEXT``/``FILE``, arguments by name (a walk over
    every command, skipped otherwise to keep start-up short)."""
    group = typer.main.get_command(app)
    if not help_requested:
        return group

    def walk(cmd: Any, ctx: Any) -> None:
        for param in cmd.params:
            kind = getattr(param, "param_type_name", "")
            if kind == "argument":
                _plain_argument(param)
            if kind != "option" or param.metavar is not None:
                continue
            if param.is_flag or param.is_bool_flag:
                param.metavar = ""
            else:
                label = param.display_type(ctx) if hasattr(param, "display_type") else None
                param.metavar = _METAVARS.get(str(label), None)
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub, type(ctx)(sub, parent=ctx, info_name=sub.name))

    walk(group, group.make_context("ldpopt", [], resilient_parsing=True))
    return group


def _version_callback(value: bool) -> None:
    if value:
        from ldpopt import __version__

        console.print(f"ldpopt {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_version_callback,
        is_eager=True,
    ),
) -> None:
    """Exactly optimal local-differential-privacy mechanisms."""
