"""Jupyter notebooks (``.ipynb``, nbformat 4 and the older 3): plain JSON, the standard library reads it.

Markdown cells are kept as they are (their headings give the sections); code cells become fenced
code in the kernel's language; outputs follow their cell as text (streams, ``text/plain`` and
``text/markdown`` results, errors as ``Name: value``), each cut to :data:`MAX_OUTPUT_CHARS`. Images
and widget state are left out. The title is the metadata's ``title``, else the first heading.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simone.providers.documents._formats._common import (
    Extracted,
    FormatSkip,
    escape_text,
    fenced,
    join_blocks,
)

MAX_OUTPUT_CHARS = 2_000
"""Characters kept of one cell's outputs (a long log or dataframe dump is cut)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_FIRST_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def read_notebook(text: str) -> Extracted:
    """A notebook's JSON ``text`` (see the module docstring).

    Raises:
        FormatSkip: not JSON, not a notebook, or no cell with text.
    """
    try:
        notebook = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise FormatSkip(f"notebook is not valid JSON: {exc}") from exc
    if not isinstance(notebook, dict):
        raise FormatSkip("not a Jupyter notebook (the JSON is not an object)")
    cells = notebook.get("cells")
    if cells is None and isinstance(notebook.get("worksheets"), list):  # nbformat 3
        cells = [
            cell
            for sheet in notebook["worksheets"]
            if isinstance(sheet, dict)
            for cell in sheet.get("cells", [])
        ]
    if not isinstance(cells, list):
        raise FormatSkip("not a Jupyter notebook (no cells)")
    found = notebook.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    language = _language(metadata)
    blocks: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        source = _joined(cell.get("source", cell.get("input", "")))
        kind = cell.get("cell_type")
        if kind in ("markdown", "heading"):
            if kind == "heading":  # nbformat 3 heading cells
                source = "#" * int(cell.get("level", 1) or 1) + " " + source
            blocks.append(source)
        elif kind == "code":
            if source.strip():
                blocks.append(fenced(source, language))
            output = _outputs(cell.get("outputs", []))
            if output:
                blocks.append(fenced(output, "output"))
        elif kind == "raw" and source.strip():
            blocks.append(escape_text(source))
    body = join_blocks(blocks)
    if not body:
        raise FormatSkip("notebook without any cell text")
    title = metadata.get("title") if isinstance(metadata.get("title"), str) else None
    if not title:
        found = _FIRST_HEADING.search(body)
        title = found[1] if found else None
    return Extracted(title=title, text=body)


def _language(metadata: dict[str, Any]) -> str:
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(field), str):
            return re.sub(r"[^A-Za-z0-9_+-]", "", value[field])[:20]
    return ""


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def _outputs(outputs: Any) -> str:
    if not isinstance(outputs, list):
        return ""
    parts: list[str] = []
    for output in outputs:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_joined(output.get("text")))
        elif kind in ("execute_result", "display_data", "pyout"):
            found = output.get("data")
            data: dict[str, Any] = found if isinstance(found, dict) else output
            parts.append(_joined(data.get("text/markdown") or data.get("text/plain") or data.get("text")))
        elif kind in ("error", "pyerr"):
            parts.append(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
    text = _ANSI.sub("", "\n".join(part.rstrip("\n") for part in parts if part.strip()))
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[: MAX_OUTPUT_CHARS - 1] + "…"
    return text
