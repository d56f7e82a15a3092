"""The records of structured and session memory, and the inputs that create and change them.

Every input model derives from :class:`MemoryArgs`: frozen, ``extra="forbid"``, and refusing any key that
looks like a scope key (one of :data:`~simone.runtime.SCOPE_KEYS`, ``scope``, or a word for an owner such
as ``user`` or ``tenant``) at any depth and in any spelling with :class:`~simone.runtime.ScopeViolation`. Scope comes only
from the :class:`~simone.runtime.TrustedContext`; these models are what tools and the store accept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from simone.runtime import MAX_QUERY_CHARS, SCOPE_KEYS, InvalidRequest, ScopeViolation

MAX_TITLE_CHARS = 512
"""Titles, subjects, predicates and task names are short labels, not documents."""

Title = Annotated[str, Field(min_length=1, max_length=MAX_TITLE_CHARS)]
Body = Annotated[str, Field(max_length=1_000_000)]
"""A hard ceiling for the wire; the store enforces the configured ``memory.max_body_chars``."""
RecordId = Annotated[str, Field(min_length=1, max_length=128)]
Tag = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^\S+$")]
SeqNumber = Annotated[int, Field(ge=0, le=2**62)]
"""A revision or sequence number: it must fit SQLite's 64-bit integers with room to count on."""


class RecordKind(StrEnum):
    """The kinds of structured memory."""

    NOTE = "note"
    TODO = "todo"
    CHECKLIST = "checklist"
    FACT = "fact"
    TASK_STATE = "task_state"


class NoteStatus(StrEnum):
    """A note is active until it is archived (its "complete")."""

    ACTIVE = "active"
    ARCHIVED = "archived"


class TodoStatus(StrEnum):
    """The life of a todo (and of a task state)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    BLOCKED = "blocked"
    CANCELLED = "cancelled"


class Priority(StrEnum):
    """A todo's priority."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class ChecklistStatus(StrEnum):
    """A checklist is open until it is completed."""

    OPEN = "open"
    COMPLETED = "completed"


class ItemStatus(StrEnum):
    """The state of one checklist item."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    BLOCKED = "blocked"
    SKIPPED = "skipped"


class FactStatus(StrEnum):
    """A fact is active, superseded by a newer fact, or retired (its "complete")."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    RETIRED = "retired"


STATUSES: dict[RecordKind, type[StrEnum]] = {
    RecordKind.NOTE: NoteStatus,
    RecordKind.TODO: TodoStatus,
    RecordKind.CHECKLIST: ChecklistStatus,
    RecordKind.FACT: FactStatus,
    RecordKind.TASK_STATE: TodoStatus,
}
"""The status vocabulary of each kind."""

# -- scope guard ---------------------------------------------------------------------------------------

# The scope keys come from runtime's SCOPE_KEYS (the one vocabulary; agents' FORBIDDEN_ARGUMENT_KEYS
# derives from it too); the rest are words a model might use to smuggle an owner into arguments.
_SCOPE_WORDS = frozenset(SCOPE_KEYS) | frozenset(
    {
        "scope",
        "caller",
        "user",
        "tenant",
        "owner",
        "session",
        "context",
        "trustedcontext",
        "namespace",
        "workspace",
        "organization",
        "org",
        "visibility",
        "global",
    }
)
_SUFFIXES = ("uuid", "ids", "id", "name", "key", "ref", "s")


def scope_like(key: str) -> bool:
    """Whether an argument key names a scope (any case, separators, ``_id``/``Id``/``s`` suffixes).

    ``"Project"``, ``"conversation_id"``, ``"threadId"``, ``"ACTOR-NAME"`` and ``"scopes"`` all do.
    """
    word = re.sub(r"[^0-9a-z]", "", key.casefold())
    if word in _SCOPE_WORDS:
        return True
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and word[: -len(suffix)] in _SCOPE_WORDS:
            return True
    return False


