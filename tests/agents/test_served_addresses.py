"""What a token holder of ``simone serve`` reads never names where the backends live (issue 26, item 8)."""

from __future__ import annotations

from pathlib import Path

from simone.agents.serve import AddressScrubber
from simone.runtime import Settings, redact_url


def _settings(tmp_path: Path) -> Settings:
    return Settings.model_validate(
        {
            "data_dir": str(tmp_path / "srv-data"),
            "memory": {"url": "postgresql://simone:s3cret@db.internal:5433/simone"},
            "web": {"cache_url": "redis://:pw@cache.internal:6380/2", "searxng_url": "http://10.1.2.3:8888"},
            "embeddings": {"openai_base_url": "http://gpu-box.internal:8000/v1"},
            "index": {
                "uri": "s3://team-bucket/index",
                "storage_options": {"endpoint": "http://minio.internal:9000"},
            },
        }
    )


def test_every_configured_address_becomes_its_kind_in_the_forms_messages_use(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    scrub = AddressScrubber.for_settings(settings)
    messages = {
        # the memory store's own redaction style, the runtime's, and a driver's host:port
        "memory postgresql://simone:***@db.internal:5433/simone failed": "<memory backend postgresql>",
        f"cannot reach {redact_url(settings.memory.url or '')}": "<memory backend postgresql>",
        'connection to server at "db.internal", port 5433 failed; db.internal:5433': (
            "<memory backend postgresql>"
        ),
        "Redis at redis://cache.internal:6380/2 is unavailable: refused": "<research cache>",
        "openai embedder is unreachable at http://gpu-box.internal:8000/v1/embeddings: ConnectError": (
            "<embedding server>"
        ),
        "searxng answered 502 (http://10.1.2.3:8888/search)": "<search backend searxng>",
        "open s3://team-bucket/index failed at http://minio.internal:9000": "<index>",
        f"cannot open the memory database {tmp_path / 'srv-data' / 'x.sqlite3'}": "<data directory>",
    }
    for message, kind in messages.items():
        scrubbed = scrub(message)
        assert kind in scrubbed, (message, scrubbed)
        for secret in (
            "s3cret",
            ":pw@",
            "db.internal",
            "cache.internal",
            "gpu-box",
            "10.1.2.3",
            "minio",
        ):
            assert secret not in scrubbed, (message, scrubbed)
        assert str(tmp_path) not in scrubbed


def test_public_services_and_ordinary_text_are_left_alone(tmp_path: Path) -> None:
    scrub = AddressScrubber.for_settings(_settings(tmp_path))
    text = (
        "Sources: https://api.search.brave.com/res/v1/web/search and https://example.org/page, port 5433 docs"
    )
    assert scrub(text) == text
    assert AddressScrubber([])("anything at all") == "anything at all"
    assert AddressScrubber([("memory", None), ("cache", "")])("x") == "x"
