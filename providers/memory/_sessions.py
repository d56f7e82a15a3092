"""Session memory: a conversation's turns, its summary slot, and BM25 search over both.

Turns beyond ``memory.session_window_turns`` fall out of the window as new ones arrive.
"""

from __future__ import annotations

from typing import Any

from simone.providers.memory._access import RecordAccess
from simone.providers.memory._core import DB
from simone.providers.memory._models import SessionHit, SessionSummary, Turn, TurnRole
from simone.providers.memory._rows import SELECT_TURN, SUMMARY, summary_from_row, turn_from_row
from simone.providers.memory._scope import scope_signature, scope_sql
from simone.providers.memory._terms import fts_query
from simone.runtime import InvalidRequest, TrustedContext


class SessionMemory(RecordAccess):
    """Turns and summaries of a conversation (the ``SessionStore`` side)."""

    @staticmethod
    def _conversation(context: TrustedContext) -> str:
        if context.conversation is None:
            raise InvalidRequest(
                "session memory needs a conversation in the trusted context; admit the event with one"
            )
        return context.conversation

    async def append_turn(
        self, context: TrustedContext, role: TurnRole, content: str
    ) -> tuple[Turn, list[Turn]]:
        """Add a turn to the conversation; turns beyond ``session_window_turns`` fall out (returned)."""
        return await self._run(self._append_sync, context, TurnRole(role), content)

    def _append_sync(self, context: TrustedContext, role: TurnRole, content: str) -> tuple[Turn, list[Turn]]:
        self._conversation(context)
        self._check_body(content, "turn")
        scope = context.scope()
        signature = scope_signature(scope)
        now = self._now()
        turn_id = self._ids("turn")
        window = self._settings.session_window_turns

        def transaction(db: DB) -> tuple[Turn, list[Turn]]:
            last = db.execute(
                "SELECT MAX(seq) FROM turns WHERE scope_sig = ? AND role != ?", (signature, SUMMARY)
            ).fetchone()[0]
            seq = int(last or 0) + 1
            self._insert_turn(
                db,
                turn_id=turn_id,
                scope=scope,
                role=role.value,
                seq=seq,
                through_seq=None,
                content=content,
                created=now,
            )
            evicted = db.execute(
                f"SELECT {SELECT_TURN} FROM turns t WHERE t.scope_sig = ? AND t.role != ? AND t.seq <= ? "
                "ORDER BY t.seq",
                (signature, SUMMARY, seq - window),
            ).fetchall()
            if evicted:
                db.execute(
                    "DELETE FROM turns WHERE scope_sig = ? AND role != ? AND seq <= ?",
                    (signature, SUMMARY, seq - window),
                )
            turn = Turn(id=turn_id, scope=scope, seq=seq, role=role, content=content, created_at=now)
            return turn, [turn_from_row(row) for row in evicted]

        return self._write(transaction)

    def _session_condition(self, context: TrustedContext) -> tuple[str, list[Any]]:
        conversation = self._conversation(context)
        condition, params = scope_sql(context, "t")
        return f"{condition} AND t.s_conversation = ?", [*params, conversation]

    async def recent_turns(self, context: TrustedContext, limit: int | None = None) -> list[Turn]:
        """The conversation's turns (visible in this scope), oldest first; the last ``limit`` if given."""
        return await self._run(self._recent_sync, context, limit)

    def _recent_sync(self, context: TrustedContext, limit: int | None) -> list[Turn]:
        condition, params = self._session_condition(context)
        wanted = min(limit or self._settings.session_window_turns, self._settings.max_query_limit)
        rows = self._read().execute(
            f"SELECT {SELECT_TURN} FROM turns t WHERE {condition} AND t.role != ? "
            "ORDER BY t.created_us DESC, t.seq DESC, t.id DESC LIMIT ?",
            (*params, SUMMARY, wanted),
        )
        return [turn_from_row(row) for row in reversed(rows.fetchall())]

    async def set_summary(
        self, context: TrustedContext, content: str, *, through_seq: int | None = None
    ) -> SessionSummary:
        """Fill the summary slot of the conversation (as written under this exact scope)."""
        return await self._run(self._set_summary_sync, context, content, through_seq)

    def _set_summary_sync(
        self, context: TrustedContext, content: str, through_seq: int | None
    ) -> SessionSummary:
        self._conversation(context)
        self._check_body(content, "summary")
        scope = context.scope()
        signature = scope_signature(scope)
        now = self._now()

        def transaction(db: DB) -> SessionSummary:
            row = db.execute(
                "SELECT id FROM turns WHERE scope_sig = ? AND role = ?", (signature, SUMMARY)
            ).fetchone()
            summary_id = row["id"] if row is not None else self._ids("summary")
            if row is not None:
                db.execute("DELETE FROM turns WHERE id = ?", (summary_id,))
            upto = through_seq
            if upto is None:
                last = db.execute(
                    "SELECT MAX(seq) FROM turns WHERE scope_sig = ? AND role != ?", (signature, SUMMARY)
                ).fetchone()[0]
                upto = int(last or 0)
            self._insert_turn(
                db,
                turn_id=summary_id,
                scope=scope,
                role=SUMMARY,
                seq=0,
                through_seq=upto,
                content=content,
                created=now,
            )
            return SessionSummary(
                id=summary_id, scope=scope, content=content, through_seq=upto, updated_at=now
            )

        return self._write(transaction)

    async def get_summary(self, context: TrustedContext) -> SessionSummary | None:
        """The summary written under this exact scope, if any."""
        return await self._run(self._get_summary_sync, context)

    def _get_summary_sync(self, context: TrustedContext) -> SessionSummary | None:
        self._conversation(context)
        row = (
            self._read()
            .execute(
                f"SELECT {SELECT_TURN} FROM turns t WHERE t.scope_sig = ? AND t.role = ?",
                (scope_signature(context.scope()), SUMMARY),
            )
            .fetchone()
        )
        return None if row is None else summary_from_row(row)

    async def search_session(self, context: TrustedContext, text: str, limit: int) -> list[SessionHit]:
        """Turns and summaries of the conversation sharing a term with ``text``, by BM25."""
        self._check_limit(limit)
        return await self._run(self._search_session_sync, context, text, limit)

    def _search_session_sync(self, context: TrustedContext, text: str, limit: int) -> list[SessionHit]:
        assert self._analyzer is not None
        condition, params = self._session_condition(context)
        db = self._read()
        terms = self._analyzer.terms(text)
        numbers = self._visible_numbers(db, context)
        if fts_query(terms, numbers) is None:
            return []
        hits: list[SessionHit] = []
        for row in self._session_search(db, terms, numbers, condition, params, limit):
            item: Turn | SessionSummary = (
                summary_from_row(row) if row["role"] == SUMMARY else turn_from_row(row)
            )
            hits.append(SessionHit(item=item, score=-float(row["rank"])))
        return hits

    async def clear_session(self, context: TrustedContext) -> int:
        """Forget the turns and summary written under this exact scope."""
        return await self._run(self._clear_sync, context)

    def _clear_sync(self, context: TrustedContext) -> int:
        self._conversation(context)
        signature = scope_signature(context.scope())
        return self._write(
            lambda db: int(db.execute("DELETE FROM turns WHERE scope_sig = ?", (signature,)).rowcount)
        )
