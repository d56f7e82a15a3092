"""Package data: the all-MiniLM-L6-v2 tokenizer files (Apache-2.0; see ``NOTICE.md`` and ``LICENSE``)."""

from pathlib import Path

#: The folder holding ``tokenizer.json`` and its configuration files.
DATA_DIR = Path(__file__).parent
TOKENIZER_FILE = DATA_DIR / "tokenizer.json"

__all__ = ("DATA_DIR", "TOKENIZER_FILE")
