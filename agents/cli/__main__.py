"""``python -m simone.agents.cli`` — the same as the ``simone`` command."""

import sys

from simone.agents.cli._main import main

sys.exit(main())
