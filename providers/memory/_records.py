"""Pure functions over records: checklist trees, the text that is indexed, the text that is shown."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from simone.providers.memory._models import (
    ChecklistItem,
    ChecklistItemSpec,
    MemoryRecord,
    RecordKind,
)
from simone.runtime import InvalidRequest

# -- checklist trees -----------------------------------------------------------------------------------
# Trees are handled as lists of plain dicts ({"id", "text", "status", "children"}) while they change,
# then validated back into ChecklistItem tuples.

Node = dict[str, Any]


def to_nodes(items: Sequence[ChecklistItem]) -> list[Node]:
    """Mutable copies of an item tree."""
    return [item.model_dump(mode="json") for item in items]


def from_nodes(nodes: list[Node]) -> tuple[ChecklistItem, ...]:
    """Validated items back from mutable nodes."""
    return tuple(ChecklistItem.model_validate(node) for node in nodes)


def nodes_from_specs(specs: Sequence[ChecklistItemSpec], new_id: Any) -> list[Node]:
    """Nodes for new items, each with an id from ``new_id()``, depth first in order."""
    nodes: list[Node] = []
    for spec in specs:
        node_id = new_id()
        nodes.append(
            {
                "id": node_id,
                "text": spec.text,
                "status": spec.status.value,
                "children": nodes_from_specs(spec.children, new_id),
            }
        )
    return nodes


def walk(nodes: list[Node], depth: int = 1) -> Iterator[tuple[Node, int]]:
    """Every node with its depth (top level is 1), depth first in order."""
    for node in nodes:
        yield node, depth
        yield from walk(node["children"], depth + 1)


def count(nodes: list[Node]) -> int:
    """How many items the tree holds."""
    return sum(1 for _ in walk(nodes))


def height(node: Node) -> int:
    """Levels in a node's subtree (a leaf is 1)."""
    return 1 + max((height(child) for child in node["children"]), default=0)


def tree_height(nodes: list[Node]) -> int:
    """Levels in a whole tree (empty is 0)."""
    return max((height(node) for node in nodes), default=0)


def locate(nodes: list[Node], item_id: str, checklist_id: str) -> tuple[list[Node], int, int]:
    """The sibling list holding ``item_id``, its index there and its depth.

    Raises:
        NotFound-like InvalidRequest: the checklist has no such item.
    """

    def search(siblings: list[Node], depth: int) -> tuple[list[Node], int, int] | None:
        for index, node in enumerate(siblings):
            if node["id"] == item_id:
                return siblings, index, depth
            found = search(node["children"], depth + 1)
            if found is not None:
                return found
        return None

    found = search(nodes, 1)
    if found is None:
        raise InvalidRequest(
            f"checklist {checklist_id} has no item {item_id!r}; list the checklist to see its item ids"
        )
    return found


def contains(node: Node, item_id: str) -> bool:
    """Whether ``item_id`` is ``node`` or one of its descendants."""
    return node["id"] == item_id or any(contains(child, item_id) for child in node["children"])


def insert(siblings: list[Node], node: Node, position: int | None, where: str) -> None:
    """Insert ``node`` at ``position`` (end when ``None``); a position past the end is refused."""
    if position is None:
        siblings.append(node)
        return
    if position > len(siblings):
        raise InvalidRequest(
            f"position {position} is past the end of {where} ({len(siblings)} items); use 0…{len(siblings)} "
            "or leave it out to append"
        )
    siblings.insert(position, node)


# -- text ----------------------------------------------------------------------------------------------


def _item_lines(items: Sequence[ChecklistItem], depth: int = 0) -> Iterator[str]:
    marks = {"completed": "x", "skipped": "-", "in_progress": "~", "blocked": "!", "pending": " "}
    for item in items:
        yield f"{'  ' * depth}- [{marks[item.status.value]}] {item.text}"
        yield from _item_lines(item.children, depth + 1)


def index_text(record: MemoryRecord) -> tuple[str, str]:
    """The (title, body) text whose analysed terms are indexed for lexical search."""
    parts = [record.body, " ".join(record.tags)]
    if record.kind is RecordKind.CHECKLIST:
        parts.extend(item.text for item in _flat(record.items))
    elif record.fact is not None:
        parts.extend([record.fact.object, record.fact.source or ""])
    elif record.task_state is not None:
        parts.append(record.task_state.phase)
    return record.title, "\n".join(part for part in parts if part)


def _flat(items: Sequence[ChecklistItem]) -> Iterator[ChecklistItem]:
    for item in items:
        yield item
        yield from _flat(item.children)


def render(record: MemoryRecord) -> str:
    """The record as plain text for a model or a person (the ``content`` of its evidence)."""
    lines: list[str] = []
    if record.kind is RecordKind.NOTE:
        lines.append(record.body or record.title)
    elif record.kind is RecordKind.TODO:
        due = f", due {record.due_at.isoformat()}" if record.due_at else ""
        priority = record.priority.value if record.priority else "normal"
        lines.append(f"[{record.status}, {priority} priority{due}] {record.title}")
        if record.body:
            lines.append(record.body)
    elif record.kind is RecordKind.CHECKLIST:
        lines.append(f"{record.title} ({record.status})")
        if record.body:
            lines.append(record.body)
        lines.extend(_item_lines(record.items))
    elif record.fact is not None:
        fact = record.fact
        lines.append(f"{fact.subject} {fact.predicate} {fact.object}")
        window = f"valid from {fact.valid_from.isoformat()}"
        if fact.valid_until is not None:
            window += f" until {fact.valid_until.isoformat()}"
        source = f"source: {fact.source}; " if fact.source else ""
        lines.append(f"({source}confidence {fact.confidence:g}; {window}; {record.status})")
    elif record.task_state is not None:
        state = record.task_state
        lines.append(f"{record.title}: {state.phase} ({record.status}, {state.progress:.0%} done)")
        if record.body:
            lines.append(record.body)
        if state.checkpoint:
            lines.append("checkpoint: " + json.dumps(state.checkpoint, ensure_ascii=False, sort_keys=True))
    if record.tags:  # a paragraph of its own: a label, never read as part of the record's last sentence
        lines.extend(["", "tags: " + ", ".join(record.tags)])
    return "\n".join(lines)
