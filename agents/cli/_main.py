"""The ``simone`` entry point: argparse with one sub-command module per command group.

Each module ``simone.agents.cli._<name>`` exposes ``register(subparsers)``, which adds its parser(s) and
sets ``func`` (an ``async def (args) -> int`` returning the exit code) with ``parser.set_defaults``.

Every error a user can cause ends in one line on stderr, ``simone: error: <what> — <what to do>``, and
the documented exit status: 2 for a usage error (bad arguments), 1 for anything else. An error simone
did not foresee is one line too, plus the traceback when ``SIMONE_DEBUG=1``.

Start-up imports only what the command run needs: the parser is built in two steps, first with a
placeholder per command (its one-line help from :data:`COMMAND_HELP`) to learn which command was given,
then with that command's module imported and registered. ``simone --help`` and ``simone --version``
import no command module, and so none of pydantic, anyio, LanceDB, onnxruntime or the MCP SDK.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from simone.agents.cli._settings import CliArgs

COMMANDS: tuple[str, ...] = (
    "index",
    "search",
    "ask",
    "research",
    "memory",
    "doctor",
    "mcp",
    "serve",
    "token",
)
"""Command modules, in the order they appear in ``simone --help``."""

COMMAND_HELP: dict[str, str] = {
    "index": "index files into the document index (incremental; Markdown, text, code, HTML, PDF)",
    "search": "search the document index (or a folder of text files) through the router",
    "ask": "answer a question with citations from memory and the indexed documents",
    "research": "bounded web research with cited sources (needs a search backend)",
    "memory": "notes, todos, checklists, facts and task states (SQLite or PostgreSQL, scoped)",
    "doctor": "show the index's collections, spaces, pending rows and the embedding chain's health",
    "mcp": "serve retrieve_context, the memory tools (and web_research for researchers) over MCP stdio",
    "serve": "serve the MCP tools over streamable HTTP to many callers, scoped by bearer tokens",
    "token": "create, list and revoke the bearer tokens of 'simone serve'",
}
"""Each command's one-line help in ``simone --help``, shown without importing its module (a test checks
it is the help its module registers). A command missing here is imported to learn it."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

DEBUG_ENV = "SIMONE_DEBUG"
"""Set to ``1`` to get the traceback of an unexpected error (after its one-line message)."""


class CliParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: ``simone: error: <what> — see '<cmd> --help'``.

    A value that is not one of an argument's choices (a command, a sub-command, ``--role``…) gets the
    closest choice as a suggestion, ``did you mean 'search'?``, when one is close enough (difflib).
    """

    _suggestion: str | None = None

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own check (a private method, unchanged since Python 2.7); only the hint is added
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            self._suggestion = suggest(str(value), [str(choice) for choice in action.choices or ()])
            raise

    def error(self, message: str) -> NoReturn:
        """Print the one-line usage error and exit 2 (argparse prints the usage and the error otherwise)."""
        command = self.prog.removeprefix("simone").strip()
        where = f"{command}: " if command else ""
        todo = f"see '{self.prog} --help'"
        if self._suggestion is not None:
            todo = f"did you mean {self._suggestion!r}? {todo}"
        self.exit(EXIT_USAGE, f"simone: error: {where}{_one_line(message)} — {todo}\n")


def suggest(value: str, choices: Sequence[str]) -> str | None:
    """The choice closest to a mistyped ``value`` (difflib's ratio at least 0.6), or ``None``."""
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    if not close and value.lower() != value:
        close = difflib.get_close_matches(value.lower(), choices, n=1, cutoff=0.6)
    return close[0] if close else None


def version() -> str:
    """The installed distribution's version (``unknown`` when run from a tree that was never installed)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("simone")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version``: looks the installed version up only when asked (the metadata scan costs start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        sys.stdout.write(f"simone {version()}\n")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; every command's module registered, or only ``command``'s (the rest as placeholders).

    Args:
        command: the command the arguments name (from a first parse with placeholders only, see
            :func:`main`); ``None`` registers every command — the full parser.
    """
    return _parser(command, placeholders=command is not None)


def _parser(command: str | None, *, placeholders: bool) -> argparse.ArgumentParser:
    from simone.agents.cli._settings import nonempty_path

    parser = CliParser(
        prog="simone",
        description="Routed retrieval for agents: memory, documents and researcher-only web search.",
        epilog="exit status: 0 ok, 1 error, 2 usage error, 3 no results (ask, research, memory search)",
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    parser.add_argument(
        "--config",
        type=nonempty_path,
        help="path to simone.toml (default: $SIMONE_CONFIG or ./simone.toml)",
    )
    parser.add_argument(
        "--data-dir",
        type=nonempty_path,
        help="where the index, memory and caches live (default: per-user data dir)",
    )
    parser.add_argument(
        "--json",
        dest="json_first",
        action="store_true",
        help="print JSON, as the command's own --json does (for the commands that print JSON)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if placeholders and name != command and name in COMMAND_HELP:
            # add_help=False: `simone CMD --help` reaches the second parse, which has CMD's own parser
            subparsers.add_parser(name, help=COMMAND_HELP[name], add_help=False)
        else:
            module = importlib.import_module(f"simone.agents.cli._{name}")
            module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 error, 2 usage, 3 no results where documented)."""
    from simone.agents.cli._settings import CliArgs

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        # first parse: placeholders only, to learn the command (or print the top-level help/version)
        first, _ = _parser(None, placeholders=True).parse_known_args(argv, CliArgs())
        parser = build_parser(first.command or "")
        args = parser.parse_args(argv, CliArgs())
        if args.json_first and args.func is not None:
            # `simone --json CMD` is `simone CMD --json`; a command's own --json default would overwrite a
            # shared dest, so the top-level flag has its own
            if not hasattr(args, "json"):
                parser.error(f"--json: '{_command(args)}' prints no JSON")
            args.json = True
    except SystemExit as exc:  # --help, --version, or a usage error (already printed, one line)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    func = args.func
    if func is None:
        parser.print_help()
        return EXIT_USAGE
    import anyio

    try:
        return anyio.run(func, args)
    except KeyboardInterrupt:
        print("simone: interrupted", file=sys.stderr)  # noqa: T201
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place every error becomes one line
        if isinstance(_leaf(exc), BrokenPipeError):
            # The reader of stdout went away (`simone … | head`): nothing left to say to anyone.
            _silence_stdout()
            return EXIT_ERROR
        return report(exc, _command(args), data_dir=args.resolved_data_dir)


def console() -> NoReturn:
    """The ``simone`` command: :func:`main`, then :func:`exit_now` with its code."""
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """End the process with ``code``, skipping the interpreter's finalisation when that is safe.

    Tearing down a process that loaded LanceDB and onnxruntime (module teardown, destructors of their
    native objects) took 0.3–0.5 s of a 2.5 s ``simone search``. Everything simone writes is written
    and closed by then (its stores are context managers), so the process flushes stdout and stderr,
    runs the ``atexit`` handlers (logging, Ray's shutdown, temporary files) and leaves with
    ``os._exit``. When another non-daemon thread is still alive (its work could be cut short), or
    this Python offers no way to run the handlers, it exits normally instead.
    """
    import atexit
    import threading

    _flush()
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    others = [
        t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()
    ]
    if run_handlers is None or others:
        sys.exit(code)
    run_handlers()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or a closed stream: nothing more can be said there
            pass


def report(exc: BaseException, command: str = "simone", *, data_dir: Path | None = None) -> int:
    """Print ``exc`` as one line on stderr (and its traceback under ``SIMONE_DEBUG=1``); the exit code.

    Args:
        exc: the error (an exception group stands for its first error).
        command: the command that failed, for the ``--help`` hint.
        data_dir: the data directory the command used, when its settings were loaded: an error while
            it is read-only says so.
    """
    import traceback

    from simone.runtime import ConfigError

    exc = _leaf(exc)
    what, todo, foreseen = describe(exc, command)
    debug = os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    line = _one_line(what)
    read_only = not isinstance(exc, ConfigError) and data_dir is not None and _read_only(data_dir)
    if read_only:
        line = f"{line} — the data directory {data_dir} is read-only: make it writable or pass --data-dir DIR"
    elif " — " not in line:
        line = f"{line} — {todo}"
    if not foreseen and not debug:
        line = f"{line}; run with {DEBUG_ENV}=1 for the traceback"
    print(f"simone: error: {line}", file=sys.stderr)  # noqa: T201
    return EXIT_ERROR


def _read_only(path: Path) -> bool:
    try:
        return path.is_dir() and not os.access(path, os.W_OK)
    except OSError:
        return False


def describe(exc: BaseException, command: str = "simone") -> tuple[str, str, bool]:
    """What went wrong, what to do about it, and whether simone foresaw this kind of error."""
    import sqlite3

    from pydantic import ValidationError
    from simone.runtime import NotFound, ProviderError, SimoneError, describe_validation_error

    help_hint = f"see '{command} --help'"
    if isinstance(exc, SimoneError):
        what = str(exc)
        cause = exc.__cause__
        if isinstance(cause, ValidationError) and str(cause) in what:
            what = what.replace(str(cause), describe_validation_error(cause))
        if isinstance(exc, NotFound):
            return (
                what,
                "check the id and the scope (--actor, --project); 'simone memory list' shows them",
                True,
            )
        if isinstance(exc, ProviderError):
            return what, "try again, or run 'simone doctor' to check the set-up", True
        return what, help_hint, True
    if isinstance(exc, ValidationError):
        return f"invalid input: {describe_validation_error(exc)}", help_hint, True
    if isinstance(exc, sqlite3.Error):
        return (
            f"the memory database failed: {exc}",
            "check that the data directory (--data-dir, SIMONE_DATA_DIR) exists and is writable",
            True,
        )
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
        where = f": {' → '.join(names)}" if names else ""
        return (
            f"{reason}{where}",
            "check the path and its permissions (the data directory is --data-dir or SIMONE_DATA_DIR)",
            True,
        )
    if isinstance(exc, UnicodeError):
        return f"text that is not valid UTF-8: {exc}", "pass UTF-8 text and files (or re-encode them)", True
    return f"unexpected {type(exc).__name__}: {exc}", "this is a bug worth reporting", False


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, as task groups raise them."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _one_line(text: str) -> str:
    """``text`` on one line: its lines joined with ``; `` and runs of spaces folded."""
    parts = [" ".join(line.split()) for line in str(text).splitlines()]
    return "; ".join(part for part in parts if part) or "(no message)"


def _command(args: CliArgs) -> str:
    sub = args.memory_command or args.token_command
    words = ["simone", args.command, sub]
    return " ".join(w for w in words if w)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test's capture)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
