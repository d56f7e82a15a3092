"""``python -m simone.agents.cli`` — the same as the ``simone`` command."""

from simone.agents.cli._main import console

console()
