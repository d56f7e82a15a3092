"""Injectable time and ids, so that a replayed sequence of operations gives exactly the same state."""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]
"""Returns the current time as a timezone-aware datetime (converted to UTC by the store)."""

IdGenerator = Callable[[str], str]
"""Returns a new unique id for an object of the given kind (``note``, ``todo``, ``item``, ``turn``…)."""


def system_clock() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)


def random_ids(kind: str) -> str:
    """``<kind>-<16 hex digits>`` from a random UUID (the default id generator)."""
    return f"{kind}-{uuid.uuid4().hex[:16]}"


class ManualClock:
    """A clock that moves only when told to, or by ``tick`` on every reading (deterministic tests).

    Args:
        start: the first reading (aware; default 2026-01-01T00:00:00Z).
        tick: how far each reading advances the clock (default: not at all).
    """

    def __init__(self, start: datetime | None = None, *, tick: timedelta = timedelta(0)) -> None:
        self._now = (start or datetime(2026, 1, 1, tzinfo=UTC)).astimezone(UTC)
        self._tick = tick
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        """The current reading; then advance by ``tick``."""
        with self._lock:
            now = self._now
            self._now = now + self._tick
            return now

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward by ``delta``."""
        with self._lock:
            self._now += delta


class SequentialIds:
    """Ids ``<prefix><kind>-<n:08d>`` counting up from 1 (deterministic tests and replays)."""

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def __call__(self, kind: str) -> str:
        """The next id for ``kind``."""
        with self._lock:
            return f"{self._prefix}{kind}-{next(self._counter):08d}"
