"""The code of docs/composing.md runs as written (offline: no documents, the loopback web)."""

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.agents import Runtime
from simone.providers.testing import LoopbackWeb
from simone.runtime import PROVIDER_FACTORIES, NotFound, ProviderNotConfigured, Settings

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "composing.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def _namespace() -> dict[str, Any]:
    blocks = _blocks()
    assert len(blocks) >= 5
    namespace: dict[str, Any] = {"__name__": "composing_docs"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    return namespace


def test_custom_provider_and_rule_examples(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ns = _namespace()
    settings = Settings(data_dir=isolated_env / "data")
    anyio.run(ns["ask_the_faq"], settings)
    out = capsys.readouterr().out
    assert "complete ['When is the office open?']" in out
    assert "[1]" in out and "nine to five" in out and "faq:When is the office open?" in out

    ns["explain_selection"]()
    out = capsys.readouterr().out
    assert "ask faq: rule faq-for-how-to" in out and "'how do i'" in out
    assert "rule faq-for-how-to: did not fire (the query mentions none of" in out
    assert "no rule selected a provider" in out


def test_a_provider_package_registers_its_factory_and_publishes_typed(isolated_env: Path) -> None:
    ns = _namespace()
    ns["register_faq"]()
    try:
        entries = {"When is the office open?": "From nine to five."}
        settings = Settings(data_dir=isolated_env / "data", providers={"faq": {"entries": entries}})

        async def main() -> None:
            async with Runtime.open(settings, documents=False, memory=False, web=False) as runtime:
                assert runtime.router is not None and list(runtime.router.providers) == ["faq"]
                assert runtime.published.require(ns["FAQ_TABLE"]).entries == entries
                result = await runtime.retrieve(
                    runtime.admit({"actor": "alice"}), "office open", providers=("faq",)
                )
                assert [item.title for item in result.evidence] == ["When is the office open?"]

        anyio.run(main)
    finally:
        PROVIDER_FACTORIES.unregister("faq")


def test_workflow_chaining_retrieval_and_research(web_settings: Settings, loopback_web: LoopbackWeb) -> None:
    ns = _namespace()

    async def main() -> None:
        options = {"documents": False, "web_options": {"resolver": loopback_web.resolver()}}
        async with Runtime.open(web_settings, **options) as runtime:
            text = await ns["brief"](
                runtime, runtime.admit({"actor": "alice"}), "maximum depth of Lake Varnholm"
            )
        assert "212 metres" in text and "[1]" in text and "web research confidence" in text
        async with Runtime.open(Settings(data_dir=web_settings.data_dir), documents=False) as runtime:
            with pytest.raises(ProviderNotConfigured, match="SIMONE_WEB__SEARXNG_URL"):
                await ns["brief"](runtime, runtime.admit({"actor": "alice"}), "anything at all")

    anyio.run(main)


def test_memory_from_python(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ns = _namespace()
    settings = Settings(data_dir=isolated_env / "data")
    anyio.run(ns["remember"], settings)
    out = capsys.readouterr().out.splitlines()
    found = [line for line in out if line.startswith("found ")]
    assert sorted(found) == [
        "found note Deploys happen on Tuesdays",
        "found todo Renew the deploy certificate",
    ]
    assert "todo completed completed True" in out
    status, locators = out[-1].split(" ", 1)
    assert status == "complete" and "memory:note/" in locators

    async def as_bob() -> None:  # what the page says of another actor
        async with Runtime.open(settings, documents=False, web=False) as runtime:
            alice, bob = runtime.admit({"actor": "alice", "project": "acme"}), runtime.admit({"actor": "bob"})
            todos = await runtime.memory.search_records(alice, ns["SearchQuery"](text="certificate"))
            assert not await runtime.memory.search_records(bob, ns["SearchQuery"](text="deploy"))
            with pytest.raises(NotFound):
                await runtime.memory.complete(bob, todos[0].record.id)
        async with Runtime.open(settings, documents=False, memory=False, web=False) as runtime:
            with pytest.raises(ProviderNotConfigured, match="memory is not open"):
                runtime.memory  # noqa: B018 - the property raises

    anyio.run(as_bob)


def test_the_examples_pass_mypy_strict_as_a_user_script(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    script = tmp_path / "composing_docs.py"
    script.write_text("\n\n".join(_blocks()), encoding="utf-8")
    # from the repository root, so pyproject's [tool.mypy] (strict, the pydantic plugin) and its cache apply
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(script)],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT / ".typecheck")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