def find_scope_keys(value: Any, path: str = "") -> list[str]:
    """Dotted paths of every scope-like key in a JSON-like value (mappings and lists, any depth)."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and scope_like(key):
                found.append(where)
            found.extend(find_scope_keys(item, where))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found.extend(find_scope_keys(item, f"{path}[{index}]"))
    return found


def refuse_scope_keys(value: Any, what: str = "memory arguments") -> None:
    """Raise :class:`ScopeViolation` if ``value`` carries any scope-like key, at any depth."""
    found = find_scope_keys(value)
    if found:
        raise ScopeViolation(
            f"{what} carry scope fields ({', '.join(found)}); scope comes only from the trusted context "
            "of the request. Remove these fields; the record is written under the caller's own scope."
        )


class MemoryArgs(BaseModel):
    """Base of every memory input: frozen, no extra fields, and no scope fields at any depth."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)

    @model_validator(mode="before")
    @classmethod
    def _no_scope(cls, data: Any) -> Any:
        # ScopeViolation is not a ValueError, so pydantic lets it through unwrapped.
        refuse_scope_keys(data, f"{cls.__name__} arguments")
        return data


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("timestamps must carry a timezone (e.g. 2026-01-31T12:00:00Z)")
    return value.astimezone(UTC)


def _unique_tags(tags: list[str] | None) -> list[str] | None:
    if tags is None:
        return None
    return list(dict.fromkeys(tags))


# -- inputs --------------------------------------------------------------------------------------------


class ChecklistItemSpec(MemoryArgs):
    """An item to create, with optional nested children."""

    text: Annotated[Title, Field(description="the text of the item")]
    status: Annotated[ItemStatus, Field(description="the state of the item")] = ItemStatus.PENDING
    children: list[ChecklistItemSpec] = Field(default_factory=list, description="nested sub-items, in order")


class _Tagged(MemoryArgs):
    tags: list[Tag] = Field(default_factory=list, description="labels (no spaces) to find the record by")

    _tags = field_validator("tags")(_unique_tags)


class NoteCreate(_Tagged):
    """A new note."""

    kind: Annotated[Literal["note"], Field(description='always "note"')] = "note"
    title: Annotated[Title, Field(description="a short title")]
    body: Annotated[Body, Field(description="free text (Markdown allowed)")] = ""


class TodoCreate(_Tagged):
    """A new todo."""

    kind: Annotated[Literal["todo"], Field(description='always "todo"')] = "todo"
    title: Annotated[Title, Field(description="a short title")]
    body: Annotated[Body, Field(description="free text (Markdown allowed)")] = ""
    status: Annotated[TodoStatus, Field(description="where the todo stands")] = TodoStatus.PENDING
    priority: Annotated[Priority, Field(description="how urgent it is")] = Priority.NORMAL
    due_at: Annotated[datetime | None, Field(description="when it is due (ISO 8601 with a timezone)")] = None

    _due = field_validator("due_at")(_utc)


class ChecklistCreate(_Tagged):
    """A new checklist with its ordered (possibly nested) items."""

    kind: Annotated[Literal["checklist"], Field(description='always "checklist"')] = "checklist"
    title: Annotated[Title, Field(description="a short title")]
    body: Annotated[Body, Field(description="free text (Markdown allowed)")] = ""
    items: list[ChecklistItemSpec] = Field(default_factory=list, description="the items, in order")


class FactCreate(_Tagged):
    """A new fact: ``subject predicate object``, valid from ``valid_from`` (default: now).

    ``supersedes`` names a current fact this one replaces: the old one is kept, marked superseded and
    made valid until this one's ``valid_from``.
    """

    kind: Annotated[Literal["fact"], Field(description='always "fact"')] = "fact"
    subject: Annotated[Title, Field(description="what the fact is about")]
    predicate: Annotated[Title, Field(description="the relation (e.g. works_at, prefers)")]
    object: Annotated[Body, Field(description="the value the subject has for the predicate")]
    source: Annotated[str, Field(max_length=2048)] | None = Field(
        default=None, description="where the fact comes from (URL, document, person)"
    )
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = Field(default=1.0, description="how sure, 0 to 1")
    valid_from: Annotated[
        datetime | None, Field(description="true from (ISO 8601 with a timezone; default now)")
    ] = None
    valid_until: Annotated[datetime | None, Field(description="true until (ISO 8601 with a timezone)")] = None
    supersedes: Annotated[
        RecordId | None, Field(description="the id of a current fact this one replaces")
    ] = None

    _times = field_validator("valid_from", "valid_until")(_utc)

    @model_validator(mode="after")
    def _ordered(self) -> FactCreate:
        if self.valid_from and self.valid_until and self.valid_until <= self.valid_from:
            raise ValueError("valid_until must be after valid_from")
        return self


