"""The ``simone`` command line."""

from simone.agents.cli._main import main as main

__all__ = ("main",)
