"""Shared CLI helpers: settings from the global options, the admitted event of a command."""

from __future__ import annotations

import argparse
import getpass
import os
from typing import Any

from simone.runtime import Settings, load_settings


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings for a command: ``--config`` and ``--data-dir`` over the environment and the file."""
    overrides: dict[str, Any] = {}
    data_dir = getattr(args, "data_dir", None)
    if data_dir:
        overrides["data_dir"] = data_dir
    return load_settings(getattr(args, "config", None), **overrides)


def default_actor() -> str:
    """``$SIMONE_ACTOR``, else the login name, else ``cli``."""
    env = os.environ.get("SIMONE_ACTOR")
    if env:
        return env
    try:
        return getpass.getuser() or "cli"
    except (KeyError, OSError):
        return "cli"


def add_scope_arguments(parser: argparse.ArgumentParser) -> None:
    """``--actor``, ``--project``, ``--conversation``: the event the command is admitted as."""
    parser.add_argument(
        "--actor", default=None, help="who is asking (default: $SIMONE_ACTOR or the login name)"
    )
    parser.add_argument("--project", default=None, help="the project scope")
    parser.add_argument("--conversation", default=None, help="the conversation scope")


def event_from_args(args: argparse.Namespace, text: str = "") -> dict[str, Any]:
    """The event (as a mapping) a command is admitted as."""
    event: dict[str, Any] = {"actor": args.actor if args.actor is not None else default_actor(), "text": text}
    if args.project:
        event["project"] = args.project
    if args.conversation:
        event["conversation"] = args.conversation
    return event
