"""``simone doctor`` names each shared backend, its address without secrets, its version, and whether it
answers — against the real servers the tests start (PostgreSQL, Redis, moto's S3)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from simone.agents.cli import main


def _doctor(capsys: pytest.CaptureFixture[str], data: Path) -> tuple[int, dict[str, Any], str]:
    code = main(["--data-dir", str(data), "doctor", "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.out + out.err


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_doctor_names_every_shared_backend_and_says_it_answers(
    isolated_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    postgres_url: str,
    redis_url: str,
    s3_index: Any,
) -> None:
    for key, value in {
        **s3_index.env(),
        "SIMONE_MEMORY__URL": postgres_url,
        "SIMONE_WEB__CACHE_URL": redis_url,
    }.items():
        monkeypatch.setenv(key, value)
    code, report, text = _doctor(capsys, isolated_env / "data")
    backends = report["backends"]
    assert backends["index"]["backend"] == "s3" and backends["index"]["answers"] is True
    assert backends["memory"]["backend"] == "postgres" and backends["memory"]["answers"] is True
    assert backends["memory"]["schema_version"] >= 1
    assert backends["research_cache"]["backend"] == "redis" and backends["research_cache"]["answers"] is True
    assert code == 0
    assert s3_index.env()["AWS_SECRET_ACCESS_KEY"] not in text


def test_a_backend_that_is_down_is_reported_without_its_password(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _closed_port()
    monkeypatch.setenv("SIMONE_MEMORY__URL", f"postgresql://simone:hunter2@127.0.0.1:{port}/simone")
    monkeypatch.setenv("SIMONE_WEB__CACHE_URL", f"redis://127.0.0.1:{_closed_port()}/0")
    monkeypatch.setenv("SIMONE_WEB__CACHE_PASSWORD", "hunter3")
    code, report, text = _doctor(capsys, isolated_env / "data")
    assert code == 1, "a configured backend that does not answer is a problem"
    assert report["backends"]["memory"]["answers"] is False and report["backends"]["memory"]["error"]
    assert report["backends"]["research_cache"]["answers"] is False
    assert "hunter2" not in text and "hunter3" not in text


def test_only_the_research_cache_down_is_degraded_not_a_failure(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SIMONE_WEB__CACHE_URL", f"redis://127.0.0.1:{_closed_port()}/0")
    code, report, text = _doctor(capsys, isolated_env / "data")
    assert report["backends"]["research_cache"]["answers"] is False
    assert report["degraded_backends"] == ["research_cache"]
    assert code == 0, "retrieval does not need the research cache"
