"""The ``memory`` tool: one entry point to every memory operation, for the small tool profiles.

``action`` and ``kind`` name the operation; the other arguments are the fields of the per-kind tool it
stands for (``{"action": "create", "kind": "todo", "title": …}`` runs ``create_todo`` with ``title``…).
:func:`memory_call` maps a call to that tool and its arguments without judging the fields — the
per-kind tool's own model validates them (extra fields refused, scope keys refused at any depth), the
registry checks the caller, and the result is that tool's result. So the ``memory`` tool can do
nothing the per-kind tools cannot, and their behaviour has one source.

The input schema (:data:`MEMORY_SCHEMA`) is the union of the per-kind tools' fields, each described
once with the kinds and actions it belongs to; a test checks that every field of every per-kind tool
appears in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from simone.agents._tools import FORBIDDEN_ARGUMENT_KEYS
from simone.agents.mcp._profiles import MEMORY_ALIASES, MEMORY_TOOL
from simone.runtime import InvalidRequest, parse_tool_arguments

KINDS: tuple[str, ...] = ("note", "todo", "checklist", "fact", "task_state")
"""The record kinds (``simone.providers.memory.RecordKind``'s values)."""

ACTIONS: tuple[str, ...] = (
    "create",
    "update",
    "complete",
    "delete",
    "list",
    "search",
    "add_item",
    "update_item",
    "move_item",
    "remove_item",
)
"""What the ``memory`` tool can do."""

KINDED = frozenset({"create", "update", "complete", "list", "search"})
"""The actions that need a ``kind``."""

_TOOL_OF: Mapping[tuple[str, str | None], str] = {call: name for name, call in MEMORY_ALIASES.items()}

MEMORY_DESCRIPTION = (
    "Your memory: notes, todos, checklists, facts and task states. action says what to do, kind which "
    "records (needed by create, update, complete, list and search); give only the fields of that kind. "
    "create returns the new record's id; update changes only the fields given; complete marks a todo or "
    "task state done, archives a note, retires a fact, completes a checklist; delete takes any id; "
    "list is newest first; search finds one kind by words (retrieve_memory searches every kind). "
    "Checklist items: add_item, update_item, move_item, remove_item with id = the checklist's id."
)

# Lengths and bounds are the per-kind models' to check (their errors name them); the schema says what
# a model needs to write a valid call, in as few characters as the host will send on every turn.
_ID = {"type": "string"}
_LABEL = {"type": "string"}
_WHEN = {"type": ["string", "null"], "format": "date-time"}
_ITEM_STATUS = ["pending", "in_progress", "completed", "blocked", "skipped"]


def _described(schema: Mapping[str, Any], description: str) -> dict[str, Any]:
    return {**schema, "description": description}


MEMORY_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["action"],
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS), "description": "what to do"},
        "kind": {
            "type": "string",
            "enum": list(KINDS),
            "description": "which records: needed by create, update, complete, list and search",
        },
        "id": _described(
            _ID, "the record's id (update, complete, delete); the checklist's id for the item actions"
        ),
        "query": {"type": "string", "description": "search: the words to look for"},
        "title": _described(_LABEL, "note, todo, checklist: a short title"),
        "body": {"type": "string", "description": "free text, Markdown allowed (update replaces it)"},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "labels without spaces (update replaces them; list: records with all of them)",
        },
        "status": {
            "type": "string",
            "description": (
                "todo, task_state: pending, in_progress, completed, blocked or cancelled; note: active or "
                "archived; checklist item: pending, in_progress, completed, blocked or skipped; "
                "list: only records in this status"
            ),
        },
        "priority": {
            "type": "string",
            "enum": ["low", "normal", "high", "urgent"],
            "description": "todo: how urgent (default normal)",
        },
        "due_at": _described(_WHEN, "todo: when it is due, ISO 8601 with a timezone (null clears)"),
        "items": {
            "type": "array",
            "items": {"$ref": "#/$defs/item"},
            "description": "checklist create: its items, in order",
        },
        "subject": _described(_LABEL, "fact: what it is about"),
        "predicate": _described(_LABEL, "fact: the relation (works_at, prefers…)"),
        "object": {"type": "string", "description": "fact: the subject's value for the predicate"},
        "source": {
            "type": ["string", "null"],
            "description": "fact: where it comes from (URL, document, person)",
        },
        "confidence": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "fact: how sure, 0 to 1 (default 1)",
        },
        "valid_from": _described(_WHEN, "fact create: true from (default now)"),
        "valid_until": _described(_WHEN, "fact: true until"),
        "supersedes": _described(_ID, "fact create: the id of a current fact this one replaces"),
        "name": _described(_LABEL, "task_state: the task's name"),
        "phase": {"type": "string", "description": "task_state: the phase, in a word or two"},
        "progress": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "task_state: done so far, 0 to 1",
        },
        "checkpoint": {
            "type": "object",
            "description": "task_state: JSON data to resume from (update replaces it)",
        },
        "item_id": _described(_ID, "update_item, move_item, remove_item: the item's id"),
        "text": _described(_LABEL, "add_item, update_item: the item's text"),
        "parent_id": {
            "type": ["string", "null"],
            "description": "add_item, move_item: the parent item's id (top level when absent)",
        },
        "position": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "add_item, move_item: 0-based place among its siblings (last when absent)",
        },
        "include_inactive": {
            "type": "boolean",
            "description": "list facts: also superseded and retired ones",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 200,
            "description": "list, search: at most this many (default 20 and 10)",
        },
        "offset": {"type": "integer", "minimum": 0, "description": "list: skip this many (paging)"},
    },
    "$defs": {
        "item": {
            "type": "object",
            "additionalProperties": False,
            "required": ["text"],
            "description": "a checklist item",
            "properties": {
                "text": _described(_LABEL, "the item's text"),
                "status": {
                    "type": "string",
                    "enum": _ITEM_STATUS,
                    "description": "its state (default pending)",
                },
                "children": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/item"},
                    "description": "nested sub-items, in order",
                },
            },
        }
    },
}
"""The ``memory`` tool's input schema, as ``tools/list`` sends it."""


