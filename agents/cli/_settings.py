"""Shared CLI helpers: settings from the global options, argument types, the admitted event of a command."""

from __future__ import annotations

import argparse
import getpass
import math
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simone.runtime import Settings


class CliArgs(argparse.Namespace):
    """The parsed command line (``simone``'s parser parses into one): the attributes every command has.

    A command's own options (``--json``, ``--actor``…) are set by argparse as on any namespace.

    Attributes:
        config: ``--config``, if given.
        data_dir: ``--data-dir``, if given.
        command: the command (``None``: none given).
        memory_command, token_command: the sub-command of ``simone memory`` and ``simone token``.
        func: the command's ``async def (args) -> int`` (``None``: no command given).
        resolved_data_dir: the data directory of the loaded settings (set by :func:`settings_from_args`).
    """

    config: str | None = None
    data_dir: str | None = None
    command: str | None = None
    memory_command: str | None = None
    token_command: str | None = None
    func: Callable[[Any], Awaitable[int]] | None = None
    resolved_data_dir: Path | None = None


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings for a command: ``--config`` and ``--data-dir`` over the environment and the file.

    Args:
        args: the parsed command line (a :class:`CliArgs`, which always has ``config`` and ``data_dir``).

    Raises:
        ConfigError: the settings are invalid, or the data directory cannot be a folder (it is a file,
            or lies under one, like ``/dev/null``).
    """
    from simone.runtime import load_settings

    overrides: dict[str, Any] = {}
    if args.data_dir:
        overrides["data_dir"] = args.data_dir
    settings = load_settings(args.config, **overrides)
    check_data_dir(Path(settings.data_dir))
    args.resolved_data_dir = Path(settings.data_dir)  # for the error report (a read-only data dir)
    return settings


def check_data_dir(path: Path) -> None:
    """Refuse a data directory that can never be a folder: it is a file, or a file stands on its path.

    A missing folder is fine (it is created on first use); whether it is writable is found out when a
    command writes, and reported then.

    Raises:
        ConfigError: ``path`` or one of its parents exists and is not a directory.
    """
    from simone.runtime import ConfigError

    probe = path
    while True:
        try:
            if probe.exists():
                break
        except OSError:  # e.g. no permission to look: let the command report what it meets
            return
        if probe.parent == probe:
            return
        probe = probe.parent
    if not probe.is_dir():
        where = "is not a directory" if probe == path else f"lies under {probe}, which is not a directory"
        raise ConfigError(
            f"the data directory {path} {where} — pass --data-dir DIR (or set SIMONE_DATA_DIR) to a folder"
        )


def default_actor() -> str:
    """``$SIMONE_ACTOR``, else the login name, else ``cli``."""
    env = os.environ.get("SIMONE_ACTOR")
    if env:
        return env
    try:
        return getpass.getuser() or "cli"
    except (KeyError, OSError):
        return "cli"


# -- argument types (argparse turns their ArgumentTypeError into a one-line usage error, exit 2) ----


def _utf8(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # Python decodes argv bytes that are not UTF-8 to lone surrogates (surrogateescape).
        shown = value.encode("utf-8", "surrogateescape")[:40]
        raise argparse.ArgumentTypeError(
            f"{shown!r} is not valid UTF-8 text; pass it in UTF-8 (set a UTF-8 locale or re-encode it)"
        ) from None
    return value


def utf8_text(value: str) -> str:
    """Any text, empty included, that is valid UTF-8 (not bytes the shell passed undecoded)."""
    return _utf8(value)


def nonempty_text(value: str) -> str:
    """Valid UTF-8 text with at least one non-space character."""
    _utf8(value)
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


_COLLECTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def collection_name(value: str) -> str:
    """A collection name as ``index.collection`` allows: letters, digits, ``_ . -``, at most 128."""
    if not _COLLECTION.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{_utf8(value)!r} is not a collection name: use letters, digits, '_', '.' and '-' "
            "(first a letter or digit, at most 128)"
        )
    return value


def nonempty_path(value: str) -> str:
    """A path that is not empty (its bytes may be any the file system allows, UTF-8 or not)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty; give a path")
    return value


def positive_int(value: str) -> int:
    """An integer of at least 1."""
    number = _int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def non_negative_int(value: str) -> int:
    """An integer of at least 0."""
    number = _int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {number}")
    return number


def fraction(value: str) -> float:
    """A finite number from 0 to 1."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number; write e.g. 0.8") from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, not {value}")
    return number


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None


def add_scope_arguments(parser: argparse.ArgumentParser) -> None:
    """``--actor``, ``--project``, ``--conversation``: the event the command is admitted as."""
    parser.add_argument(
        "--actor",
        type=nonempty_text,
        default=None,
        help="who is asking (default: $SIMONE_ACTOR or the login name)",
    )
    parser.add_argument("--project", type=nonempty_text, default=None, help="the project scope")
    parser.add_argument("--conversation", type=nonempty_text, default=None, help="the conversation scope")


def event_from_args(args: argparse.Namespace, text: str = "") -> dict[str, Any]:
    """The event (as a mapping) a command is admitted as."""
    event: dict[str, Any] = {"actor": args.actor if args.actor is not None else default_actor(), "text": text}
    if args.project:
        event["project"] = args.project
    if args.conversation:
        event["conversation"] = args.conversation
    return event