class TaskStateCreate(_Tagged):
    """A new task state: a named piece of work, its phase, progress and checkpoint data."""

    kind: Annotated[Literal["task_state"], Field(description='always "task_state"')] = "task_state"
    name: Annotated[Title, Field(description="the name of the task")]
    body: Annotated[Body, Field(description="free text (Markdown allowed)")] = ""
    phase: Annotated[str, Field(max_length=128)] = Field(
        default="started", description="the current phase, in a word or two"
    )
    status: Annotated[TodoStatus, Field(description="where the task stands")] = TodoStatus.IN_PROGRESS
    progress: Annotated[float, Field(ge=0.0, le=1.0)] = Field(default=0.0, description="done so far, 0 to 1")
    checkpoint: dict[str, Any] = Field(default_factory=dict, description="any JSON data to resume from")


CreateSpec = Annotated[
    NoteCreate | TodoCreate | ChecklistCreate | FactCreate | TaskStateCreate, Field(discriminator="kind")
]
"""Any create input; ``kind`` says which."""


class _Patch(MemoryArgs):
    """A partial update: only the fields that are set change (an explicit ``null`` clears)."""

    id: Annotated[RecordId, Field(description="the id of the record to change")]
    tags: Annotated[list[Tag] | None, Field(description="replace the labels with these")] = None

    _tags = field_validator("tags")(_unique_tags)


class NoteUpdate(_Patch):
    """Change a note."""

    kind: Annotated[Literal["note"], Field(description='always "note"')] = "note"
    title: Annotated[Title | None, Field(description="a new title")] = None
    body: Annotated[Body | None, Field(description="new free text (replaces the old)")] = None
    status: Annotated[NoteStatus | None, Field(description="a new status")] = None


class TodoUpdate(_Patch):
    """Change a todo."""

    kind: Annotated[Literal["todo"], Field(description='always "todo"')] = "todo"
    title: Annotated[Title | None, Field(description="a new title")] = None
    body: Annotated[Body | None, Field(description="new free text (replaces the old)")] = None
    status: Annotated[TodoStatus | None, Field(description="a new status")] = None
    priority: Annotated[Priority | None, Field(description="a new priority")] = None
    due_at: Annotated[datetime | None, Field(description="when it is due (ISO 8601 with a timezone)")] = None

    _due = field_validator("due_at")(_utc)


class ChecklistUpdate(_Patch):
    """Change a checklist's title, body or tags (items have their own operations)."""

    kind: Annotated[Literal["checklist"], Field(description='always "checklist"')] = "checklist"
    title: Annotated[Title | None, Field(description="a new title")] = None
    body: Annotated[Body | None, Field(description="new free text (replaces the old)")] = None


class FactUpdate(_Patch):
    """Change a fact's bookkeeping (to change what it states, create a fact that supersedes it)."""

    kind: Annotated[Literal["fact"], Field(description='always "fact"')] = "fact"
    source: Annotated[str, Field(max_length=2048)] | None = Field(
        default=None, description="where the fact comes from (URL, document, person)"
    )
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        default=None, description="how sure, 0 to 1"
    )
    valid_until: Annotated[datetime | None, Field(description="true until (ISO 8601 with a timezone)")] = None

    _until = field_validator("valid_until")(_utc)


class TaskStateUpdate(_Patch):
    """Move a task state on: phase, status, progress, checkpoint (replaced whole when given)."""

    kind: Annotated[Literal["task_state"], Field(description='always "task_state"')] = "task_state"
    name: Annotated[Title | None, Field(description="a new name")] = None
    body: Annotated[Body | None, Field(description="new free text (replaces the old)")] = None
    phase: Annotated[str, Field(max_length=128)] | None = Field(default=None, description="the new phase")
    status: Annotated[TodoStatus | None, Field(description="a new status")] = None
    progress: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        default=None, description="done so far, 0 to 1"
    )
    checkpoint: Annotated[
        dict[str, Any] | None, Field(description="JSON data to resume from (replaces the old)")
    ] = None


UpdateSpec = Annotated[
    NoteUpdate | TodoUpdate | ChecklistUpdate | FactUpdate | TaskStateUpdate, Field(discriminator="kind")
]
"""Any update input; ``kind`` says which."""


class ItemAdd(MemoryArgs):
    """Add an item to a checklist, under ``parent_id`` (top level when absent) at ``position``."""

    checklist_id: Annotated[RecordId, Field(description="the id of the checklist")]
    text: Annotated[Title, Field(description="the text of the item")]
    status: Annotated[ItemStatus, Field(description="the state of the item")] = ItemStatus.PENDING
    parent_id: Annotated[
        RecordId | None, Field(description="the id of the parent item (top level when absent)")
    ] = None
    position: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="0-based place among its siblings (last when absent)"
    )


