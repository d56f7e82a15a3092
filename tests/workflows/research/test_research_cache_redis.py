"""Research over the Redis cache: two real processes share it; a server that is down only costs the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from simone.providers.testing import LoopbackWeb
from simone.runtime import Caller, Settings, TrustedContext, load_settings
from simone.workflows.research import FetchMode, ResearchStatus, WebResearchRequest

QUESTION = "What is the maximum depth of Lake Varnholm?"

# One research run in a fresh interpreter: its own data directory (so no diskcache can be shared), the
# loopback web's search backend and pages, and the Redis cache named only by the environment.
CHILD = r"""
import json, sys
import anyio
from simone.providers.web import open_web
from simone.runtime import Caller, TrustedContext, load_settings
from simone.workflows.research import FetchMode, WebResearch, WebResearchRequest

args = json.loads(sys.argv[1])
hosts = set(args["hosts"])

async def resolve(host, port):
    if host.lower().rstrip(".") in hosts:
        return ["127.0.0.1"]
    raise OSError(f"{host} is not a loopback host")

async def main():
    settings = load_settings()
    async with open_web(settings, resolver=resolve) as stack:
        research = WebResearch.from_stack(stack)
        request = WebResearchRequest.create(args["question"], fetch=FetchMode.ALWAYS)
        context = TrustedContext(actor="tester", caller=Caller.RESEARCHER, token_budget=20_000)
        result = await research.run(request, context)
    print(json.dumps({
        "backend": stack.cache.backend,
        "status": result.status.value,
        "queries": result.budget.queries_used,
        "fetches": result.budget.fetches_used,
        "cache": result.cache.model_dump(),
        "evidence": [e.id for e in result.evidence],
    }))

anyio.run(main)
"""


def run_child(web: LoopbackWeb, redis_url: str, data_dir: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    env.update(
        {
            "SIMONE_DATA_DIR": str(data_dir),
            "SIMONE_WEB__SEARXNG_URL": web.search_url,
            "SIMONE_WEB__ALLOWED_NETWORKS": '["127.0.0.1/32"]',
            "SIMONE_WEB__CACHE_URL": redis_url,
            "SIMONE_WEB__REQUEST_TIMEOUT_S": "5",
            "SIMONE_WEB__TOTAL_TIMEOUT_S": "20",
        }
    )
    payload = json.dumps({"hosts": sorted(web.hosts), "question": QUESTION})
    done = subprocess.run(
        [sys.executable, "-c", CHILD, payload],
        env=env,
        cwd=data_dir.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_two_processes_share_the_redis_cache(web: LoopbackWeb, redis_url: str, tmp_path: Path) -> None:
    first = run_child(web, redis_url, tmp_path / "host-a")
    assert first["backend"] == "redis" and first["status"] == "complete"
    assert first["cache"]["search_misses"] == first["queries"] > 0
    assert first["cache"]["page_misses"] == first["fetches"] > 0
    assert web.requests, "the first process searched and fetched"

    web.clear_log()
    second = run_child(web, redis_url, tmp_path / "host-b")  # another process, another data dir
    print(f"second process: {len(web.requests)} request(s) to the loopback web; cache {second['cache']}")
    assert web.requests == [], "the second process sends nothing to the web backend"
    assert second["status"] == "complete"
    assert second["cache"]["search_hits"] == second["queries"] and second["cache"]["search_misses"] == 0
    assert second["cache"]["page_hits"] == second["fetches"] > 0 and second["cache"]["page_misses"] == 0
    assert second["cache"]["read_errors"] == second["cache"]["write_errors"] == 0
    assert second["evidence"] == first["evidence"]


def test_cache_url_from_the_environment_selects_redis(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMONE_WEB__CACHE_URL", "redis://cache.internal:6379/2")
    monkeypatch.setenv("SIMONE_WEB__CACHE_PASSWORD", "pw")
    settings = load_settings()
    assert settings.web.cache_url == "redis://cache.internal:6379/2"
    assert settings.web.cache_password is not None
    with pytest.raises(ValidationError, match="cache_url"):
        Settings(web={"cache_url": "http://cache.internal/"})


@pytest.mark.anyio
async def test_research_runs_when_the_redis_cache_is_down(
    open_research: Any, web: LoopbackWeb, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with open_research(cache_url=f"redis://127.0.0.1:{port}/0") as (research, stack):
        assert stack.cache.backend == "redis"
        context = TrustedContext(actor="tester", caller=Caller.RESEARCHER, token_budget=20_000)
        result = await research.run(WebResearchRequest.create(QUESTION, fetch=FetchMode.ALWAYS), context)
    assert result.status is ResearchStatus.COMPLETE, result.limitations
    assert result.cache.read_errors > 0 and result.cache.writes == 0
    assert any("research cache was unavailable" in note for note in result.limitations)
    assert web.requests, "everything was fetched live"
