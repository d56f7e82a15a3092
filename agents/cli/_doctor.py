"""``simone doctor`` — the document index's collections, their spaces, pending rows and the chain's health.

Each configured embedder is probed once (a one-line text, bounded by the embedding timeout) so the
report says which spaces can be embedded right now; each collection says whether an embedder of its
own space is configured and answering. ``--json`` prints the same as JSON. ``--languages`` adds how
well each space matches a question across languages (see :mod:`simone.agents.cli._doctor_languages`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from simone.agents.cli._doctor_languages import check_languages, render_languages
from simone.agents.cli._render import make_console
from simone.agents.cli._settings import settings_from_args
from simone.agents.serve import readiness
from simone.providers.documents import (
    DocumentStore,
    IndexLocation,
    count_duplicates,
    index_backend_status,
    relevance_report,
)
from simone.providers.embeddings import EmbeddingCache, OnnxMiniLMEmbedder, build_chain
from simone.providers.memory import memory_backend_status
from simone.runtime import (
    EmbeddingChain,
    InvalidResponse,
    ProviderError,
    Settings,
    exposure,
    research_cache_health,
)

PROBE_TEXT = "simone doctor probe"


def register(subparsers: Any) -> None:
    """Add the ``doctor`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor", help="show the index's collections, spaces, pending rows and the embedding chain's health"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--languages",
        action="store_true",
        help="also check how well each embedding space matches a question across languages",
    )
    parser.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Gather the report and print it; exit 1 when it found a problem (e.g. a space no embedder answers)."""
    settings = settings_from_args(args)
    report = await gather(settings, languages=args.languages)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    else:
        render(report, make_console())
    return 0 if report["ok"] else 1


async def probe(chain: EmbeddingChain, timeout_s: float) -> list[dict[str, Any]]:
    """Embed one short text with each embedder of the chain, then each extra; record latency or the error."""
    results: list[dict[str, Any]] = []
    members = [(e, "chain") for e in chain.embedders] + [(e, "extra") for e in chain.extras]
    for position, (embedder, role) in enumerate(members, start=1):
        started = time.perf_counter()
        entry: dict[str, Any] = {
            "position": position,
            "space": embedder.space.key,
            "type": type(embedder).__name__,
            "role": role,
        }
        try:
            with anyio.fail_after(timeout_s):
                vectors = await embedder.embed([PROBE_TEXT], kind="query")
            if getattr(vectors, "shape", None) != (1, embedder.space.dimension):
                raise InvalidResponse(f"answered shape {getattr(vectors, 'shape', None)}")
            entry.update(ok=True, ms=round((time.perf_counter() - started) * 1000, 1))
            if isinstance(embedder, OnnxMiniLMEmbedder):  # the bundled model: where it runs, GPU or CPU
                execution = embedder.execution_note
                if execution is not None:
                    entry["execution"] = execution
        except TimeoutError:
            entry.update(ok=False, error=f"timeout: no answer within {timeout_s:g} s")
        except ProviderError as exc:
            entry.update(ok=False, error=f"{exc.kind}: {exc.message}")
        except Exception as exc:  # noqa: BLE001 - a doctor reports every failure instead of crashing
            entry.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        results.append(entry)
    return results


def probe_health(embedders: list[dict[str, Any]]) -> dict[str, Any]:
    """The chain's health as this run's probes found it: which embedder a search would use now.

    ``healthy``: the chain's first embedder answered; ``degraded``: searches fall back to a later one;
    ``down``: none answered (semantic search is unavailable, lexical still works). The chain's own
    health window counts the fallbacks of one process's searches and starts empty in every process,
    so the doctor (a fresh process) reports its probes instead of a window that is always empty.
    """
    chain = [e for e in embedders if e.get("role") == "chain"]
    serving = next((e for e in chain if e["ok"]), None)
    if serving is None:
        status = "down"
        summary = "no embedder of the chain answered the probe: semantic search is unavailable"
    elif serving is chain[0]:
        status, summary = "healthy", f"the first embedder ({serving['space']}) answered the probe"
    else:
        status = "degraded"
        summary = (
            f"the first embedder ({chain[0]['space']}) did not answer; searches fall back to "
            f"{serving['space']}"
        )
    return {
        "status": status,
        "degraded": status != "healthy",
        "serving": serving["space"] if serving is not None else None,
        "summary": summary,
        "basis": "this doctor run's probe of each embedder",
    }


async def gather(settings: Settings, *, languages: bool = False) -> dict[str, Any]:
    """The doctor's report as a JSON-ready dict (with a ``languages`` section when asked)."""
    data_dir = Path(settings.data_dir)
    location = IndexLocation.from_settings(settings)
    report: dict[str, Any] = {"data_dir": str(data_dir), "index": location.uri, "collections": []}
    report["exposed"] = await anyio.to_thread.run_sync(exposed_paths, settings)
    async with build_chain(settings.embeddings, data_dir=settings.data_dir) as chain:
        embedders = await probe(chain, settings.embeddings.timeout_s)
        report["embedders"] = embedders
        report["health"] = probe_health(embedders)
        answering = {e["space"] for e in embedders if e["ok"]}
        configured = {e["space"] for e in embedders}
        ok = report["health"]["status"] != "down"
        if location.remote or await anyio.Path(location.uri).exists():
            async with DocumentStore.at(location) as store:
                for name in await store.collection_names():
                    entry: dict[str, Any] = {"name": name}
                    try:
                        collection = await store.open_collection(name)
                        assert collection is not None
                        info = await collection.info()
                        duplicates = await count_duplicates(collection)
                    except ProviderError as exc:
                        entry.update(error=f"{exc.kind}: {exc.message}")
                        ok = False
                        report["collections"].append(entry)
                        continue
                    space = info.space.key
                    entry.update(
                        space=space,
                        normalized=info.space.normalized,
                        rows=info.rows,
                        files=info.files,
                        pending=info.pending,
                        indexes=list(info.indexes),
                        space_configured=space in configured,
                        space_answering=space in answering,
                        duplicates=duplicates,
                        relevance=relevance_report(collection, settings.index),
                    )
                    if duplicates:
                        ok = False
                        entry["repair"] = (
                            f"{duplicates:,} chunk(s) are stored twice (two indexers ran at once): lexical "
                            "results may repeat. Run 'simone index PATH' again to repair them"
                        )
                    if space not in answering:
                        ok = False
                        entry["advice"] = (
                            f"no embedder of {space} answers: semantic search is unavailable for this "
                            "collection (lexical still works) and new rows wait as pending. "
                            + (
                                "Start that embedder again, then run 'simone index --embed-pending'."
                                if space in configured
                                else "Configure that model again, or re-index into a new collection."
                            )
                        )
                    elif info.pending:
                        entry["advice"] = "run 'simone index --embed-pending' to embed the pending rows"
                    report["collections"].append(entry)
        if languages:
            report["languages"] = await check_languages(chain, settings.embeddings.timeout_s)
        if settings.embeddings.cache:
            cache_path = data_dir / "embedding-cache.sqlite3"
            if await anyio.Path(cache_path).exists():
                async with EmbeddingCache(cache_path) as cache:
                    report["embedding_cache"] = {"path": str(cache_path), "vectors": await cache.count()}
    report["backends"] = await backends(settings)
    verdict = readiness(report["backends"])  # the research cache is optional: down, it degrades
    report["ok"] = ok and verdict["ready"]
    report["degraded_backends"] = verdict["degraded"]
    return report


def exposed_paths(settings: Settings) -> list[dict[str, str]]:
    """The data folder and the local stores in it that users other than their owner can reach.

    Each entry names the path, why (its mode) and the command that fixes it. simone creates them
    owner-only (``0700`` folders, ``0600`` files); one made by an older version or by hand may not be.
    """
    data_dir = Path(settings.data_dir)
    location = IndexLocation.from_settings(settings)
    candidates = [data_dir]
    if not location.remote:
        candidates.append(Path(location.uri))
    if settings.memory.url is None:
        candidates.append(Path(settings.memory.path or data_dir / "memory.sqlite3"))
    if settings.web.cache_url is None:
        candidates.append(Path(settings.web.cache_dir or data_dir / "web-cache"))
    out: list[dict[str, str]] = []
    for path in dict.fromkeys(candidates):
        why = exposure(path)
        if why is not None:
            fix = f"chmod -R go-rwx {shlex.quote(str(path))}"
            out.append({"path": str(path), "why": why, "fix": fix})
    return out


def render_relevance(relevance: dict[str, Any], console: Console) -> None:
    """The relevance rule a collection's semantic leg uses, and whether it was calibrated for its space."""
    values = (
        f"margin {relevance['margin']:.4f} · band {relevance['band']:.3f} · floor {relevance['floor']:.2f}"
    )
    source = relevance["source"]
    if source == "fitted":
        fit = relevance["fitted"]
        when = datetime.fromtimestamp(fit["fitted_at"], tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        console.print(
            f"  relevance rule: {values} — calibrated for this space {when} on {fit['questions']} questions "
            f"from its chunks (own chunk kept {fit['answered']:.0%}, {fit['absent']} absent topics left empty "
            f"{fit['absent_empty']:.0%})"
        )
    elif source == "settings":
        console.print(f"  relevance rule: {values} — set in [index] (relevance_margin/relevance_band)")
    elif source == "shipped":
        console.print(f"  relevance rule: {values} — shipped values for this model")
    else:
        console.print(f"  [yellow]relevance rule: {values} — not calibrated for this space[/]")
        console.print(f"  [yellow]{escape(relevance['advice'])}[/]")
    vote = relevance.get("vote")
    if vote:
        where = {
            "shipped": "shipped for this model",
            "fitted": "fitted for this space",
            "shifted": "fitted for this space, shifted onto the lexical leg's footing",
            "default": "the default curve (calibrate to fit one)",
        }[vote["source"]]
        console.print(
            f"  fusion vote: log-odds {vote['intercept']:+.2f} + {vote['slope']:.2f} × margin — {where}"
        )


async def backends(settings: Settings) -> dict[str, dict[str, Any]]:
    """Each store the configuration names: index, memory and research cache.

    Each with its address (never a secret), its schema or format version and whether it answers now.
    """
    timeout_s = settings.embeddings.timeout_s
    out: dict[str, dict[str, Any]] = {
        "index": await index_backend_status(settings, timeout_s=timeout_s),
        "memory": await memory_backend_status(settings, timeout_s=timeout_s),
    }
    web = settings.web
    directory = Path(web.cache_dir or settings.data_dir / "web-cache")
    if web.cache_url is None and not await anyio.Path(directory).exists():
        out["research_cache"] = {
            "backend": "diskcache",
            "address": str(directory),
            "answers": True,
            "note": "no research cache yet: created by the first research run",
        }
    else:
        password = web.cache_password.get_secret_value() if web.cache_password is not None else None
        health = await research_cache_health(directory, url=web.cache_url, password=password)
        out["research_cache"] = {
            "backend": health.backend,
            "address": health.address,
            "answers": health.answers,
            "format_version": health.format_version,
            **({"detail": health.detail} if health.detail else {}),
        }
    return out


def render(report: dict[str, Any], console: Console) -> None:
    """The report for a terminal."""
    console.print(f"data dir: {escape(report['data_dir'])}")
    for entry in report.get("exposed", []):
        console.print(
            f"[yellow]warning: {escape(entry['path'])} is readable by other users ({escape(entry['why'])}); "
            f"it holds memory, documents or caches. Fix: {escape(entry['fix'])}[/]"
        )
    chain = Table(title="embedding chain (in order; extra spaces last)")
    for column in ("#", "space", "embedder", "status"):
        chain.add_column(column)
    for entry in report["embedders"]:
        status = f"[green]ok[/] {entry['ms']} ms" if entry["ok"] else f"[red]{escape(entry['error'])}[/]"
        position = str(entry["position"]) + (" (extra)" if entry.get("role") == "extra" else "")
        chain.add_row(position, escape(entry["space"]), entry["type"], status)
    console.print(chain)
    for entry in report["embedders"]:
        if "execution" in entry:
            console.print(f"{escape(entry['space'])} runs on {escape(entry['execution'])}")
    health = report["health"]
    flags = {"healthy": "[green]healthy[/]", "degraded": "[yellow]degraded[/]", "down": "[red]down[/]"}
    flag = flags[health["status"]]
    console.print(f"embedding chain: {flag} — {escape(health['summary'])}")
    if not report["collections"]:
        console.print("no collections yet: run 'simone index PATH'")
    for entry in report["collections"]:
        if "error" in entry:
            console.print(f"[red]collection {escape(entry['name'])}: {escape(entry['error'])}[/]")
            continue
        console.print(
            f"collection [bold]{escape(entry['name'])}[/]: space {escape(entry['space'])} · "
            f"{entry['files']:,} file(s) · {entry['rows']:,} chunk(s) · {entry['pending']:,} pending · "
            f"indexes {', '.join(entry['indexes']) or 'none'}"
        )
        if "relevance" in entry:
            render_relevance(entry["relevance"], console)
        if "advice" in entry:
            console.print(f"  [yellow]{escape(entry['advice'])}[/]")
        if "repair" in entry:
            console.print(f"  [red]{escape(entry['repair'])}[/]")
    for role, entry in report.get("backends", {}).items():
        state = (
            "[green]answers[/]"
            if entry["answers"]
            else f"[red]does not answer: {escape(entry.get('error', entry.get('detail', '')))}[/]"
        )
        if role in report.get("degraded_backends", ()):
            state += " [yellow](degraded: optional, retrieval does not need it)[/]"
        version = entry.get("schema_version", entry.get("format_version"))
        extra = f" · schema {version}" if version is not None else ""
        note = f" · {escape(entry['note'])}" if "note" in entry else ""
        where = escape(str(entry.get("address", entry.get("uri", ""))))
        console.print(f"{role.replace('_', ' ')}: {entry['backend']} {where}{extra} · {state}{note}")
    if "embedding_cache" in report:
        cache = report["embedding_cache"]
        console.print(f"embedding cache: {cache['vectors']:,} vector(s) in {escape(cache['path'])}")
    if "languages" in report:
        render_languages(report["languages"], console)
