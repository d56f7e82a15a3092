"""The CLI starts like a CLI: ``--help`` imports no heavy dependency, and ``simone mcp`` opens the index late.

Checked by what a fresh process has imported (``sys.modules``), never by timing; the timings are in
``benchmarks/startup.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from simone.agents._runtime import Runtime
from simone.agents._tools import ORCHESTRATOR
from simone.agents.cli import _main
from simone.providers.documents import LAZY_OPTION, LazyDocuments
from simone.runtime import Caller, EmbeddingSettings, SearchMode, Settings, TrustedContext

HEAVY = ("mcp", "lancedb", "onnxruntime", "pydantic", "anyio", "pyarrow", "numpy")

FACE_RECIPE = {"simone.runtime", "simone.runtime._lifecycle"}
"""What every lazy face imports (``simone.runtime.lazy_face``): the runtime's own face and the recipe."""

PROBE = """
import json, sys
from simone.agents.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
sys.stderr.write(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported(*argv: str) -> tuple[int, set[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=False, timeout=120
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return int(report["code"]), set(report["modules"]), done.stdout


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_help_and_version_import_no_heavy_dependency(argv: list[str]) -> None:
    code, modules, out = _imported(*argv)
    assert code in (0, 2)
    loaded = sorted(name for name in HEAVY if name in modules)
    assert not loaded, f"simone {' '.join(argv)} imported {loaded}"
    runtime = sorted(m for m in modules if m.startswith("simone.runtime") and m not in FACE_RECIPE)
    assert not runtime, f"simone {' '.join(argv)} imported {runtime}"
    if argv == ["--help"]:
        for name in _main.COMMANDS:
            assert name in out, f"{name} missing from simone --help"


def test_a_command_imports_only_its_own_module() -> None:
    code, modules, _ = _imported("memory", "--help")
    assert code == 0
    others = sorted(f"simone.agents.cli._{n}" for n in _main.COMMANDS if n != "memory")
    assert not [m for m in others if m in modules]
    assert "mcp" not in modules and "lancedb" not in modules


def test_the_listed_help_is_what_each_command_registers() -> None:
    """``COMMAND_HELP`` (shown without importing the modules) says what the modules themselves say."""
    parser = _main.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    registered = {choice.dest: choice.help for choice in sub._choices_actions}
    assert registered == {name: _main.COMMAND_HELP[name] for name in _main.COMMANDS}
    assert set(_main.COMMAND_HELP) == set(_main.COMMANDS)


def test_the_search_modes_offered_are_the_search_modes() -> None:
    parser = _main.build_parser("search")
    args = parser.parse_args(["search", "q", "--mode", "lexical"])
    assert args.mode == "lexical"
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    search = sub.choices["search"]
    mode = next(a for a in search._actions if a.dest == "mode")
    assert list(mode.choices or ()) == [m.value for m in SearchMode]


def test_a_lazy_runtime_opens_the_index_on_first_search(tmp_path: Path) -> None:
    """``simone mcp``'s runtime: nothing of LanceDB is opened until a search needs it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fusion.md").write_text("# Fusion\n\nReciprocal rank fusion merges rankings.\n", encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "data", embeddings=EmbeddingSettings(chain=["onnx"], cache=False))

    async def go() -> None:
        from simone.providers.documents import DocumentIndex

        async with DocumentIndex.open(settings) as index:
            await index.index_paths([docs])
        async with Runtime.open(settings, web=False, provider_options={"index": {LAZY_OPTION: True}}) as rt:
            assert rt.router is not None
            (lazy,) = [p for p in rt.router.providers.values() if isinstance(p, LazyDocuments)]
            assert lazy.index is None, "the index was opened before the first search"
            assert "retrieve_context" in {t.name for t in rt.registry.for_profile(ORCHESTRATOR)}
            context = TrustedContext(actor="tester", caller=Caller.ORCHESTRATOR)
            result = await rt.retrieve(context, "reciprocal rank fusion", providers=["documents"])
            assert lazy.index is not None
            assert any("Reciprocal rank fusion" in e.content for e in result.evidence)

    anyio.run(go)


EXIT_PROBE = """
import atexit, sys, threading, time
from pathlib import Path
from simone.agents.cli._main import exit_now
atexit.register(lambda: print("handler ran", flush=False))
print("x" * 200_000)  # more than a pipe's buffer: must be flushed, not lost
if sys.argv[1] == "thread":
    def late() -> None:
        time.sleep(0.3)
        Path(sys.argv[2]).write_text("done", encoding="utf-8")
    threading.Thread(target=late).start()  # a non-daemon thread still working
exit_now(3)
"""


@pytest.mark.parametrize("case", ["plain", "thread"])
def test_the_quick_exit_flushes_runs_the_handlers_and_waits_for_live_threads(
    case: str, tmp_path: Path
) -> None:
    """``simone`` skips the interpreter's teardown, yet nothing written is lost and nothing is cut short."""
    marker = tmp_path / "marker"
    done = subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, case, str(marker)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3
    assert done.stdout == "x" * 200_000 + "\nhandler ran\n"
    assert marker.exists() == (case == "thread")


def test_the_runtime_face_imports_only_what_a_name_needs() -> None:
    """``from simone.runtime import load_settings`` (``simone mcp`` before its handshake) stays light."""
    probe = (
        "import sys; from simone.runtime import load_settings, SimoneError; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('simone', 'lancedb', 'numpy', 'mcp')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(done.stdout.split())
    assert loaded == {"simone", *FACE_RECIPE, "simone.runtime._config", "simone.runtime._errors"}, loaded
