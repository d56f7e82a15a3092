"""Human-readable rendering of results for the terminal (``--json`` prints the model instead)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from simone.runtime import RetrievalResult, Status

STATUS_STYLE = {
    Status.COMPLETE: "green",
    Status.PARTIAL: "yellow",
    Status.NO_RESULTS: "cyan",
    Status.FAILED: "red",
    Status.FORBIDDEN: "red",
}


PIPED_WIDTH = 4096
"""The width rich lays tables out in when the output is not a terminal (lines are never wrapped then)."""


def make_console(*, stderr: bool = False) -> Console:
    """A console for stdout (or stderr): the terminal's width on a terminal; piped, nothing is wrapped.

    rich lays out for 80 columns when the output is not a terminal, which split long locators and titles
    over two lines in ``simone search … | grep``; piped output keeps each printed line whole instead.
    """
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=PIPED_WIDTH, soft_wrap=True)


def exit_code(status: Status) -> int:
    """0 when evidence (or an honest "nothing found") came back, 1 when the request failed or was refused."""
    return 1 if status in (Status.FAILED, Status.FORBIDDEN) else 0


def print_result(result: RetrievalResult, console: Console, *, preview_chars: int = 400) -> None:
    """Evidence with sources and locators, then status, failures, limitations and the budget report."""
    for number, item in enumerate(result.evidence, start=1):
        flags = " [yellow](truncated)[/]" if item.metadata.get("truncated") else ""
        console.print(
            f"[bold][{number}][/] [bold]{escape(item.title or item.locator)}[/]{flags}\n"
            f"    [dim]{escape(item.provider_name)} · {escape(item.locator)} · "
            f"score {item.score:.3f} · fused {item.fused_score or 0:.4f} · {item.trust.value}[/]"
        )
        text = " ".join(item.content.split())
        if len(text) > preview_chars:
            text = text[:preview_chars].rsplit(" ", 1)[0] + " …"
        console.print(f"    {escape(text)}\n")
    style = STATUS_STYLE[result.status]
    console.print(f"status: [bold {style}]{result.status.value}[/]  ({len(result.evidence)} item(s))")
    for selection in result.request.selected:
        console.print(f"  [dim]asked {escape(selection.provider)}: {escape(selection.reason)}[/]")
    for selection in result.request.dropped:
        console.print(f"  [dim]dropped {escape(selection.provider)}: {escape(selection.reason)}[/]")
    for failure in result.failures:
        where = f"{failure.provider}/{failure.leg}" if failure.leg else failure.provider
        retry = " (retryable)" if failure.retryable else ""
        console.print(f"  [red]failure[/] {escape(where)}: {failure.kind}{retry} — {escape(failure.message)}")
    for note in result.limitations:
        console.print(f"  [yellow]limitation[/] {escape(note)}")
    budget = result.budget
    table = Table(title="budget", show_header=True, header_style="bold", box=None)
    for column in ("max", "used", "included", "truncated", "omitted", "duplicates", "estimator"):
        table.add_column(column)
    table.add_row(
        str(budget.max_tokens),
        str(budget.used_tokens),
        str(budget.included),
        str(budget.truncated),
        str(budget.omitted),
        str(budget.duplicates_dropped),
        budget.estimator,
    )
    console.print(table)
    timings = ", ".join(f"{p.provider} {p.elapsed_ms:.1f} ms" for p in result.trace.providers)
    console.print(
        f"[dim]took {result.trace.total_ms:.1f} ms ({timings}; router {result.trace.router_ms:.2f} ms)[/]"
    )
