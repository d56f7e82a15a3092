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
    "page_failure",
    "parse_retry_after",
    "rank_passages",
    "select_passages",
    "source_metadata",
    "split_passages",
    "system_resolver",
    "truncate_query",
    "web_evidence",
    "with_instruction_flags",
)
