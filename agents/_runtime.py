"""The developer's facade: :class:`Runtime`, opened from config as an async context manager.

::

    async with Runtime.open(load_settings()) as runtime:
        context = runtime.admit({"actor": "alice", "project": "docs"})
        answer = await runtime.ask(context, "How does simone fuse rankings?")
        print(answer.render())

It opens, in one loop, every provider factory the settings enable (:data:`~simone.runtime.PROVIDER_FACTORIES`:
the built-in packages' factories, which :func:`~simone.providers.discover_provider_packages` registers
— the document index, memory and, with a search backend, the web — and any registered provider of your
own), registers their providers with one router and their tools with one registry, keeps what they
publish in :attr:`Runtime.published` (typed keys), and serves ``admit``, ``retrieve``, ``research`` and
``ask``. Every part can be swapped: pass your own providers, factories, policy, chat model or research
runner.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import BaseModel
from simone.agents._admission import Event, admit
from simone.agents._budget import Budget
from simone.agents._builtin import builtin_tools
from simone.agents._chat import ChatModel
from simone.agents._loop import LoopLimits
from simone.agents._openai_chat import OpenAIChatModel
from simone.agents._orchestrator import Orchestrator
from simone.agents._research import research_runner
from simone.agents._session import ResearchRunner, Session, child_budget, research_result
from simone.agents._synthesis import Answer, ExtractiveModel
from simone.agents._tools import (
    ORCHESTRATOR,
    RESEARCHER,
    AgentProfile,
    Tool,
    ToolContext,
    ToolHandler,
    ToolRegistry,
)
from simone.providers import discover_provider_packages
from simone.runtime import (
    EMBEDDING_CHAIN,
    PROVIDER_FACTORIES,
    RERANKER,
    Caller,
    ConfigError,
    Depth,
    InvalidRequest,
    Prepare,
    Provider,
    ProviderNotConfigured,
    ProviderRegistry,
    ProviderSetup,
    Published,
    RerankOptions,
    RetrievalResult,
    Router,
    Settings,
    TrustedContext,
    load_settings,
)
from simone.runtime.text import Analyzer
from simone.workflows.research import WebResearchResult, depth_of
from simone.workflows.retrieval import SelectionPolicy, retrieve

if TYPE_CHECKING:
    from simone.providers.memory import RuntimeMemoryStore


def bundled_docs() -> Path | None:
    """The handbook of simone (``simone.agents.handbook``, shipped in the wheel): the sample documents."""
    here = Path(__file__).resolve().parent / "handbook"
    return here if here.is_dir() and any(here.glob("*.md")) else None


def _prepared_first(registry: ToolRegistry, prepare: Sequence[Prepare]) -> ToolRegistry:
    """``registry``'s tools, each awaiting the factories' ``prepare`` hooks before it runs.

    The hooks run outside the router's per-provider deadline, so a first call that has to open a lazily
    opened index (LanceDB and the model) waits for it instead of recording the provider as timed out.
    A hook reports its own failures through its provider (the documents one swallows its open error,
    which the provider raises again as its failure).
    """

    def opening(handler: ToolHandler[Any]) -> ToolHandler[Any]:
        async def run(tool_context: ToolContext, args: Any) -> BaseModel:
            for hook in prepare:
                await hook()
            return await handler(tool_context, args)

        return run

    opened = ToolRegistry()
    opened.extend(
        replace(tool, handler=opening(tool.handler)) for tool in map(registry.get, registry.names())
    )
    return opened


@dataclass
class _Opened:
    """What the factories opened, gathered for the router and the tool registry."""

    providers: list[Provider] = field(default_factory=list)
    tools: list[Tool[Any]] = field(default_factory=list)
    prepare: list[Prepare] = field(default_factory=list)
    rules: list[Mapping[str, Any]] = field(default_factory=list)


class Runtime:
    """simone's runtime: router, tools, sessions and the orchestrator, over configured stores.

    Construction is cheap; ``async with`` opens the stores. Use :meth:`open` for the usual set-up.

    Args:
        settings: the configuration (``load_settings()`` when omitted).
        providers: extra providers of your own (registered with the router next to the built-ins).
        documents: ``False`` skips the ``index`` section's factory (the document index).
        memory: ``False`` skips the ``memory`` section's factory.
        web: ``False`` skips the ``web`` section's factory (it opens only when a search backend is
            configured and no ``research`` runner is given).
        skip: further settings sections whose factories are not opened.
        research: a research runner to use instead of the one built from the settings.
        factories: the provider factories to open (default :data:`~simone.runtime.PROVIDER_FACTORIES`:
            the built-ins and every registered one), each when its settings section enables it.
        provider_options: per settings section, options for its factory (``ProviderSetup.options``).
        model: a chat model (default: from ``agents.chat_*`` settings, else the extractive model).
        policy: the provider-selection policy (default: DESIGN.md's rules).
        http_client: the ``httpx.AsyncClient`` for the chat model (one is opened otherwise).
        web_options: passed to :func:`~simone.providers.web.open_web` (``transport``, ``resolver``,
            ``clock``, ``cache_dir``), e.g. to reach a loopback web in tests (the ``web`` factory's
            ``provider_options``).
        remember_turns: in a conversation, ``ask`` appends the user's question to session memory (the
            answers are not stored, so simone never cites itself).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        providers: Sequence[Provider] = (),
        documents: bool = True,
        memory: bool = True,
        web: bool = True,
        research: ResearchRunner | None = None,
        model: ChatModel | None = None,
        policy: SelectionPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        web_options: Mapping[str, Any] | None = None,
        remember_turns: bool = True,
        factories: ProviderRegistry | None = None,
        skip: Collection[str] = (),
        provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.settings = settings if settings is not None else load_settings()
        self._extra = list(providers)
        self._want_documents = documents
        self._want_memory = memory
        self._want_web = web
        self._skip = frozenset(skip)
        self.research_runner: ResearchRunner | None = research
        self.model = model
        self.policy = policy
        self._http = http_client
        self._factories = factories
        self._options: dict[str, Mapping[str, Any]] = dict(provider_options or {})
        if web_options:
            self._options["web"] = {**self._options.get("web", {}), **web_options}
        self.remember_turns = remember_turns
        self._stack: AsyncExitStack | None = None
        self.published = Published()
        self.router: Router | None = None
        self.registry = ToolRegistry()
        self.orchestrator: Orchestrator | None = None

    @classmethod
    def open(cls, settings: Settings | None = None, **options: Any) -> Runtime:
        """A runtime for ``settings``; use it as ``async with Runtime.open(settings) as runtime:``."""
        return cls(settings, **options)

    async def __aenter__(self) -> Runtime:
        async with AsyncExitStack() as stack:
            await self._start(stack)
            self._stack = stack.pop_all()  # only a complete start-up survives the block
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    def _skipped(self) -> set[str]:
        """The sections not to open: ``skip``, and those the constructor's shorthand flags turn off."""
        skipped = set(self._skip)
        if not self._want_documents:
            skipped.add("index")
        if not self._want_memory:
            skipped.add("memory")
        if not self._want_web or self.research_runner is not None:
            skipped.add("web")
        return skipped

    async def _start(self, stack: AsyncExitStack) -> None:
        settings = self.settings
        opened = await self._open_factories(stack)
        if self.research_runner is None:
            self.research_runner = research_runner(self.published, settings.web)
        if self.model is None:
            self.model = await self._chat_model(stack)
        router_settings = settings.router
        self.router = Router(
            [*opened.providers, *self._extra],
            rrf_k=router_settings.rrf_k,
            weights=router_settings.weights,
            provider_timeout_s=router_settings.provider_timeout_s,
            max_query_chars=router_settings.max_query_chars,
            min_truncation_tokens=router_settings.min_truncation_tokens,
            reranker=self.published.get(RERANKER),
            rerank=RerankOptions.from_settings(settings.rerank),
        )
        rules = [*settings.agents.selection_rules, *opened.rules]
        if self.policy is None and (rules or not settings.agents.selection_defaults):
            self.policy = SelectionPolicy.from_data(
                rules, include_defaults=settings.agents.selection_defaults
            )
        self.registry = ToolRegistry()
        self.registry.extend(
            builtin_tools(
                self.router,
                policy=self.policy,
                research=self.research_runner,
                max_query_chars=router_settings.max_query_chars,
                child_wall_s=settings.agents.child_wall_s,
            )
        )
        self.registry.extend(opened.tools)
        if opened.prepare:
            self.registry = _prepared_first(self.registry, opened.prepare)
        self.orchestrator = Orchestrator(
            model=self.model,
            extractive=ExtractiveModel(
                Analyzer.from_settings(settings.lexical), embeddings=self.published.get(EMBEDDING_CHAIN)
            ),
            policy=self.policy,
            fallback_to_extractive=settings.agents.fallback_to_extractive,
            limits=LoopLimits(max_steps=settings.agents.max_steps, max_tokens=settings.agents.max_tokens),
            min_coverage=settings.agents.min_coverage,
            confidence_floor=settings.web.confidence_floor,
            depth=settings.agents.research_depth,
        )

    async def _open_factories(self, stack: AsyncExitStack) -> _Opened:
        """Open every factory the settings enable, in the registry's order; keep what they publish."""
        if self._factories is None:
            discover_provider_packages()
        registry = self._factories if self._factories is not None else PROVIDER_FACTORIES
        skipped = self._skipped()
        self.published = Published()
        opened = _Opened()
        for factory in registry.ordered():
            if factory.section in skipped or not factory.wanted(self.settings):
                continue
            setup = ProviderSetup(
                settings=self.settings,
                section=factory.section_of(self.settings),
                stack=stack,
                options=self._options.get(factory.section, {}),
                published=self.published.copy(),
            )
            result = await factory.open(setup)
            for key, value in result.published.items():
                if key not in factory.publishes:
                    raise ConfigError(
                        f"the {factory.section!r} provider factory published {key.name!r}, which its "
                        "publishes= does not declare"
                    )
                self.published.put(key, value)
            opened.providers += result.providers
            opened.tools += [Tool.of(tool) for tool in result.tools]
            opened.prepare += result.prepare
            opened.rules += factory.rules
        return opened

    async def _chat_model(self, stack: AsyncExitStack) -> ChatModel | None:
        """The chat model the ``agents.chat_*`` settings name, or ``None`` (the extractive model answers)."""
        agents = self.settings.agents
        if not (agents.chat_base_url and agents.chat_model):
            return None
        client = self._http
        if client is None:
            client = await stack.enter_async_context(httpx.AsyncClient())
        api_key = agents.chat_api_key
        return OpenAIChatModel(
            client,
            base_url=agents.chat_base_url,
            model=agents.chat_model,
            api_key=api_key.get_secret_value() if api_key is not None else None,
            timeout_s=agents.chat_timeout_s,
            max_retries=agents.chat_max_retries,
        )

    # -- the public face ------------------------------------------------------------------------
    def _ready(self) -> tuple[Router, Orchestrator]:
        if self.router is None or self.orchestrator is None:
            raise ConfigError("the runtime is not open: use 'async with Runtime.open(settings) as runtime:'")
        return self.router, self.orchestrator

    @property
    def memory(self) -> RuntimeMemoryStore:
        """The open memory store: notes, todos, checklists, facts, task states and session turns.

        ``await runtime.memory.create(context, NoteCreate(title=...))``, ``search_records``,
        ``complete``, ``list_records``… (:class:`~simone.providers.memory.MemoryStore`), each under the
        trusted context it is given. The same store the memory tools and providers use.

        Raises:
            ConfigError: the runtime is not open.
            ProviderNotConfigured: memory was not opened (``memory=False``, ``skip={"memory"}``, or
                ``factories=`` without memory's), so there is no store to hand out.
        """
        from simone.providers.memory import MEMORY_STORE

        self._ready()
        store = self.published.get(MEMORY_STORE)
        if store is None:
            raise ProviderNotConfigured(
                "memory is not open in this runtime — open it without memory=False or skip={'memory'} "
                "(and with memory's factory when you pass factories=)",
                provider="memory",
            )
        return store

    def admit(
        self,
        event: Event | Mapping[str, Any],
        *,
        caller: Caller = Caller.ORCHESTRATOR,
        token_budget: int | None = None,
        timeout_s: float | None = None,
    ) -> TrustedContext:
        """Admit ``event`` into a trusted context (an event without an actor is refused)."""
        return admit(
            event,
            caller=caller,
            token_budget=token_budget or self.settings.router.default_max_tokens,
            timeout_s=timeout_s if timeout_s is not None else self.settings.agents.session_wall_s,
        )

    def session_budget(self) -> Budget:
        """A top-level session's budget from the settings."""
        agents, web = self.settings.agents, self.settings.web
        return Budget(
            tokens=agents.session_tokens,
            queries=web.max_queries,
            fetches=web.max_fetches,
            wall_s=agents.session_wall_s,
            max_children=agents.max_children,
        )

    def session(
        self, context: TrustedContext, *, profile: AgentProfile | None = None, budget: Budget | None = None
    ) -> Session:
        """A session for ``context`` (profile by its caller: orchestrator or researcher)."""
        self._ready()
        if profile is None:
            if context.caller is Caller.ORCHESTRATOR:
                profile = ORCHESTRATOR
            elif context.caller is Caller.RESEARCHER:
                profile = RESEARCHER
            else:
                raise InvalidRequest(f"no agent profile for the caller {context.caller.value}; pass one")
        return Session(
            profile=profile,
            context=context,
            registry=self.registry,
            budget=budget or self.session_budget(),
            research=self.research_runner,
        )

    async def retrieve(self, context: TrustedContext, query: str, **fields: Any) -> RetrievalResult:
        """Routed retrieval for ``context`` (selection policy, then the router).

        ``fields`` are :class:`~simone.runtime.RetrievalRequest` fields (``limit``, ``max_tokens``,
        ``providers``, ``mode``, ``filters``…).
        """
        router, _ = self._ready()
        return await retrieve(router, router.request(query, **fields), context, policy=self.policy)

    async def research(
        self, context: TrustedContext, question: str, *, depth: Depth | str | None = None
    ) -> WebResearchResult:
        """Bounded web research: from an orchestrator context it runs in a researcher child session.

        Returns the structured :class:`~simone.workflows.research.WebResearchResult`.

        Raises:
            InvalidRequest: ``depth`` is not a depth's name.
            ProviderNotConfigured: no search backend is configured.
        """
        self._ready()
        chosen = depth_of(depth or self.settings.agents.research_depth)
        session = self.session(context)
        if context.caller is Caller.ORCHESTRATOR:
            budget = child_budget(chosen, wall_s=self.settings.agents.child_wall_s)
            return await session.delegate(question, depth=chosen, budget=budget)
        return research_result(await session.call("web_research", {"question": question, "depth": chosen}))

    async def ask(
        self, context: TrustedContext | Event | Mapping[str, Any], question: str | None = None
    ) -> Answer:
        """Answer a question with citations (an event's text is the question when none is given)."""
        _, orchestrator = self._ready()
        if not isinstance(context, TrustedContext):
            text = context.text if isinstance(context, Event) else str(context.get("text") or "")
            question = question or text
            context = self.admit(context)
        if not question or not question.strip():
            raise InvalidRequest("the question is empty; ask something")
        answer = await orchestrator.answer(self.session(context), question)
        from simone.providers.memory import MEMORY_STORE, TurnRole

        turns = self.published.get(MEMORY_STORE)
        if context.conversation is not None and turns is not None and self.remember_turns:
            # only what the user said: an answer stored as evidence would let simone cite itself later
            await turns.append_turn(context, TurnRole.USER, question)
        return answer
