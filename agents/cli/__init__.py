"""The ``simone`` command line."""

from simone.agents.cli._main import console as console, main as main

__all__ = ("console", "main")
