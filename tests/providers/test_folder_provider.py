from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from simone.providers import FolderProvider
from simone.runtime import ConfigError, Router, Status, TrustedContext

CTX = TrustedContext(actor="tester")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "fusion.md").write_text(
        "# Fusion\n\nReciprocal rank fusion merges rankings.\nIt uses k = 60.\n\n## Weights\n\nWeights are optional.\n"
    )
    (tmp_path / "cats.txt").write_text("Cats sleep most of the day.\n\nThey purr when content.\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "bad.md").write_bytes(b"caf\xe9 latin-1 text")
    (tmp_path / "blob.md").write_bytes(b"\x00binary in disguise")
    return tmp_path


def search(folder: Path, query: str) -> tuple[FolderProvider, object]:
    async def go() -> tuple[FolderProvider, object]:
        provider = await FolderProvider(folder).load()
        router = Router([provider])
        return provider, await router.retrieve(router.request(query), CTX)

    return anyio.run(go)


def test_finds_the_right_paragraph_with_line_range(folder: Path) -> None:
    provider, result = search(folder, "how does rank fusion merge?")
    assert result.status is Status.COMPLETE  # type: ignore[attr-defined]
    top = result.evidence[0]  # type: ignore[attr-defined]
    assert top.locator == "fusion.md#L3-L4"
    assert top.title == "Fusion"
    assert "k = 60" in top.content


def test_unrelated_query_finds_nothing(folder: Path) -> None:
    _, result = search(folder, "quantum chromodynamics")
    assert result.status is Status.NO_RESULTS  # type: ignore[attr-defined]


def test_skipped_files_say_why(folder: Path) -> None:
    provider, _ = search(folder, "cats")
    reasons = {s.path: s.reason for s in provider.skipped}
    assert "not a text document" in reasons["blob.bin"]
    assert reasons["bad.md"] == "not valid UTF-8"
    assert reasons["blob.md"] == "binary content"


def test_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        anyio.run(FolderProvider(tmp_path / "nope").load)
