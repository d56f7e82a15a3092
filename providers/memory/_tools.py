"""Memory tools for agents: plain async functions ``(store, context, args) -> result model``.

Each tool's argument model derives from :class:`~simone.providers.memory.MemoryArgs`: frozen,
``extra="forbid"``, no scope fields, and any argument that tries to carry a scope (``actor``,
``conversation``, ``project``, ``scope``… at any depth, in any spelling) raises
:class:`~simone.runtime.ScopeViolation` before anything else happens. The scope of every read and write is
the :class:`~simone.runtime.TrustedContext` the runtime passes in. Tools read what that context may
see (global records included) but change only its own records: updating, completing, deleting, editing
the items of or superseding a global record raises :class:`~simone.runtime.AccessDenied`.

:data:`MEMORY_TOOLS` lists every tool as a :class:`MemoryTool` (name, description, argument model,
result model, function); :meth:`MemoryTool.invoke` parses raw model output (with the runtime's one
argument parser, :func:`~simone.runtime.parse_tool_arguments`) and runs the tool, and
:func:`memory_tools` binds them all to a store as :class:`~simone.runtime.ProviderTool` values (what the
memory factory hands to the runtime). Results are models: :class:`RecordResult` (``record``),
:class:`RecordsResult` (``records``) and :class:`HitsResult` (``hits``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
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
)
from simone.providers.memory._records import render
from simone.providers.memory._store import MemoryStore
from simone.runtime import MAX_QUERY_CHARS, InvalidRequest, ProviderTool, TrustedContext, parse_tool_arguments

MEMORY_GROUP = "memory"
"""The tool group of every memory tool (an agent profile grants the group as a whole)."""


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RecordResult(_Result):
    """One record a tool created, changed or deleted."""

    record: MemoryRecord


class RecordsResult(_Result):
    """The records a list tool found, newest update first."""

    records: list[MemoryRecord]


class ScoredRecord(_Result):
    """One search hit: the record, its score and the text its evidence carries."""

    id: str
    score: float
    text: str
    record: MemoryRecord


class HitsResult(_Result):
    """What a search tool found, best first."""

    hits: list[ScoredRecord]


MemoryToolResult = RecordResult | RecordsResult | HitsResult
"""What a memory tool returns."""

ToolFunction = Callable[[MemoryStore, TrustedContext, Any], Awaitable[MemoryToolResult]]


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


@dataclass(frozen=True, slots=True)
class MemoryTool:
    """One memory tool: what an agent's tool registry needs to expose and call it.

    Attributes:
        name: the tool name (``create_note``, ``search_facts``…).
        description: one sentence for the model.
        args_model: the pydantic model of its arguments (its JSON schema is the tool's parameters).
        result_model: the model it returns.
        function: ``async (store, context, args) -> result``.
    """

    name: str
    description: str
    args_model: type[MemoryArgs]
    result_model: type[MemoryToolResult]
    function: ToolFunction

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        return self.args_model.model_json_schema()

    def parse(self, raw: Mapping[str, Any] | str | MemoryArgs | None) -> MemoryArgs:
        """Validate raw arguments (a mapping or a JSON object text) from a model.

        Raises:
            ScopeViolation: any scope-like key, at any depth.
            InvalidRequest: anything else that does not fit the model (what to fix is in the message).
        """
        return parse_tool_arguments(self.name, self.args_model, raw)

    async def invoke(
        self, store: MemoryStore, context: TrustedContext, raw: Mapping[str, Any] | str | MemoryArgs | None
    ) -> MemoryToolResult:
        """Parse (unless already a model of the right type) and run the tool."""
        return await self.function(store, context, self.parse(raw))

    def bind(self, store: MemoryStore) -> ProviderTool[MemoryArgs, MemoryToolResult]:
        """The tool bound to ``store``, as the runtime's :class:`~simone.runtime.ProviderTool`."""

        async def run(context: TrustedContext, args: MemoryArgs) -> MemoryToolResult:
            return await self.function(store, context, args)

        return ProviderTool(
            name=self.name,
            description=self.description,
            args=self.args_model,
            result=self.result_model,
            run=run,
            group=MEMORY_GROUP,
        )


# -- generic tool bodies, bound to one kind each ---------------------------------------------------------


def _create(kind: RecordKind) -> ToolFunction:
    async def create(store: MemoryStore, context: TrustedContext, args: Any) -> MemoryToolResult:
        return RecordResult(record=await store.create(context, args))

    create.__name__ = f"create_{kind.value}"
    create.__doc__ = f"Create a {kind.value} under the trusted context's scope."
    return create


def _update(kind: RecordKind) -> ToolFunction:
    async def update(store: MemoryStore, context: TrustedContext, args: Any) -> MemoryToolResult:
        return RecordResult(record=await store.update(context, args))

    update.__name__ = f"update_{kind.value}"
    update.__doc__ = f"Change a visible {kind.value}."
    return update


def _complete(kind: RecordKind) -> ToolFunction:
    async def complete(store: MemoryStore, context: TrustedContext, args: Any) -> MemoryToolResult:
        return RecordResult(record=await store.complete(context, args.id, kind=kind))

    complete.__name__ = f"complete_{kind.value}"
    complete.__doc__ = f"Complete a visible {kind.value}."
    return complete


def _list(kind: RecordKind) -> ToolFunction:
    async def list_(store: MemoryStore, context: TrustedContext, args: Any) -> MemoryToolResult:
        query = ListQuery(
            kinds=[kind],
            status=args.status,
            tags=args.tags,
            include_inactive_facts=args.include_inactive,
            limit=args.limit,
            offset=args.offset,
        )
        records = await store.list_records(context, query)
        return RecordsResult(records=records)

    list_.__name__ = f"list_{kind.value}s"
    list_.__doc__ = f"List visible {kind.value}s, newest update first."
    return list_


def _search(kind: RecordKind) -> ToolFunction:
    async def search(store: MemoryStore, context: TrustedContext, args: Any) -> MemoryToolResult:
        hits = await store.search_records(
            context, SearchQuery(text=args.query, kinds=[kind], limit=args.limit)
        )
        return HitsResult(
            hits=[
                ScoredRecord(id=hit.record.id, score=hit.score, text=render(hit.record), record=hit.record)
                for hit in hits
            ]
        )

    search.__name__ = f"search_{kind.value}s"
    search.__doc__ = f"Search visible {kind.value}s by words (BM25)."
    return search


ItemOperation = Callable[[MemoryStore, TrustedContext, Any], Awaitable[MemoryRecord]]


def _item(operation: str, call: ItemOperation) -> ToolFunction:
    async def run(store: MemoryStore, context: TrustedContext, args: Any) -> MemoryToolResult:
        return RecordResult(record=await call(store, context, args))

    run.__name__ = f"{operation}_checklist_item"
    return run


async def delete_memory(store: MemoryStore, context: TrustedContext, args: RecordRef) -> RecordResult:
    """Soft-delete a visible record of any kind (kept for the retention period, then purged)."""
    return RecordResult(record=await store.delete(context, args.id))


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
            MemoryTool(f"create_{one}", f"Remember {what}.", create_model, RecordResult, _create(kind)),
            MemoryTool(
                f"update_{one}",
                f"Change fields of one of your {many} by id.",
                update_model,
                RecordResult,
                _update(kind),
            ),
            MemoryTool(f"complete_{one}", f"By id: {done}.", RecordRef, RecordResult, _complete(kind)),
            MemoryTool(
                f"list_{many}", f"List your {many}, newest first.", ListArgs, RecordsResult, _list(kind)
            ),
            MemoryTool(
                f"search_{many}", f"Search your {many} by words.", SearchArgs, HitsResult, _search(kind)
            ),
        ]
    tools += [
        MemoryTool(
            "add_checklist_item",
            "Add an item to a checklist (optionally under a parent item).",
            ItemAdd,
            RecordResult,
            _item("add", lambda store, context, args: store.add_item(context, args)),
        ),
        MemoryTool(
            "update_checklist_item",
            "Change a checklist item's text or status.",
            ItemUpdate,
            RecordResult,
            _item("update", lambda store, context, args: store.update_item(context, args)),
        ),
        MemoryTool(
            "move_checklist_item",
            "Move a checklist item (with its children) to a parent and position.",
            ItemMove,
            RecordResult,
            _item("move", lambda store, context, args: store.move_item(context, args)),
        ),
        MemoryTool(
            "remove_checklist_item",
            "Remove a checklist item and its children.",
            ItemRemove,
            RecordResult,
            _item("remove", lambda store, context, args: store.remove_item(context, args)),
        ),
        MemoryTool(
            "delete_memory",
            "Delete one of your memory records by id.",
            RecordRef,
            RecordResult,
            delete_memory,
        ),
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


def memory_tools(store: MemoryStore) -> list[ProviderTool[MemoryArgs, MemoryToolResult]]:
    """Every memory tool bound to ``store`` (group ``memory``): what the memory factory offers agents."""
    return [tool.bind(store) for tool in MEMORY_TOOLS]
