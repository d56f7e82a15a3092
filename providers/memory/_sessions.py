"""Session memory: a conversation's turns, its summary slot, and BM25 search over both.

Turns beyond ``memory.session_window_turns`` fall out of the window as new ones arrive.
"""

from __future__ import annotations

from simone.providers.memory._access import insert_turn
from simone.providers.memory._backend import Db, SqlValue
from simone.providers.memory._core import Core, visible_numbers
from simone.providers.memory._models import SessionHit, SessionSummary, Turn, TurnRole
from simone.providers.memory._rows import SELECT_TURN, SUMMARY, summary_from_row, turn_from_row
from simone.providers.memory._scope import scope_signature, scope_sql
from simone.providers.memory._terms import fts_query
from simone.runtime import InvalidRequest, TrustedContext


def conversation(context: TrustedContext) -> str:
    """The context's conversation (session memory needs one)."""
    if context.conversation is None:
        raise InvalidRequest(
            "session memory needs a conversation in the trusted context; admit the event with one"
        )
    return context.conversation


def append_turn(
    core: Core, db: Db, context: TrustedContext, role: TurnRole, content: str
) -> tuple[Turn, list[Turn]]:
    """Add a turn to the conversation; turns beyond ``session_window_turns`` fall out (returned)."""
    conversation(context)
    core.check_body(content, "turn")
    scope = context.scope()
    signature = scope_signature(scope)
    now = core.now()
    turn_id = core.ids("turn")
    window = core.settings.session_window_turns

    def transaction(tx: Db) -> tuple[Turn, list[Turn]]:
        row = tx.execute(
            "SELECT MAX(seq) FROM turns WHERE scope_sig = ? AND role != ?", (signature, SUMMARY)
        ).fetchone()
        seq = int((row[0] if row is not None else None) or 0) + 1
        insert_turn(
            core,
            tx,
            turn_id=turn_id,
            scope=scope,
            role=role.value,
            seq=seq,
            through_seq=None,
            content=content,
            created=now,
        )
        evicted = tx.execute(
            f"SELECT {SELECT_TURN} FROM turns t WHERE t.scope_sig = ? AND t.role != ? AND t.seq <= ? "
            "ORDER BY t.seq",
            (signature, SUMMARY, seq - window),
        ).fetchall()
        if evicted:
            tx.execute(
                "DELETE FROM turns WHERE scope_sig = ? AND role != ? AND seq <= ?",
                (signature, SUMMARY, seq - window),
            )
        turn = Turn(id=turn_id, scope=scope, seq=seq, role=role, content=content, created_at=now)
        return turn, [turn_from_row(row) for row in evicted]

    return db.write(transaction)


def _session_condition(context: TrustedContext) -> tuple[str, list[SqlValue]]:
    name = conversation(context)
    condition, params = scope_sql(context, "t")
    return f"{condition} AND t.s_conversation = ?", [*params, name]


def recent_turns(core: Core, db: Db, context: TrustedContext, limit: int | None) -> list[Turn]:
    """The conversation's turns (visible in this scope), oldest first; the last ``limit`` if given."""
    condition, params = _session_condition(context)
    wanted = min(limit or core.settings.session_window_turns, core.settings.max_query_limit)
    rows = db.execute(
        f"SELECT {SELECT_TURN} FROM turns t WHERE {condition} AND t.role != ? "
        "ORDER BY t.created_us DESC, t.seq DESC, t.id DESC LIMIT ?",
        (*params, SUMMARY, wanted),
    )
    return [turn_from_row(row) for row in reversed(rows.fetchall())]


def set_summary(
    core: Core, db: Db, context: TrustedContext, content: str, through_seq: int | None
) -> SessionSummary:
    """Fill the summary slot of the conversation (as written under this exact scope)."""
    conversation(context)
    core.check_body(content, "summary")
    scope = context.scope()
    signature = scope_signature(scope)
    now = core.now()

    def transaction(tx: Db) -> SessionSummary:
        row = tx.execute(
            "SELECT id FROM turns WHERE scope_sig = ? AND role = ?", (signature, SUMMARY)
        ).fetchone()
        summary_id = str(row["id"]) if row is not None else core.ids("summary")
        if row is not None:
            tx.execute("DELETE FROM turns WHERE id = ?", (summary_id,))
        upto = through_seq
        if upto is None:
            last = tx.execute(
                "SELECT MAX(seq) FROM turns WHERE scope_sig = ? AND role != ?", (signature, SUMMARY)
            ).fetchone()
            upto = int((last[0] if last is not None else None) or 0)
        insert_turn(
            core,
            tx,
            turn_id=summary_id,
            scope=scope,
            role=SUMMARY,
            seq=0,
            through_seq=upto,
            content=content,
            created=now,
        )
        return SessionSummary(id=summary_id, scope=scope, content=content, through_seq=upto, updated_at=now)

    return db.write(transaction)


def get_summary(db: Db, context: TrustedContext) -> SessionSummary | None:
    """The summary written under this exact scope, if any."""
    conversation(context)
    row = db.execute(
        f"SELECT {SELECT_TURN} FROM turns t WHERE t.scope_sig = ? AND t.role = ?",
        (scope_signature(context.scope()), SUMMARY),
    ).fetchone()
    return None if row is None else summary_from_row(row)


def search_session(core: Core, db: Db, context: TrustedContext, text: str, limit: int) -> list[SessionHit]:
    """Turns and summaries of the conversation sharing a term with ``text``, by the backend's BM25."""
    condition, params = _session_condition(context)
    terms = core.analysis.terms(text)
    numbers = visible_numbers(db, context)
    if fts_query(terms, numbers) is None:
        return []
    hits: list[SessionHit] = []
    for row, score in core.backend.rank_turns(db, terms, numbers, condition, params, limit):
        item: Turn | SessionSummary = summary_from_row(row) if row["role"] == SUMMARY else turn_from_row(row)
        hits.append(SessionHit(item=item, score=score))
    return hits


def clear_session(db: Db, context: TrustedContext) -> int:
    """Forget the turns and summary written under this exact scope."""
    conversation(context)
    signature = scope_signature(context.scope())
    return db.write(
        lambda tx: int(tx.execute("DELETE FROM turns WHERE scope_sig = ?", (signature,)).rowcount)
    )