class _Call(BaseModel):
    """The ``memory`` tool's arguments before mapping: ``action`` and ``kind`` read, the rest kept."""

    model_config = ConfigDict(frozen=True, extra="allow")

    action: Any = None
    kind: Any = None


@dataclass(frozen=True)
class MemoryCall:
    """One ``memory`` call mapped to the per-kind tool it stands for.

    Attributes:
        tool: the per-kind tool to run (``create_note``, ``delete_memory``…).
        arguments: its arguments.
        label: how the answer names the call (``memory create note``).
    """

    tool: str
    arguments: dict[str, Any]
    label: str


def memory_call(arguments: Mapping[str, Any] | None) -> MemoryCall:
    """Map a ``memory`` call to its per-kind tool and arguments (the fields are judged by that tool).

    Raises:
        ScopeViolation: the arguments carry scope or role keys, at any depth.
        InvalidRequest: an unknown action, a missing or unknown kind, or ``id`` where it has no place.
    """
    parsed = parse_tool_arguments(MEMORY_TOOL, _Call, arguments, forbidden=FORBIDDEN_ARGUMENT_KEYS)
    action, kind = parsed.action, parsed.kind
    data = dict(parsed.model_extra or {})
    if not (isinstance(action, str) and action in ACTIONS):
        raise InvalidRequest(f"memory: action must be one of {', '.join(ACTIONS)}, not {action!r}")
    if action in KINDED:
        if not (isinstance(kind, str) and kind in KINDS):
            raise InvalidRequest(
                f"memory: action {action!r} needs kind, one of {', '.join(KINDS)}"
                + ("" if kind is None else f", not {kind!r}")
            )
        if action == "create" and "id" in data:
            raise InvalidRequest(
                "memory: create gives the new record its id; leave id out (update changes one)"
            )
        if action in ("create", "update"):
            data["kind"] = kind
        if action == "list" and isinstance(data.get("status"), str):
            data["status"] = [data["status"]]
        tool = _TOOL_OF[(action, kind)]
        return MemoryCall(tool, data, f"{MEMORY_TOOL} {action} {kind}")
    if action.endswith("_item"):
        if kind not in (None, "checklist"):
            raise InvalidRequest(f"memory: {action} works on checklists, not on kind {kind!r}")
        if "id" in data:
            if "checklist_id" in data:
                raise InvalidRequest(f"memory: {action} takes the checklist's id once (id or checklist_id)")
            data["checklist_id"] = data.pop("id")
    elif kind is not None and not (isinstance(kind, str) and kind in KINDS):  # delete: any kind, by id
        raise InvalidRequest(f"memory: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return MemoryCall(_TOOL_OF[(action, None)], data, f"{MEMORY_TOOL} {action}")