class ItemUpdate(MemoryArgs):
    """Change an item's text or status."""

    checklist_id: Annotated[RecordId, Field(description="the id of the checklist")]
    item_id: Annotated[RecordId, Field(description="the id of the item")]
    text: Annotated[Title | None, Field(description="new text")] = None
    status: Annotated[ItemStatus | None, Field(description="a new state")] = None


class ItemMove(MemoryArgs):
    """Move an item (with its children) under ``parent_id`` (top level when absent) at ``position``."""

    checklist_id: Annotated[RecordId, Field(description="the id of the checklist")]
    item_id: Annotated[RecordId, Field(description="the id of the item")]
    parent_id: Annotated[
        RecordId | None, Field(description="the id of the parent item (top level when absent)")
    ] = None
    position: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="0-based place among its siblings (last when absent)"
    )


class ItemRemove(MemoryArgs):
    """Remove an item and its children."""

    checklist_id: Annotated[RecordId, Field(description="the id of the checklist")]
    item_id: Annotated[RecordId, Field(description="the id of the item")]


class ListQuery(MemoryArgs):
    """Which records to list: newest update first, ties by id."""

    kinds: list[RecordKind] | None = None
    status: list[str] | None = None
    tags: Annotated[list[Tag] | None, Field(description="replace the labels with these")] = None
    include_deleted: bool = False
    include_inactive_facts: bool = False
    limit: Annotated[int, Field(ge=1)] = 50
    offset: Annotated[int, Field(ge=0)] = 0


class SearchQuery(MemoryArgs):
    """A lexical search: BM25 over the analysed title (weight 3) and body, scope filtered."""

    text: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    kinds: list[RecordKind] | None = None
    status: list[str] | None = None
    tags: Annotated[list[Tag] | None, Field(description="replace the labels with these")] = None
    include_inactive_facts: bool = False
    limit: Annotated[int, Field(ge=1)] = 10


# -- records -------------------------------------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _scope_keys_only(scope: dict[str, str]) -> dict[str, str]:
    """Refuse a scope with a key that is not a scope key (stored, it would be dropped: a wider scope)."""
    unknown = [key for key in scope if key not in SCOPE_KEYS]
    if unknown:
        raise ValueError(
            f"unknown scope keys {unknown}; the keys are {', '.join(SCOPE_KEYS)}, spelled exactly"
        )
    return scope


class ChecklistItem(_Frozen):
    """One checklist item; ``children`` are its nested items, in order."""

    id: str
    text: str
    status: ItemStatus = ItemStatus.PENDING
    children: tuple[ChecklistItem, ...] = ()


class FactFields(_Frozen):
    """What a fact states and for how long."""

    subject: str
    predicate: str
    object: str
    source: str | None = None
    confidence: float = 1.0
    valid_from: AwareDatetime
    valid_until: AwareDatetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None

    def current(self, now: datetime) -> bool:
        """Whether the fact holds at ``now`` (valid_from <= now < valid_until)."""
        return self.valid_from <= now and (self.valid_until is None or now < self.valid_until)


class TaskStateFields(_Frozen):
    """Where a task stands."""

    phase: str
    progress: float = 0.0
    checkpoint: dict[str, Any] = Field(default_factory=dict)


class MemoryRecord(_Frozen):
    """One structured memory record, as stored and as exported.

    Attributes:
        id: stable id (from the store's id generator).
        kind: note, todo, checklist, fact or task_state.
        scope: the scope keys it was written under (empty: explicitly global); only the keys of
            :data:`~simone.runtime.SCOPE_KEYS`, spelled exactly.
        title: the title (a fact's subject and predicate; a task state's name).
        body: free text.
        tags: labels, in the order given.
        status: from the kind's vocabulary (see :data:`STATUSES`).
        priority, due_at: todos only.
        items: checklists only.
        fact: facts only.
        task_state: task states only.
        created_at, updated_at, completed_at, deleted_at: UTC timestamps; ``deleted_at`` marks a soft delete.
        revision: 1 on creation, +1 on every change.
    """

    id: str
    kind: RecordKind
    scope: dict[str, str] = Field(default_factory=dict)
    title: str
    body: str = ""
    tags: tuple[str, ...] = ()
    status: str
    priority: Priority | None = None
    due_at: AwareDatetime | None = None
    items: tuple[ChecklistItem, ...] = ()
    fact: FactFields | None = None
    task_state: TaskStateFields | None = None
    created_at: AwareDatetime
    updated_at: AwareDatetime
    completed_at: AwareDatetime | None = None
    deleted_at: AwareDatetime | None = None
    revision: Annotated[int, Field(ge=1, le=2**62)] = 1

    _scope = field_validator("scope")(_scope_keys_only)

    @property
    def locator(self) -> str:
        """``memory:<kind>/<id>`` — how evidence points back at the record."""
        return f"memory:{self.kind.value}/{self.id}"

    @property
    def is_global(self) -> bool:
        """Whether the record was written explicitly global (it carries no scope key)."""
        return not self.scope


