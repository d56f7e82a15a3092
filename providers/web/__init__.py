"""simone.providers.web — web search for the researcher: backends, the safe fetcher, extraction, the provider.

* Search backends behind one protocol (:class:`SearchBackend`): :class:`SearxngBackend`,
  :class:`BraveBackend`, :class:`TavilyBackend`.
* :class:`SafeFetcher` under a :class:`FetchPolicy`: SSRF guard on the resolved address and every
  redirect, byte cap, content types, robots.txt, deadlines, a concurrency limit.
* :func:`extract_page` (trafilatura, hidden elements dropped) and :func:`select_passages` (BM25 over
  the shared lexical analysis).
* :class:`WebSearcher` (cached search with fallback, cached fetch + extraction) and the
  caller-restricted :class:`WebSearchProvider`; :func:`open_web` builds all of it from the settings.
* :func:`fetch_pages` and :func:`gather_passages`: the passage gathering the provider and the
  web-research workflow share (pages fetched within the deadline, passages ranked per source).
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.providers.web._backends import (
        BraveBackend as BraveBackend,
        SearchBackend as SearchBackend,
        SearxngBackend as SearxngBackend,
        TavilyBackend as TavilyBackend,
        parse_retry_after as parse_retry_after,
        truncate_query as truncate_query,
    )
    from simone.providers.web._extract import (
        MemoAnalyzer as MemoAnalyzer,
        Passage as Passage,
        clear_analysis_memos as clear_analysis_memos,
        extract_page as extract_page,
        memo_analyzer as memo_analyzer,
        rank_passages as rank_passages,
        select_passages as select_passages,
        split_passages as split_passages,
    )
    from simone.providers.web._factory import (
        WEB_STACK as WEB_STACK,
        open_web_search as open_web_search,
        web_configured as web_configured,
    )
    from simone.providers.web._fetcher import (
        FetchPolicy as FetchPolicy,
        FetchStats as FetchStats,
        Resolver as Resolver,
        SafeFetcher as SafeFetcher,
        address_problem as address_problem,
        check_url as check_url,
        decode_body as decode_body,
        system_resolver as system_resolver,
    )
    from simone.providers.web._gather import (
        Gathered as Gathered,
        PassageSource as PassageSource,
        fetch_page as fetch_page,
        fetch_pages as fetch_pages,
        fetch_status as fetch_status,
        finish_reserve as finish_reserve,
        gather_passages as gather_passages,
        page_failure as page_failure,
        source_metadata as source_metadata,
    )
    from simone.providers.web._provider import (
        WEB_CALLERS as WEB_CALLERS,
        WebSearchProvider as WebSearchProvider,
        check_web_caller as check_web_caller,
        error_from_failures as error_from_failures,
        web_evidence as web_evidence,
        with_instruction_flags as with_instruction_flags,
    )
    from simone.providers.web._searcher import (
        PageOutcome as PageOutcome,
        SearchOutcome as SearchOutcome,
        WebSearcher as WebSearcher,
    )
    from simone.providers.web._stack import (
        WebStack as WebStack,
        backends_from_settings as backends_from_settings,
        open_web as open_web,
    )
    from simone.providers.web._types import (
        ExtractedPage as ExtractedPage,
        FetchedPage as FetchedPage,
        FetchError as FetchError,
        FetchReason as FetchReason,
        SearchHit as SearchHit,
        SearchPage as SearchPage,
    )

__all__ = (
    "BraveBackend",
    "ExtractedPage",
    "FetchError",
    "FetchPolicy",
    "FetchReason",
    "FetchStats",
    "FetchedPage",
    "Gathered",
    "MemoAnalyzer",
    "PageOutcome",
    "Passage",
    "PassageSource",
    "Resolver",
    "SafeFetcher",
    "SearchBackend",
    "SearchHit",
    "SearchOutcome",
    "SearchPage",
    "SearxngBackend",
    "TavilyBackend",
    "WEB_CALLERS",
    "WEB_STACK",
    "WebSearchProvider",
    "WebSearcher",
    "WebStack",
    "address_problem",
    "backends_from_settings",
    "check_url",
    "check_web_caller",
    "clear_analysis_memos",
    "decode_body",
    "error_from_failures",
    "extract_page",
    "fetch_page",
    "fetch_pages",
    "fetch_status",
    "finish_reserve",
    "gather_passages",
    "memo_analyzer",
    "open_web",
    "open_web_search",
    "page_failure",
    "parse_retry_after",
    "rank_passages",
    "select_passages",
    "source_metadata",
    "split_passages",
    "system_resolver",
    "truncate_query",
    "web_configured",
    "web_evidence",
    "with_instruction_flags",
)

_HOMES: dict[str, str] = {
    "WEB_STACK": "simone.providers.web._factory",
    "open_web_search": "simone.providers.web._factory",
    "web_configured": "simone.providers.web._factory",
    "BraveBackend": "simone.providers.web._backends",
    "ExtractedPage": "simone.providers.web._types",
    "FetchError": "simone.providers.web._types",
    "FetchPolicy": "simone.providers.web._fetcher",
    "FetchReason": "simone.providers.web._types",
    "FetchStats": "simone.providers.web._fetcher",
    "FetchedPage": "simone.providers.web._types",
    "Gathered": "simone.providers.web._gather",
    "MemoAnalyzer": "simone.providers.web._extract",
    "PageOutcome": "simone.providers.web._searcher",
    "Passage": "simone.providers.web._extract",
    "PassageSource": "simone.providers.web._gather",
    "Resolver": "simone.providers.web._fetcher",
    "SafeFetcher": "simone.providers.web._fetcher",
    "SearchBackend": "simone.providers.web._backends",
    "SearchHit": "simone.providers.web._types",
    "SearchOutcome": "simone.providers.web._searcher",
    "SearchPage": "simone.providers.web._types",
    "SearxngBackend": "simone.providers.web._backends",
    "TavilyBackend": "simone.providers.web._backends",
    "WEB_CALLERS": "simone.providers.web._provider",
    "WebSearchProvider": "simone.providers.web._provider",
    "WebSearcher": "simone.providers.web._searcher",
    "WebStack": "simone.providers.web._stack",
    "address_problem": "simone.providers.web._fetcher",
    "backends_from_settings": "simone.providers.web._stack",
    "check_url": "simone.providers.web._fetcher",
    "check_web_caller": "simone.providers.web._provider",
    "clear_analysis_memos": "simone.providers.web._extract",
    "decode_body": "simone.providers.web._fetcher",
    "error_from_failures": "simone.providers.web._provider",
    "extract_page": "simone.providers.web._extract",
    "fetch_page": "simone.providers.web._gather",
    "fetch_pages": "simone.providers.web._gather",
    "fetch_status": "simone.providers.web._gather",
    "finish_reserve": "simone.providers.web._gather",
    "gather_passages": "simone.providers.web._gather",
    "memo_analyzer": "simone.providers.web._extract",
    "open_web": "simone.providers.web._stack",
    "page_failure": "simone.providers.web._gather",
    "parse_retry_after": "simone.providers.web._backends",
    "rank_passages": "simone.providers.web._extract",
    "select_passages": "simone.providers.web._extract",
    "source_metadata": "simone.providers.web._gather",
    "split_passages": "simone.providers.web._extract",
    "system_resolver": "simone.providers.web._fetcher",
    "truncate_query": "simone.providers.web._backends",
    "web_evidence": "simone.providers.web._provider",
    "with_instruction_flags": "simone.providers.web._provider",
}
"""Where each exported name lives (imported on first use)."""

__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
