"""E-mail: one message (``.eml``) or a mailbox (``.mbox``), through the standard library's ``email``.

A message is a section titled by its subject, opening with its From/To/Cc/Date lines, then its
body (the plain-text part, else the HTML part as text), then each attachment whose file type the
index reads (a PDF, a DOCX, a CSV…) as a subsection with that file's own text; other attachments are
listed by name. A mailbox is split at its ``From `` lines (mboxo and mboxrd quoting undone), one
section per message, in file order.
"""

from __future__ import annotations

import re
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from simone.providers.documents._formats._common import (
    Extracted,
    FormatSkip,
    demote,
    escape_text,
    heading,
    join_blocks,
    one_line,
)
from simone.providers.documents._formats._html import html_to_markdown
from simone.providers.documents._formats._registry import AttachmentReader

MAX_MESSAGES = 10_000
"""Messages read from one mailbox; the rest are left out with a note."""

_FROM_LINE = re.compile(rb"^From [^\n]*\n", re.MULTILINE)
_QUOTED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)


def read_eml(data: bytes, read_attachment: AttachmentReader) -> Extracted:
    """One message (see the module docstring).

    Raises:
        FormatSkip: no headers and no body.
    """
    message = _parse(data)
    subject = one_line(str(message.get("subject", "") or ""))
    blocks, notes = _message_blocks(message, read_attachment, level=1)
    if not blocks:
        raise FormatSkip("e-mail without headers or text")
    return Extracted(title=subject or None, text=join_blocks(blocks), notes=tuple(notes))


def read_mbox(data: bytes, read_attachment: AttachmentReader) -> Extracted:
    """A mailbox (see the module docstring).

    Raises:
        FormatSkip: no message in it.
    """
    starts = [match.start() for match in _FROM_LINE.finditer(data)]
    if not starts or data[: starts[0]].strip():
        raise FormatSkip("not an mbox file (it does not start with a 'From ' line)")
    blocks: list[str] = []
    notes: list[str] = []
    for number, start in enumerate(starts[:MAX_MESSAGES]):
        end = starts[number + 1] if number + 1 < len(starts) else len(data)
        raw = data[data.index(b"\n", start) + 1 : end]
        message = _parse(_QUOTED_FROM.sub(rb"\1", raw))
        message_blocks, message_notes = _message_blocks(message, read_attachment, level=2)
        blocks += message_blocks
        notes += message_notes
    if len(starts) > MAX_MESSAGES:
        notes.append(f"messages after the first {MAX_MESSAGES:,} left out")
    if not blocks:
        raise FormatSkip("mbox without readable messages")
    return Extracted(title=None, text=join_blocks(blocks), notes=tuple(notes))


def _parse(data: bytes) -> EmailMessage:
    message = BytesParser(policy=policy.default).parsebytes(data)
    if not isinstance(message, EmailMessage):  # policy.default always builds EmailMessage
        raise FormatSkip("not an e-mail message")
    return message


def _message_blocks(
    message: EmailMessage, read_attachment: AttachmentReader, *, level: int
) -> tuple[list[str], list[str]]:
    notes: list[str] = []
    subject = one_line(_header(message, "subject")) or "(no subject)"
    lines = [
        f"{name}: {escape_text(value)}"
        for name in ("From", "To", "Cc", "Date")
        if (value := one_line(_header(message, name)))
    ]
    blocks = [heading(level, subject), "\n".join(lines)]
    body = _body(message)
    if body:
        blocks.append(body)
    attachments: list[str] = []
    for part in message.iter_attachments():
        if not isinstance(part, EmailMessage):
            continue
        name = one_line(part.get_filename() or "") or "(unnamed attachment)"
        try:
            payload = part.get_content()
        except (LookupError, ValueError, AssertionError, KeyError) as exc:  # undecodable part
            notes.append(f"attachment {name} could not be decoded: {exc}")
            continue
        if isinstance(payload, EmailMessage):
            payload = payload.as_bytes()
        data = payload.encode("utf-8") if isinstance(payload, str) else payload
        if not isinstance(data, bytes):
            continue
        read = read_attachment(name, data)
        if isinstance(read, str):
            attachments.append(f"- {escape_text(name)} ({read})")
            continue
        blocks += [heading(level + 1, f"Attachment: {name}"), demote(read.text, level + 1)]
        notes += [f"attachment {name}: {note}" for note in read.notes]
    if attachments:
        blocks += [heading(level + 1, "Other attachments"), "\n".join(attachments)]
    return blocks, notes


def _header(message: EmailMessage, name: str) -> str:
    try:
        return str(message.get(name, "") or "")
    except (ValueError, IndexError, TypeError):  # a malformed header the policy cannot parse
        return ""


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError, KeyError):
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return ""
    if part.get_content_subtype() == "html":
        try:
            return demote(html_to_markdown(content)[1], 1)
        except FormatSkip:
            return ""
    text = content.replace("\r\n", "\n").replace("\r", "\n").strip()
    return escape_text(text)
