"""Memory tools for agents: plain async functions ``(store, context, args) -> dict``.

Each tool's argument model derives from :class:`~simone.providers.memory.MemoryArgs`: frozen,
``extra="forbid"``, no scope fields, and any argument that tries to carry a scope (``actor``,
``conversation``, ``project``, ``scope``… at any depth, in any spelling) raises
:class:`~simone.runtime.ScopeViolation` before anything else happens. The scope of every read and write is
the :class:`~simone.runtime.TrustedContext` the runtime passes in. Tools read what that context may
see (global records included) but change only its own records: updating, completing, deleting, editing
the items of or superseding a global record raises :class:`~simone.runtime.AccessDenied`.

:data:`MEMORY_TOOLS` lists every tool as a :class:`MemoryTool` (name, description, argument model,
function); :meth:`MemoryTool.invoke` parses raw model output and runs the tool. Results are JSON-ready
dicts (``{"record": …}``, ``{"records": […]}`` or ``{"hits": […]}``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, ValidationError
from simone.providers.memory._models import (
    ChecklistCreate,
    ChecklistUpdate,
    FactCreate,
    FactUpdate,
    ItemAdd,
    ItemMove,
    ItemRemove,
    ItemUpdate,
    ListQuery,
    MemoryArgs,
    MemoryRecord,
    NoteCreate,
    NoteUpdate,
    RecordId,
    RecordKind,
    SearchQuery,
    TaskStateCreate,
    TaskStateUpdate,
    TodoCreate,
    TodoUpdate,
    refuse_scope_keys,
)
from simone.providers.memory._records import render
from simone.providers.memory._store import MemoryStore
from simone.runtime import MAX_QUERY_CHARS, InvalidRequest, TrustedContext, loads_untrusted

ToolFunction = Callable[[MemoryStore, TrustedContext, Any], Awaitable[dict[str, Any]]]


class RecordRef(MemoryArgs):
    """Names one record."""

    id: Annotated[RecordId, Field(description="the id of the record")]


class ListArgs(MemoryArgs):
    """Which records of one kind to list (newest update first)."""

    status: list[str] | None = Field(default=None, description="only records in one of these statuses")
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, description="only records carrying all of these tags"
    )
    include_inactive: bool = Field(default=False, description="facts: also superseded and retired ones")
    limit: Annotated[int, Field(ge=1, le=200)] = Field(default=20, description="at most this many records")
    offset: Annotated[int, Field(ge=0)] = Field(default=0, description="skip this many (for paging)")


class SearchArgs(MemoryArgs):
    """A lexical search within one kind."""

    query: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="the words to look for")
    ]
    limit: Annotated[int, Field(ge=1, le=200)] = Field(default=10, description="at most this many hits")


def _record(record: MemoryRecord) -> dict[str, Any]:
    return {"record": record.model_dump(mode="json")}


@dataclass(frozen=True, slots=True)
class MemoryTool:
    """One memory tool: what an agent's tool registry needs to expose and call it.

    Attributes:
        name: the tool name (``create_note``, ``search_facts``…).
        description: one sentence for the model.
        args_model: the pydantic model of its arguments (its JSON schema is the tool's parameters).
        function: ``async (store, context, args) -> dict``.
    """

    name: str
    description: str
    args_model: type[MemoryArgs]
    function: ToolFunction

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        return self.args_model.model_json_schema()

    def parse(self, raw: Mapping[str, Any] | str) -> MemoryArgs:
        """Validate raw arguments (a mapping or a JSON object text) from a model.

        Raises:
            ScopeViolation: any scope-like key, at any depth.
            InvalidRequest: anything else that does not fit the model (what to fix is in the message).
        """
        data: Any = raw
        if isinstance(raw, str):
            try:
                data = loads_untrusted(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                raise InvalidRequest(f"{self.name}: the arguments are not valid JSON ({exc})") from exc
        if not isinstance(data, Mapping):
            raise InvalidRequest(f"{self.name}: the arguments must be a JSON object")
        refuse_scope_keys(data, f"{self.name} arguments")
        try:
            return self.args_model.model_validate(dict(data))
        except ValidationError as exc:
            reasons = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in exc.errors()
            )
            raise InvalidRequest(f"{self.name}: invalid arguments: {reasons}") from exc

    async def invoke(
        self, store: MemoryStore, context: TrustedContext, raw: Mapping[str, Any] | str | MemoryArgs
    ) -> dict[str, Any]:
        """Parse (unless already a model of the right type) and run the tool."""
        args = raw if isinstance(raw, self.args_model) else self.parse(raw)  # type: ignore[arg-type]
        return await self.function(store, context, args)


# -- generic tool bodies, bound to one kind each ---------------------------------------------------------


def _create(kind: RecordKind) -> ToolFunction:
    async def create(store: MemoryStore, context: TrustedContext, args: Any) -> dict[str, Any]:
        return _record(await store.create(context, args))

    create.__name__ = f"create_{kind.value}"
    create.__doc__ = f"Create a {kind.value} under the trusted context's scope."
    return create


def _update(kind: RecordKind) -> ToolFunction:
    async def update(store: MemoryStore, context: TrustedContext, args: Any) -> dict[str, Any]:
        return _record(await store.update(context, args))

    update.__name__ = f"update_{kind.value}"
    update.__doc__ = f"Change a visible {kind.value}."
    return update


def _complete(kind: RecordKind) -> ToolFunction:
    async def complete(store: MemoryStore, context: TrustedContext, args: Any) -> dict[str, Any]:
        return _record(await store.complete(context, args.id, kind=kind))

    complete.__name__ = f"complete_{kind.value}"
    complete.__doc__ = f"Complete a visible {kind.value}."
    return complete


def _list(kind: RecordKind) -> ToolFunction:
    async def list_(store: MemoryStore, context: TrustedContext, args: Any) -> dict[str, Any]:
        query = ListQuery(
            kinds=[kind],
            status=args.status,
            tags=args.tags,
            include_inactive_facts=args.include_inactive,
            limit=args.limit,
            offset=args.offset,
        )
        records = await store.list_records(context, query)
        return {"records": [record.model_dump(mode="json") for record in records]}

    list_.__name__ = f"list_{kind.value}s"
    list_.__doc__ = f"List visible {kind.value}s, newest update first."
    return list_


def _search(kind: RecordKind) -> ToolFunction:
    async def search(store: MemoryStore, context: TrustedContext, args: Any) -> dict[str, Any]:
        hits = await store.search_records(
            context, SearchQuery(text=args.query, kinds=[kind], limit=args.limit)
        )
        return {
            "hits": [
                {
                    "id": hit.record.id,
                    "score": hit.score,
                    "text": render(hit.record),
                    "record": hit.record.model_dump(mode="json"),
                }
                for hit in hits
            ]
        }

    search.__name__ = f"search_{kind.value}s"
    search.__doc__ = f"Search visible {kind.value}s by words (BM25)."
    return search


def _item(operation: str) -> ToolFunction:
    async def run(store: MemoryStore, context: TrustedContext, args: Any) -> dict[str, Any]:
        method = getattr(store, f"{operation}_item")
        record: MemoryRecord = await method(context, args)
        return _record(record)

    run.__name__ = f"{operation}_checklist_item"
    return run


async def delete_memory(store: MemoryStore, context: TrustedContext, args: RecordRef) -> dict[str, Any]:
    """Soft-delete a visible record of any kind (kept for the retention period, then purged)."""
    return _record(await store.delete(context, args.id))


_KIND_TEXT = {
    RecordKind.NOTE: ("note", "notes", "a note (title and free text)", "archive a note"),
    RecordKind.TODO: (
        "todo",
        "todos",
        "a todo (title, status, priority, optional due time)",
        "mark a todo completed",
    ),
    RecordKind.CHECKLIST: (
        "checklist",
        "checklists",
        "a checklist with ordered, optionally nested items",
        "complete a checklist and all its open items",
    ),
    RecordKind.FACT: (
        "fact",
        "facts",
        "a fact (subject, predicate, object, source, confidence, validity); set supersedes to replace a "
        "current fact, which is kept but no longer current",
        "retire a fact (it stops being current)",
    ),
    RecordKind.TASK_STATE: (
        "task_state",
        "task_states",
        "a task state (name, phase, progress 0-1, checkpoint data)",
        "mark a task state completed (progress 1)",
    ),
}
_MODELS: dict[RecordKind, tuple[type[MemoryArgs], type[MemoryArgs]]] = {
    RecordKind.NOTE: (NoteCreate, NoteUpdate),
    RecordKind.TODO: (TodoCreate, TodoUpdate),
    RecordKind.CHECKLIST: (ChecklistCreate, ChecklistUpdate),
    RecordKind.FACT: (FactCreate, FactUpdate),
    RecordKind.TASK_STATE: (TaskStateCreate, TaskStateUpdate),
}


def _tools() -> tuple[MemoryTool, ...]:
    tools: list[MemoryTool] = []
    for kind, (one, many, what, done) in _KIND_TEXT.items():
        create_model, update_model = _MODELS[kind]
        tools += [
            MemoryTool(f"create_{one}", f"Remember {what}.", create_model, _create(kind)),
            MemoryTool(
                f"update_{one}", f"Change fields of one of your {many} by id.", update_model, _update(kind)
            ),
            MemoryTool(f"complete_{one}", f"By id: {done}.", RecordRef, _complete(kind)),
            MemoryTool(f"list_{many}", f"List your {many}, newest first.", ListArgs, _list(kind)),
            MemoryTool(f"search_{many}", f"Search your {many} by words.", SearchArgs, _search(kind)),
        ]
    tools += [
        MemoryTool(
            "add_checklist_item",
            "Add an item to a checklist (optionally under a parent item).",
            ItemAdd,
            _item("add"),
        ),
        MemoryTool(
            "update_checklist_item", "Change a checklist item's text or status.", ItemUpdate, _item("update")
        ),
        MemoryTool(
            "move_checklist_item",
            "Move a checklist item (with its children) to a parent and position.",
            ItemMove,
            _item("move"),
        ),
        MemoryTool(
            "remove_checklist_item", "Remove a checklist item and its children.", ItemRemove, _item("remove")
        ),
        MemoryTool("delete_memory", "Delete one of your memory records by id.", RecordRef, delete_memory),
    ]
    return tuple(tools)


MEMORY_TOOLS: tuple[MemoryTool, ...] = _tools()
"""Every memory tool, in a stable order."""

MEMORY_TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in MEMORY_TOOLS)
"""The names of :data:`MEMORY_TOOLS`."""


def memory_tool(name: str) -> MemoryTool:
    """The tool called ``name``.

    Raises:
        InvalidRequest: no memory tool has that name.
    """
    for tool in MEMORY_TOOLS:
        if tool.name == name:
            return tool
    raise InvalidRequest(f"no memory tool {name!r}; the tools are {', '.join(MEMORY_TOOL_NAMES)}")