class RecordHit(_Frozen):
    """A record found by a search, and its score: BM25, or cosine similarity on the semantic leg (higher is better).

    Not :class:`simone.providers.web.SearchHit` (a web search engine's result).
    """

    record: MemoryRecord
    score: float


class TurnRole(StrEnum):
    """Who said a turn."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class Turn(_Frozen):
    """One turn of a conversation in session memory."""

    id: str
    scope: dict[str, str]
    seq: SeqNumber
    role: TurnRole
    content: str
    created_at: AwareDatetime

    _scope = field_validator("scope")(_scope_keys_only)

    @property
    def locator(self) -> str:
        """``memory:turn/<id>``."""
        return f"memory:turn/{self.id}"


class SessionSummary(_Frozen):
    """The summary slot of a conversation: what fell out of the window, condensed by someone."""

    id: str
    scope: dict[str, str]
    content: str
    through_seq: SeqNumber
    updated_at: AwareDatetime

    _scope = field_validator("scope")(_scope_keys_only)

    @property
    def locator(self) -> str:
        """``memory:summary/<id>``."""
        return f"memory:summary/{self.id}"


class SessionHit(_Frozen):
    """A session-memory search result: a turn or the summary, with its BM25 score."""

    item: Turn | SessionSummary
    score: float


EXPORT_FORMAT: Literal["simone-memory"] = "simone-memory"
EXPORT_VERSION: Literal[1] = 1


class MemoryExport(_Frozen):
    """The JSON document of ``simone memory export`` (and what import accepts)."""

    format: Literal["simone-memory"] = EXPORT_FORMAT
    version: Literal[1] = EXPORT_VERSION
    exported_at: AwareDatetime
    records: list[MemoryRecord] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    summaries: list[SessionSummary] = Field(default_factory=list)


_ENTRIES = {"records": "record", "turns": "turn", "summaries": "summary"}


def _where(data: Any, loc: tuple[int | str, ...]) -> str:
    """Where a validation error is, naming the record, turn or summary by its id when it has one."""
    if len(loc) >= 2 and loc[0] in _ENTRIES and isinstance(loc[1], int):
        entries = data.get(loc[0]) if isinstance(data, Mapping) else None
        entry = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
        ident = entry.get("id") if isinstance(entry, Mapping) else None
        label = f"{_ENTRIES[str(loc[0])]} {ident!r}" if isinstance(ident, str) else f"{loc[0]}[{loc[1]}]"
        rest = ".".join(str(part) for part in loc[2:])
        return f"{label} {rest}" if rest else label
    return ".".join(str(part) for part in loc) or "document"


def load_export(text: str | bytes) -> MemoryExport:
    """Parse an export document (JSON text), all of it or nothing.

    Refused, each with one message that names the record (by id) and the field: a document that is not
    a JSON object, entries that are not objects, fields of the wrong type, unknown fields, scope keys
    that are not scope keys (``"tenant"``, ``"Actor"``, ``"actor "``: stored, they would be dropped and
    widen the record, even to global), timestamps without a timezone, text that is not valid Unicode.

    Raises:
        InvalidRequest: not JSON, or not a simone memory export (the message lists the problems).
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidRequest(f"the import is not valid JSON ({exc}); nothing was written") from exc
    if not isinstance(data, dict):
        raise InvalidRequest(
            "the import is not a simone memory export (the document must be a JSON object with format, "
            f"version, exported_at and records, not a JSON {type(data).__name__}); nothing was written"
        )
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequest(
            f"the import holds text that is not valid Unicode ({exc.reason}: a lone surrogate escape?); "
            "nothing was written"
        ) from exc
    try:
        return MemoryExport.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        reasons = "; ".join(f"{_where(data, err['loc'])}: {err['msg']}" for err in errors[:20])
        more = f" (and {len(errors) - 20} more)" if len(errors) > 20 else ""
        raise InvalidRequest(
            f"the import is not a simone memory export ({reasons}{more}); nothing was written"
        ) from exc


def dump_export(document: MemoryExport) -> str:
    """The export as indented JSON text (what ``simone memory export`` writes)."""
    return document.model_dump_json(indent=2)
