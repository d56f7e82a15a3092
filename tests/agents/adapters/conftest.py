"""Shared fixtures of the framework adapters' tests: one real index (the handbook, bundled ONNX model,
LanceDB) and real SQLite memory with a note for each of two actors, built once per session."""

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from simone.agents import Runtime, bundled_docs
from simone.providers.documents import DOCUMENT_INDEX
from simone.providers.memory import MEMORY_STORE, NoteCreate
from simone.providers.testing import FailingProvider
from simone.runtime import ProviderUnavailable, Settings

# Haystack reads this when it is first imported; its telemetry would try to reach the internet.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


@pytest.fixture
def wiki_down() -> FailingProvider:
    """A provider of the builder's own whose service is down (kind ``unavailable``)."""
    return FailingProvider("wiki", ProviderUnavailable("the wiki is down", provider="wiki"))


@pytest.fixture(scope="session")
def adapter_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding the indexed handbook and one memory note each for alice and bob."""
    data = tmp_path_factory.mktemp("adapters") / "data"
    docs = bundled_docs()
    assert docs is not None

    async def build() -> None:
        async with Runtime(Settings(data_dir=data), web=False) as runtime:
            await runtime.published.require(DOCUMENT_INDEX).index_paths([docs])
            store = runtime.published.require(MEMORY_STORE)
            alice, bob = runtime.admit({"actor": "alice"}), runtime.admit({"actor": "bob"})
            await store.create(
                alice, NoteCreate(title="Deploy window", body="Staging deploys run Tuesday at noon.")
            )
            await store.create(
                bob, NoteCreate(title="Deploy window", body="Production deploys run Friday at five.")
            )

    with pytest.MonkeyPatch.context() as patch:
        for key in list(os.environ):
            if key.startswith("SIMONE_") and key != "SIMONE_EMBEDDINGS__ONNX_VARIANT":
                patch.delenv(key)
        anyio.run(build)
    return data


@pytest.fixture
def settings(isolated_env: Path, adapter_data: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings over the shared data directory (the environment isolated, the suite's ONNX graph kept)."""
    monkeypatch.setenv("SIMONE_EMBEDDINGS__ONNX_VARIANT", "reference")
    monkeypatch.setenv("SIMONE_DATA_DIR", str(adapter_data))
    return Settings(data_dir=adapter_data)


@pytest.fixture
def no_haystack_telemetry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Haystack's telemetry off even when another test imported it before the variable was set."""
    telemetry = pytest.importorskip("haystack.telemetry._telemetry")
    monkeypatch.setattr(telemetry, "telemetry", None)
    yield
