"""Checklist items: add, change, move and remove nested items.

Each edit runs in one transaction and stays within ``memory.checklist_max_depth`` and
``memory.max_checklist_items``. Only a context that may change the checklist (its own actor's, or any it
sees for a ``system`` caller) may edit its items; others get :class:`~simone.runtime.AccessDenied`.
"""

from __future__ import annotations

from collections.abc import Callable

from simone.providers.memory import _records as trees
from simone.providers.memory._access import changed, check_tree, editable, save_record
from simone.providers.memory._backend import Db
from simone.providers.memory._core import Core
from simone.providers.memory._models import (
    ItemAdd,
    ItemMove,
    ItemRemove,
    ItemUpdate,
    MemoryRecord,
    RecordKind,
)
from simone.runtime import InvalidRequest, TrustedContext

Edit = Callable[[list[trees.Node], MemoryRecord], None]
"""An edit of a checklist's item tree, in place (the record is the checklist before it)."""


def edit_items(core: Core, db: Db, context: TrustedContext, checklist_id: str, edit: Edit) -> MemoryRecord:
    """Apply ``edit`` to a checklist's items in one write transaction, within the limits."""
    now = core.now()

    def transaction(tx: Db) -> MemoryRecord:
        rowid, old = editable(tx, context, checklist_id, RecordKind.CHECKLIST)
        nodes = trees.to_nodes(old.items)
        edit(nodes, old)
        check_tree(core.settings, nodes, old.title)
        new = changed(old, {"items": trees.from_nodes(nodes)}, now)
        if new is not old:
            save_record(core, tx, rowid, old, new)
        return new

    return db.write(transaction)


def add_item(args: ItemAdd, item_id: str) -> Edit:
    """Add an item ``item_id`` under ``parent_id`` (top level when absent) at ``position`` (end when absent)."""

    def edit(nodes: list[trees.Node], record: MemoryRecord) -> None:
        siblings = nodes
        where = f"checklist {record.id}"
        if args.parent_id is not None:
            parent_list, index, _ = trees.locate(nodes, args.parent_id, record.id)
            siblings = parent_list[index]["children"]
            where = f"item {args.parent_id}"
        node: trees.Node = {"id": item_id, "text": args.text, "status": args.status.value, "children": []}
        trees.insert(siblings, node, args.position, where)

    return edit


def update_item(args: ItemUpdate) -> Edit:
    """Change an item's text or status."""

    def edit(nodes: list[trees.Node], record: MemoryRecord) -> None:
        siblings, index, _ = trees.locate(nodes, args.item_id, record.id)
        if args.text is not None:
            siblings[index]["text"] = args.text
        if args.status is not None:
            siblings[index]["status"] = args.status.value

    return edit


def move_item(args: ItemMove, max_depth: int) -> Edit:
    """Move an item with its children; never into itself, its descendants, or past ``max_depth``."""

    def edit(nodes: list[trees.Node], record: MemoryRecord) -> None:
        siblings, index, _ = trees.locate(nodes, args.item_id, record.id)
        node = siblings[index]
        if args.parent_id is not None and trees.contains(node, args.parent_id):
            what = "itself" if args.parent_id == args.item_id else f"its own descendant {args.parent_id}"
            raise InvalidRequest(f"cannot move item {args.item_id} into {what}; pick another parent")
        target = nodes
        depth = 0
        where = f"checklist {record.id}"
        if args.parent_id is not None:
            parent_list, parent_index, depth = trees.locate(nodes, args.parent_id, record.id)
            target = parent_list[parent_index]["children"]
            where = f"item {args.parent_id}"
        if depth + trees.height(node) > max_depth:
            raise InvalidRequest(
                f"moving item {args.item_id} under {where} would nest {depth + trees.height(node)} "
                f"levels deep; the limit is {max_depth} (memory.checklist_max_depth)"
            )
        del siblings[index]
        trees.insert(target, node, args.position, where)

    return edit


def remove_item(args: ItemRemove) -> Edit:
    """Remove an item and its children."""

    def edit(nodes: list[trees.Node], record: MemoryRecord) -> None:
        siblings, index, _ = trees.locate(nodes, args.item_id, record.id)
        del siblings[index]

    return edit
