"""Every error a user can cause on the command line is one line with the documented exit status.

Each bad input runs through ``main([...])`` (and a few through a real ``simone`` process): stderr holds
exactly one line, ``simone: error: <what> — <what to do>``, no traceback, and the exit status is 2 for a
usage error, 1 for any other error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from simone.agents.cli import _main as cli_main, main

NOT_UTF8 = os.fsdecode(b"caf\xe9 \xff")
"""What Python makes of argv bytes that are not UTF-8 (lone surrogates, by surrogateescape)."""

NAIVE_EXPORT = {
    "format": "simone-memory",
    "version": 1,
    "exported_at": "2026-01-01T00:00:00",
    "records": [
        {
            "id": "note-00000000000000aa",
            "kind": "note",
            "scope": {"actor": "alice"},
            "title": "a note",
            "body": "",
            "tags": [],
            "status": "active",
            "priority": None,
            "due_at": None,
            "items": [],
            "fact": None,
            "task_state": None,
            "created_at": "2026-01-01T00:00:00",
            "updated_at": "2026-01-01T00:00:00",
            "completed_at": None,
            "deleted_at": None,
            "revision": 1,
        }
    ],
    "turns": [],
    "summaries": [],
}


@pytest.fixture
def files(isolated_env: Path) -> Path:
    """A working folder with the files the bad inputs point at."""
    root = isolated_env
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("# Budget\n\nThe budget report lists every omitted item.\n")
    (root / "latin1.toml").write_bytes(b"[router]\nrrf_k = 30  # caf\xe9\n")
    (root / "broken.toml").write_text("[router\nrrf_k = 3\n")
    (root / "unknown.toml").write_text("[router]\nbogus = 3\n")
    (root / "inf.toml").write_text("[router]\nweights = { documents = inf }\n")
    (root / "nan.toml").write_text("[router]\nweights = { documents = nan }\n")
    (root / "secret.toml").write_text("[web]\nbrave_api_key = 'x'\n")
    (root / "afile").write_text("not a folder")
    (root / "naive.json").write_text(json.dumps(NAIVE_EXPORT))
    (root / "not-json.json").write_text("{not json")
    (root / "latin1.json").write_bytes(b"\xff\xfe{}")
    (root / "other-shape.json").write_text('{"a": 1}')
    return root


# (argv, environment, exit status); "{root}" is the working folder of `files`.
USAGE = 2
ERROR = 1
CASES: list[tuple[list[str], dict[str, str], int]] = [
    # empty, negative and non-UTF-8 arguments: the argument parser refuses them (usage, 2)
    (["memory", "search", ""], {}, USAGE),
    (["index", "{root}/docs", "--project", ""], {}, USAGE),
    (["index", "{root}/docs", "--collection", "bad!name"], {}, USAGE),
    (["index", ""], {}, USAGE),
    (["memory", "search", "   "], {}, USAGE),
    (["memory", "search", NOT_UTF8], {}, USAGE),
    (["memory", "search", "x", "--limit", "-5"], {}, USAGE),
    (["memory", "list", "--limit", "-1"], {}, USAGE),
    (["memory", "list", "--limit", "0"], {}, USAGE),
    (["memory", "list", "--offset", "-1"], {}, USAGE),
    (["memory", "list", "--limit", "ten"], {}, USAGE),
    (["memory", "list", "--kind", "bogus"], {}, USAGE),
    (["memory", "list", "--actor", ""], {}, USAGE),
    (["memory", "list", "--project", ""], {}, USAGE),
    (["memory", "list", "--conversation", " "], {}, USAGE),
    (["memory", "add", "note", "t", "--actor", ""], {}, USAGE),
    (["memory", "add", "note", ""], {}, USAGE),
    (["memory", "add", "note", NOT_UTF8], {}, USAGE),
    (["memory", "add", "note", "t", "--body", NOT_UTF8], {}, USAGE),
    (["memory", "add", "checklist", "t", "--item", ""], {}, USAGE),
    (["memory", "add", "fact", "s", "p", "o", "--confidence", "2"], {}, USAGE),
    (["memory", "add", "fact", "s", "p", "o", "--confidence", "nan"], {}, USAGE),
    (["memory", "add", "task", "n", "--progress", "-0.5"], {}, USAGE),
    (["memory", "done", ""], {}, USAGE),
    (["memory"], {}, USAGE),
    (["search", "", "{root}/docs"], {}, USAGE),
    (["search", NOT_UTF8, "{root}/docs"], {}, USAGE),
    (["search", "x", "{root}/docs", "--limit", "-1"], {}, USAGE),
    (["search", "x", "{root}/docs", "--max-tokens", "-1"], {}, USAGE),
    (["search", "x", "--collection", "bad name!"], {}, USAGE),
    (["search", "x", "--mode", "bogus"], {}, USAGE),
    (["ask", ""], {}, USAGE),
    (["ask", NOT_UTF8], {}, USAGE),
    (["ask", "q", "--actor", ""], {}, USAGE),
    (["research", " "], {}, USAGE),
    (["mcp", "--actor", ""], {}, USAGE),
    (["bogus"], {}, USAGE),
    (["--data-dir", "", "memory", "list"], {}, USAGE),
    (["--config", "", "memory", "list"], {}, USAGE),
    # errors (1)
    (["memory", "add", "todo", "t", "--due", "soon"], {}, ERROR),
    (["memory", "add", "todo", "t", "--due", "2026-02-01T09:00:00"], {}, ERROR),
    (["memory", "add", "todo", "t", "--due", "2026-02-30T09:00:00+00:00"], {}, ERROR),
    (["memory", "list", "--limit", "100000"], {}, ERROR),
    (["memory", "done", "note-nope"], {}, ERROR),
    (["memory", "delete", "note-nope"], {}, ERROR),
    (["memory", "export", "{root}/missing/out.json"], {}, ERROR),
    (["memory", "export", "{root}"], {}, ERROR),
    (["memory", "import", "{root}/naive.json"], {}, ERROR),
    (["memory", "import", "{root}/nope.json"], {}, ERROR),
    (["memory", "import", "{root}/not-json.json"], {}, ERROR),
    (["memory", "import", "{root}/latin1.json"], {}, ERROR),
    (["memory", "import", "{root}/other-shape.json"], {}, ERROR),
    (["memory", "import", "{root}"], {}, ERROR),
    (["search", "x", "{root}/nope"], {}, ERROR),
    (["--config", "{root}/latin1.toml", "memory", "list"], {}, ERROR),
    (["--config", "{root}/broken.toml", "memory", "list"], {}, ERROR),
    (["--config", "{root}/unknown.toml", "memory", "list"], {}, ERROR),
    (["--config", "{root}/inf.toml", "memory", "list"], {}, ERROR),
    (["--config", "{root}/nan.toml", "memory", "list"], {}, ERROR),
    (["--config", "{root}/secret.toml", "memory", "list"], {}, ERROR),
    (["--config", "{root}/nope.toml", "memory", "list"], {}, ERROR),
    (["--config", "{root}", "memory", "list"], {}, ERROR),
    (["memory", "list"], {"SIMONE_CONFIG": "{root}/nope.toml"}, ERROR),
    (["memory", "list"], {"SIMONE_ROUTER__WEIGHTS": "notjson"}, ERROR),
    (["memory", "list"], {"SIMONE_ROUTER__WEIGHTS": '{"documents": Infinity}'}, ERROR),
    (["memory", "list"], {"SIMONE_ROUTER__WEIGHTS": '{"documents": NaN}'}, ERROR),
    (["memory", "list"], {"SIMONE_ROUTER__WEIGHTS": '{"documents": -1}'}, ERROR),
    (["memory", "list"], {"SIMONE_ROUTER__RRF_K": "many"}, ERROR),
    (["memory", "list"], {"SIMONE_ROUTER__PROVIDER_TIMEOUT_S": "inf"}, ERROR),
    (["memory", "list"], {"SIMONE_ROUTER": "notjson"}, ERROR),
    (["memory", "list"], {"SIMONE_EMBEDDINGS__CHAIN": "onnx"}, ERROR),
    (["--data-dir", "/dev/null", "memory", "list"], {}, ERROR),
    (["--data-dir", "/dev/null/simone", "search", "x"], {}, ERROR),
    (["--data-dir", "{root}/afile", "memory", "list"], {}, ERROR),
    (["--data-dir", "{root}/afile/sub", "doctor"], {}, ERROR),
    (["--data-dir", "{root}/afile/sub", "ask", "why?"], {}, ERROR),
    (["memory", "list"], {"SIMONE_DATA_DIR": "/dev/null"}, ERROR),
    (["memory", "list"], {"SIMONE_MEMORY__PATH": "{root}/afile/memory.sqlite3"}, ERROR),
    (["memory", "list"], {"SIMONE_MEMORY__PATH": "{root}"}, ERROR),
]


def _fill(text: str, root: Path) -> str:
    return text.replace("{root}", str(root))


def _check(code: int, err: str, expected: int) -> None:
    lines = err.splitlines()
    assert "Traceback" not in err, err
    assert len(lines) == 1, f"expected one line of stderr, got {len(lines)}:\n{err}"
    assert lines[0].startswith("simone: error: "), lines[0]
    assert " — " in lines[0], f"the line says what to do after ' — ': {lines[0]}"
    assert code == expected, f"exit {code}, expected {expected}: {lines[0]}"


@pytest.mark.parametrize(
    ("argv", "env", "expected"), CASES, ids=[" ".join(c[0]) + " " + " ".join(c[1]) for c in CASES]
)
def test_a_bad_input_is_one_line_with_the_documented_exit_status(
    argv: list[str],
    env: dict[str, str],
    expected: int,
    files: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SIMONE_DATA_DIR", str(files / "data"))
    for key, value in env.items():
        monkeypatch.setenv(key, _fill(value, files))
    code = main([_fill(arg, files) for arg in argv])
    _check(code, capsys.readouterr().err, expected)


def _simone(argv: list[bytes], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    environment.update(env)
    command = [sys.executable, "-m", "simone.agents.cli"]
    return subprocess.run([*command, *argv], capture_output=True, env=environment, cwd=cwd, timeout=120)


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        ([b"memory", b"search", b"caf\xe9"], {}, USAGE),  # argv bytes that are not UTF-8
        ([b"memory", b"add", b"note", b"\xff\xfe"], {}, USAGE),
        ([b"memory", b"list"], {"SIMONE_ROUTER__WEIGHTS": "notjson"}, ERROR),
        ([b"memory", b"list"], {"SIMONE_ROUTER__WEIGHTS": '{"documents": Infinity}'}, ERROR),
        ([b"--data-dir", b"/dev/null", b"search", b"budget"], {}, ERROR),
        ([b"memory", b"export", b"missing/out.json"], {}, ERROR),
    ],
)
def test_a_real_process_prints_one_line_too(
    argv: list[bytes], env: dict[str, str], expected: int, files: Path
) -> None:
    done = _simone(argv, {"SIMONE_DATA_DIR": str(files / "data"), **env}, files)
    _check(done.returncode, done.stderr.decode("utf-8", "backslashreplace"), expected)


def test_the_messages_say_what_and_what_to_do(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SIMONE_DATA_DIR", str(files / "data"))

    def error(*argv: str) -> str:
        code = main(list(argv))
        assert code != 0
        return capsys.readouterr().err

    assert "--limit: must be at least 1, not -1" in error("memory", "list", "--limit", "-1")
    assert "--offset: must be 0 or more" in error("memory", "list", "--offset", "-1")
    assert "--actor: must not be empty" in error("memory", "list", "--actor", "")
    assert "is not valid UTF-8" in error("memory", "search", NOT_UTF8)
    assert "see 'simone memory search --help'" in error("memory", "search", "")
    err = error("memory", "export", str(files / "missing" / "out.json"))
    assert "cannot write the export" in err and "No such file or directory" in err
    err = error("--config", str(files / "latin1.toml"), "memory", "list")
    assert "is not UTF-8 text" in err and "save it as UTF-8" in err
    monkeypatch.setenv("SIMONE_ROUTER__WEIGHTS", "notjson")
    err = error("memory", "list")
    assert "SIMONE_ROUTER__WEIGHTS" in err and "JSON" in err
    monkeypatch.setenv("SIMONE_ROUTER__WEIGHTS", '{"documents": Infinity}')
    err = error("memory", "list")
    assert "router.weights.documents" in err and "finite" in err and "SIMONE_ROUTER__WEIGHTS" in err
    monkeypatch.delenv("SIMONE_ROUTER__WEIGHTS")
    err = error("--data-dir", "/dev/null/simone", "memory", "list")
    assert "lies under /dev/null, which is not a directory" in err and "--data-dir" in err
    err = error("memory", "import", str(files / "naive.json"))
    assert "timezone" in err and "nothing was written" in err


def test_an_unexpected_error_is_one_line_and_the_traceback_comes_with_simone_debug(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from simone.agents.cli import _memory

    async def broken(args: object) -> int:
        raise RuntimeError("something nobody foresaw")

    monkeypatch.setattr(_memory, "run", broken)
    monkeypatch.setenv("SIMONE_DATA_DIR", str(files / "data"))
    assert main(["memory", "list"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "simone: error: unexpected RuntimeError: something nobody foresaw — this is a bug worth "
        "reporting; run with SIMONE_DEBUG=1 for the traceback"
    ]
    monkeypatch.setenv("SIMONE_DEBUG", "1")
    assert main(["memory", "list"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "RuntimeError: something nobody foresaw" in err
    assert err.splitlines()[-1].startswith("simone: error: unexpected RuntimeError")


def test_an_error_in_a_task_group_is_reported_by_its_cause(capsys: pytest.CaptureFixture[str]) -> None:
    group = ExceptionGroup(
        "unhandled errors in a TaskGroup", [PermissionError(13, "Permission denied", "/x")]
    )
    assert cli_main.report(group, "simone index") == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("simone: error: Permission denied: /x — check the path and its permissions")


def test_a_read_only_data_dir_is_named_in_the_one_line(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = files / "data"
    data.mkdir()
    real_access = os.access

    def access(path: object, mode: int, **kwargs: object) -> bool:
        if Path(str(path)) == data and mode == os.W_OK:
            return False  # what a read-only mount says (chmod does not stop root, who runs CI here)
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setenv("SIMONE_DATA_DIR", str(data))
    monkeypatch.setenv("SIMONE_MEMORY__PATH", str(files))  # the database cannot be opened
    assert main(["memory", "list"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("simone: error: ") and "Traceback" not in line
    assert line.endswith(f"— the data directory {data} is read-only: make it writable or pass --data-dir DIR")


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "exit status" in capsys.readouterr().out
    assert main(["memory", "list", "--help"]) == 0
    capsys.readouterr()
