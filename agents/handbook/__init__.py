"""simone's handbook: the Markdown pages that ``simone ask`` indexes on a fresh machine (package data)."""
