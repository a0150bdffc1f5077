"""The one progress bar of the library: rich on a terminal, quiet when piped or disabled.

:class:`ProgressBar` counts units of work and shows, on stderr,
``label  [bar]  done/total  [rate]  elapsed  ETA``.  rich is imported only when a bar is shown
(this module is the library's one allowed import of it outside the command line).

* On a terminal the bar redraws in place.  On a pipe or a file nothing is drawn while the work
  runs; a bar kept after the work (``transient=False``) writes its final state once, as a log
  line would.
* ``enabled=False`` shows nothing; ``delay`` seconds let short work finish without a bar (it
  appears at the first :meth:`~ProgressBar.advance` after the delay, if work remains).
* The rate and the ETA come from the work done since the bar appeared: rich's own speed
  estimate needs many updates, and a loop may have few.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["ProgressBar"]


def _rate(task) -> float | None:
    """Units per second done since the bar appeared (None before the first unit)."""
    done = task.completed - task.fields.get("initial", 0)
    return done / task.elapsed if task.elapsed and done > 0 else None


def _columns(unit: str | None) -> list:
    from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class _Rate(ProgressColumn):
        def render(self, task) -> Text:
            rate = _rate(task)
            text = f"-- {unit}/s" if rate is None else f"{rate:,.0f} {unit}/s"
            return Text(text, style="progress.data.speed")

    class _Eta(ProgressColumn):
        def render(self, task) -> Text:
            rate = _rate(task)
            if task.finished:
                return Text("done", style="progress.remaining")
            if rate is None or task.total is None:
                return Text("ETA -:--:--", style="progress.remaining")
            left = int(round((task.total - task.completed) / rate))
            return Text(
                f"ETA {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}", style="progress.remaining"
            )

    rate = [_Rate()] if unit is not None else []
    return [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *rate,
        TimeElapsedColumn(),
        _Eta(),
    ]


class ProgressBar:
    """A progress bar over ``total`` units of work.

    Parameters
    ----------
    total : int
        Units of work in all.
    label : str
        Shown left of the bar.
    enabled : bool
        ``False``: never show anything (``advance`` only counts).
    delay : float
        Seconds after which the bar may appear (0: at once).
    completed : int
        Units already done before this run (a resumed job); they do not count in the rate.
    unit : str, optional
        Name of a unit: adds a ``N unit/s`` column.
    transient : bool
        ``True`` (default): the bar disappears when closed; ``False``: its final state stays.

    Use it as a context manager (shown on entry when ``delay`` is 0, closed on exit) or call
    :meth:`advance` and :meth:`close`.
    """

    def __init__(
        self,
        total: int,
        label: str,
        *,
        enabled: bool = True,
        delay: float = 0.0,
        completed: int = 0,
        unit: str | None = None,
        transient: bool = True,
    ) -> None:
        self.total = total
        self.label = label
        self.done = completed
        self._enabled = enabled
        self._delay = delay
        self._unit = unit
        self._transient = transient
        self._start = time.perf_counter()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._pending = enabled  # the bar may still appear

    def __enter__(self) -> ProgressBar:
        if self._pending and self._delay <= 0:
            self._show()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import Progress

        console = Console(stderr=True)
        self._pending = False
        if self._transient and not console.is_terminal:
            return  # piped: a bar that disappears at the end would leave nothing to read
        self._bar = Progress(*_columns(self._unit), console=console, transient=self._transient)
        self._bar.start()
        self._task = self._bar.add_task(self.label, total=self.total, completed=self.done, initial=self.done)

    def advance(self, n: int = 1) -> None:
        """``n`` more units done."""
        self.done += n
        if self._bar is not None:
            assert self._task is not None  # added together with the bar
            self._bar.update(self._task, completed=self.done)
        elif self._pending and self.done < self.total and time.perf_counter() - self._start >= self._delay:
            self._show()

    def print(self, message: str, *, prefix: str = "") -> None:
        """Print ``message`` (plain text, never read as markup) above the bar on stderr, after
        ``prefix`` in bold red (a failure); nothing when the bar is disabled."""
        if not self._enabled:
            return
        from rich.console import Console
        from rich.markup import escape

        console = self._bar.console if self._bar is not None else Console(stderr=True)
        head = f"[bold red]{escape(prefix)}[/] " if prefix else ""
        console.print(head + escape(message), highlight=False)

    def close(self) -> None:
        """Show the final count and stop the bar (idempotent)."""
        if self._bar is not None:
            assert self._task is not None  # added together with the bar
            self._bar.update(self._task, completed=self.done)
            self._bar.stop()
            self._bar = None
        self._pending = self._enabled = False
