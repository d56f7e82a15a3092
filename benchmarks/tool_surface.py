"""Tool surface: what an LLM pays to see simone's tools, and to read a typical result, in tokens.

Usage::

    python benchmarks/tool_surface.py                   # measure now; print beside the recorded "before"
    python benchmarks/tool_surface.py --record-before   # record the current figures as "before"

Measured in one run, over a real runtime (the bundled handbook indexed into a temporary data folder
by the real ONNX model, real SQLite memory):

* the tool list of each role under each tool profile (``core`` — the default —, ``retrieval``,
  ``memory``, ``full``) as ``tools/list`` puts it on the wire (the server's own
  ``simone.agents.mcp.listed_tools`` in the MCP SDK's JSON of ``name``, ``description`` and
  ``inputSchema``), with how many properties carry a description; beside them the list as it was
  before profiles (the 33 tools: ``full`` without the ``memory`` tool), measured in the same run;
* the two ways to a small default (issue 31.1), measured the same way: **one memory tool** with an
  ``action`` and a ``kind`` (the ``core`` profile) against a **small core set** of the per-kind
  memory tools a model needs most (create_note, create_todo, complete_todo, list_todos, create_fact,
  delete_memory beside the same retrieval and delegation tools), with how many of the 30 memory
  operations each reaches;
* a typical ``retrieve_context`` result (three handbook questions) and a memory ``search_notes`` result:
  the JSON text block MCP sent before (the dumped model) beside the compact text of
  ``simone.agents._tool_text.render_tool_result`` (the text block now; the structured model still goes
  as ``structuredContent`` for programs).

Tokens are counted with the all-MiniLM-L6-v2 WordPiece tokenizer bundled with simone (the only
tokenizer available offline here; no BPE vocabulary such as cl100k/o200k is installed). WordPiece
splits every punctuation mark into its own token, so JSON costs it a little more than a chat model's
BPE would; ``chars/4`` (simone's own estimator, the usual BPE rule of thumb) is printed beside it.
Both are estimates of a chat model's count; the ratios before/after are what the figures are for.

The "before" of the tool lists cannot be recomputed from today's code, so ``--record-before`` stores
the figures (with the git commit and the command) in ``benchmarks/results/tool_surface.json`` and every
later run keeps them and prints them side by side. The result texts' "before" (the JSON block) is
recomputed in the same run from the same result, so it is measured, not recalled.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from _index_common import RESULTS, save
from pydantic import BaseModel
from simone.agents import ORCHESTRATOR, RESEARCHER, AgentProfile, Runtime, bundled_docs
from simone.agents.mcp import (
    MEMORY_ALIASES,
    MEMORY_TOOL,
    TOOL_PROFILE_NAMES,
    ToolProfile,
    listed_tools,
)
from simone.providers.documents import DOCUMENT_INDEX
from simone.providers.embeddings import load_tokenizer
from simone.runtime import Settings

QUESTIONS = (
    "How are the rankings of several providers fused?",
    "What does the token budget of a request limit?",
    "How do I configure the memory store?",
)
NOTES = (
    ("Fusion weights", "The lexical leg is pinned when it is sure; the sharpness is 1.5."),
    ("Meeting with Bob", "Bob wants the quarterly report on fusion quality by Friday."),
    ("Budget rule", "Evidence that does not fit the token budget is omitted, and the result is partial."),
)
NAME = "tool_surface"
TOKENIZER_NAME = "all-MiniLM-L6-v2 WordPiece (bundled, offline)"


class Counter:
    """Characters, WordPiece tokens and chars/4 of a text."""

    def __init__(self) -> None:
        self._tokenizer = load_tokenizer(max_tokens=None)

    def __call__(self, text: str) -> dict[str, int]:
        tokens = len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return {"chars": len(text), "tokens": tokens, "chars_div_4": -(-len(text) // 4)}


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _properties(schema: Any) -> tuple[int, int]:
    """(properties, properties without a description) in a JSON schema, nested and ``$defs`` included."""
    total = undescribed = 0
    if isinstance(schema, dict):
        for value in (schema.get("properties") or {}).values():
            total += 1
            if not (isinstance(value, dict) and str(value.get("description") or "").strip()):
                undescribed += 1
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for item in value.values():
                    t, u = _properties(item)
                    total, undescribed = total + t, undescribed + u
            elif isinstance(value, (dict, list)):
                t, u = _properties(value)
                total, undescribed = total + t, undescribed + u
    elif isinstance(schema, list):
        for item in schema:
            t, u = _properties(item)
            total, undescribed = total + t, undescribed + u
    return total, undescribed


SMALL_CORE_SET = ToolProfile(
    "small core set",
    "the variant not chosen: the most used per-kind memory tools instead of the one memory tool",
    frozenset(
        {
            "retrieve_context",
            "retrieve_memory",
            "delegate_research",
            "web_research",
            "create_note",
            "create_todo",
            "complete_todo",
            "list_todos",
            "create_fact",
            "delete_memory",
        }
    ),
)
"""Variant B of issue 31.1, measured beside the ``core`` profile (variant A) and not shipped."""

BEFORE_PROFILES = "before profiles"
"""The list the server sent before tool profiles: every tool of the role, without the ``memory`` tool."""


def tool_list(
    runtime: Runtime, profile: AgentProfile, count: Counter, tools: ToolProfile | str = "core"
) -> dict[str, Any]:
    """The ``tools/list`` result (the server's own) of ``profile`` under ``tools``, as the SDK sends it.

    ``tools`` = :data:`BEFORE_PROFILES` measures the list as it was before tool profiles.
    """
    result = listed_tools(runtime, profile, "full" if tools == BEFORE_PROFILES else tools)
    if tools == BEFORE_PROFILES:
        result = result.model_copy(update={"tools": [t for t in result.tools if t.name != MEMORY_TOOL]})
    wire = result.model_dump_json(by_alias=True, exclude_none=True)
    props, undescribed = _properties([t.input_schema for t in result.tools])
    names = {t.name for t in result.tools}
    reachable = len(MEMORY_ALIASES) if MEMORY_TOOL in names else len(names & MEMORY_ALIASES.keys())
    return {
        "tools": len(result.tools),
        "names": sorted(names) if len(names) <= 12 else None,
        "properties": props,
        "undescribed_properties": undescribed,
        "described_share": round((props - undescribed) / props, 3) if props else None,
        "undescribed_tools": sum(1 for t in result.tools if not (t.description or "").strip()),
        "memory_operations": reachable,
        **count(wire),
    }


def _json_text(result: BaseModel) -> str:
    """The text block the MCP server sent before: the result's JSON."""
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


def _compact_text(name: str, result: BaseModel) -> str | None:
    try:
        from simone.agents._tool_text import render_tool_result
    except ImportError:  # the "before" tree has no compact renderer
        return None
    return render_tool_result(name, result)


def measure_result(name: str, results: list[BaseModel], count: Counter) -> dict[str, Any]:
    """Mean characters and tokens of ``results`` as the JSON text block and as the compact text."""

    def mean(texts: list[str]) -> dict[str, float]:
        measured = [count(text) for text in texts]
        return {key: round(sum(m[key] for m in measured) / len(measured), 1) for key in measured[0]}

    json_texts = [_json_text(r) for r in results]
    compact = [_compact_text(name, r) for r in results]
    out: dict[str, Any] = {"calls": len(results), "json": mean(json_texts)}
    if all(text is not None for text in compact):
        out["text"] = mean([text for text in compact if text is not None])
    return out


async def measure(data: Path) -> dict[str, Any]:
    count = Counter()
    docs = bundled_docs()
    if docs is None:
        raise SystemExit("simone's handbook (simone.agents.handbook) is missing: reinstall simone")
    async with Runtime(Settings(data_dir=data), web=False) as runtime:
        await runtime.published.require(DOCUMENT_INDEX).index_paths([docs])
        lists = {profile.name: tool_list(runtime, profile, count) for profile in (ORCHESTRATOR, RESEARCHER)}
        profiles = {
            role.name: {
                name: tool_list(runtime, role, count, name) for name in (*TOOL_PROFILE_NAMES, BEFORE_PROFILES)
            }
            for role in (ORCHESTRATOR, RESEARCHER)
        }
        variants = {
            "one memory tool (core)": tool_list(runtime, ORCHESTRATOR, count, "core"),
            SMALL_CORE_SET.name: tool_list(runtime, ORCHESTRATOR, count, SMALL_CORE_SET),
        }
        context = runtime.admit({"actor": "alice", "project": "handbook"})
        retrieved = [
            await runtime.session(context).call("retrieve_context", {"query": question})
            for question in QUESTIONS
        ]
        for title, text in NOTES:
            await runtime.session(context).call("create_note", {"title": title, "body": text})
        searched = [await runtime.session(context).call("search_notes", {"query": "fusion quality"})]
        evidence = [len(getattr(r, "evidence", [])) for r in retrieved]
    return {
        "tool_lists": lists,
        "profiles": profiles,
        "variants": variants,
        "results": {
            "retrieve_context": {
                **measure_result("retrieve_context", retrieved, count),
                "evidence_items": evidence,
            },
            "search_notes": measure_result("search_notes", searched, count),
        },
    }


def _row(label: str, before: Any, after: Any, unit: str) -> str:
    if before is None:
        return f"{label:<52} {'—':>10} {after:>10} {'':>8} {unit}"
    ratio = f"{after / before:.2f}x" if before else "—"
    return f"{label:<52} {before:>10} {after:>10} {ratio:>8} {unit}"


def _share(measured: dict[str, Any]) -> str:
    described = measured["properties"] - measured["undescribed_properties"]
    return f"{described}/{measured['properties']}"


def profile_table(now: dict[str, Any]) -> list[str]:
    """Each role's list under each profile, beside the list before profiles (same run)."""
    head = f"{'role / tool profile':<34} {'tools':>5} {'chars':>7} {'tokens':>7} {'chars/4':>7} "
    lines = [head + f"{'described':>10} {'memory ops':>10} {'chars vs before':>15}"]
    for role, measured in now["profiles"].items():
        was = measured[BEFORE_PROFILES]["chars"]
        for name, m in measured.items():
            ratio = f"{m['chars'] / was:.2f}x" if was else "—"
            lines.append(
                f"{role + ' / ' + name:<34} {m['tools']:>5} {m['chars']:>7} {m['tokens']:>7} "
                f"{m['chars_div_4']:>7} {_share(m):>10} {m['memory_operations']:>10} {ratio:>15}"
            )
    lines.append("")
    lines.append("the two ways to a small default (orchestrator):")
    for name, m in now["variants"].items():
        lines.append(
            f"  {name:<32} {m['tools']:>5} {m['chars']:>7} {m['tokens']:>7} {m['chars_div_4']:>7} "
            f"{_share(m):>10} {m['memory_operations']:>7}/{len(MEMORY_ALIASES)}"
        )
    return lines


def report(now: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    lines = [f"{'default list (core) and results':<52} {'before':>10} {'after':>10} {'ratio':>8}"]
    for profile, after in now["tool_lists"].items():
        was = (before or {}).get("tool_lists", {}).get(profile, {})
        lines.append(_row(f"{profile} tool list: tools", was.get("tools"), after["tools"], ""))
        for key in ("chars", "tokens", "chars_div_4"):
            lines.append(_row(f"{profile} tool list: {key}", was.get(key), after[key], ""))
        was_props = f"{was['undescribed_properties']}/{was['properties']}" if was else "—"
        now_props = f"{after['undescribed_properties']}/{after['properties']}"
        lines.append(f"{profile + ': undescribed/all properties':<52} {was_props:>10} {now_props:>10}")
    for tool, measured in now["results"].items():
        if "text" not in measured:
            for key in ("chars", "tokens", "chars_div_4"):
                lines.append(_row(f"{tool} result (JSON text): {key}", None, measured["json"][key], ""))
            continue
        for key in ("chars", "tokens", "chars_div_4"):
            lines.append(
                _row(f"{tool} result (JSON → text): {key}", measured["json"][key], measured["text"][key], "")
            )
    return lines


def summary(now: dict[str, Any], before: dict[str, Any] | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    section = "Agents — tool surface"
    for profile, after in now["tool_lists"].items():
        was = (before or {}).get("tool_lists", {}).get(profile)
        if was:
            rows.append(
                {
                    "section": section,
                    "metric": f"{profile} tool list (WordPiece tokens)",
                    "ours": after["tokens"],
                    "peer_name": "before (recorded)",
                    "peer": was["tokens"],
                    "ratio": round(after["tokens"] / was["tokens"], 3),
                    "better": "lower",
                    "note": f"default profile core: {after['tools']} tools (before {was['tools']}); "
                    f"{after['undescribed_properties']} of {after['properties']} properties undescribed "
                    f"(before {was['undescribed_properties']} of {was['properties']})",
                }
            )
    for tool, measured in now["results"].items():
        if "text" in measured:
            rows.append(
                {
                    "section": section,
                    "metric": f"{tool} result for the model (WordPiece tokens)",
                    "ours": measured["text"]["tokens"],
                    "peer_name": "JSON text block",
                    "peer": measured["json"]["tokens"],
                    "ratio": round(measured["text"]["tokens"] / measured["json"]["tokens"], 3),
                    "better": "lower",
                    "note": "same result, same run; the full model still goes as structuredContent",
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--record-before", action="store_true", help="store this run's figures as the 'before' baseline"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="simone-tool-surface-") as tmp:
        now = anyio.run(measure, Path(tmp) / "data")
    path = RESULTS / f"{NAME}.json"
    previous = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    command = " ".join(
        ["python", "benchmarks/tool_surface.py", *(argv if argv is not None else sys.argv[1:])]
    )
    before: dict[str, Any] | None
    if args.record_before:
        before = {**now, "commit": _git_commit(), "command": command}
    else:
        before = previous.get("before")
    lines = report(now, None if args.record_before else before)
    print(f"tokenizer: {TOKENIZER_NAME}; chars/4 beside it (simone's estimator)")
    if before and not args.record_before:
        print(f"before: recorded at commit {before['commit'][:12]} by `{before['command']}`")
    print("\n".join(lines))
    print()
    print("\n".join(profile_table(now)))
    payload = {
        "tokenizer": TOKENIZER_NAME,
        "command": command,
        "commit": _git_commit(),
        "before": before,
        "after": now,
        "summary": summary(now, before) if not args.record_before else [],
    }
    print(f"wrote {save(NAME, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
