"""simone.agents — who asks and who decides: admission, profiles, tools, sessions, models, synthesis.

The developer's entry point is :class:`Runtime`::

    async with Runtime.open(load_settings()) as runtime:
        answer = await runtime.ask({"actor": "alice"}, "How does simone fuse rankings?")

Three sub-packages hold what is built on the core, each with its own face: :mod:`simone.agents.mcp`
(the tools over MCP: ``simone mcp``'s stdio server), :mod:`simone.agents.serve` (``simone serve``: HTTP,
the gate, tokens) and :mod:`simone.agents.cli` (the ``simone`` command); importing this package imports
none of them, nor the MCP SDK.

Importing the package is cheap: each name is imported from its module the first time it is used
(PEP 562), so ``simone --help`` (whose parser lives in ``simone.agents.cli``) pays for none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.agents._admission import (
        AdmissionRefused as AdmissionRefused,
        Event as Event,
        admit as admit,
        derive as derive,
    )
    from simone.agents._budget import (
        Budget as Budget,
        BudgetLedger as BudgetLedger,
        BudgetUse as BudgetUse,
    )
    from simone.agents._builtin import (
        ResearchArgs as ResearchArgs,
        RetrieveContextArgs as RetrieveContextArgs,
        RetrieveMemoryArgs as RetrieveMemoryArgs,
        builtin_tools as builtin_tools,
    )
    from simone.agents._chat import (
        ChatMessage as ChatMessage,
        ChatModel as ChatModel,
        ChatResponse as ChatResponse,
        ToolCall as ToolCall,
        ToolSpec as ToolSpec,
        Usage as Usage,
    )
    from simone.agents._evidence import (
        CONTAINMENT_NOTICE as CONTAINMENT_NOTICE,
        EvidenceLedger as EvidenceLedger,
        neutralise as neutralise,
        render_evidence as render_evidence,
    )
    from simone.agents._loop import (
        LoopLimits as LoopLimits,
        LoopOutcome as LoopOutcome,
        run_tool_loop as run_tool_loop,
    )
    from simone.agents._openai_chat import OpenAIChatModel as OpenAIChatModel
    from simone.agents._orchestrator import Orchestrator as Orchestrator
    from simone.agents._research import (
        WorkflowResearchRunner as WorkflowResearchRunner,
        research_runner as research_runner,
    )
    from simone.agents._runtime import Runtime as Runtime, bundled_docs as bundled_docs
    from simone.agents._session import (
        ChildGroup as ChildGroup,
        ChildHandle as ChildHandle,
        ResearchCaps as ResearchCaps,
        ResearchRunner as ResearchRunner,
        Session as Session,
        child_budget as child_budget,
    )
    from simone.agents._synthesis import (
        Answer as Answer,
        Citation as Citation,
        ExtractiveModel as ExtractiveModel,
        StepRecord as StepRecord,
        finalize as finalize,
    )
    from simone.agents._tool_text import render_tool_result as render_tool_result
    from simone.agents._tools import (
        ORCHESTRATOR as ORCHESTRATOR,
        RESEARCHER as RESEARCHER,
        AgentProfile as AgentProfile,
        Tool as Tool,
        ToolContext as ToolContext,
        ToolRegistry as ToolRegistry,
        UnknownTool as UnknownTool,
    )
    from simone.workflows.research import DEPTH_PRESETS as DEPTH_PRESETS, ResearchLimits as ResearchLimits

__all__ = (
    "AdmissionRefused",
    "AgentProfile",
    "Answer",
    "Budget",
    "BudgetLedger",
    "BudgetUse",
    "CONTAINMENT_NOTICE",
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "ChildGroup",
    "ChildHandle",
    "Citation",
    "DEPTH_PRESETS",
    "Event",
    "EvidenceLedger",
    "ExtractiveModel",
    "LoopLimits",
    "LoopOutcome",
    "ORCHESTRATOR",
    "OpenAIChatModel",
    "Orchestrator",
    "RESEARCHER",
    "ResearchArgs",
    "ResearchCaps",
    "ResearchLimits",
    "ResearchRunner",
    "RetrieveContextArgs",
    "RetrieveMemoryArgs",
    "Runtime",
    "Session",
    "StepRecord",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolRegistry",
    "ToolSpec",
    "UnknownTool",
    "Usage",
    "WorkflowResearchRunner",
    "admit",
    "builtin_tools",
    "bundled_docs",
    "child_budget",
    "derive",
    "finalize",
    "neutralise",
    "render_evidence",
    "render_tool_result",
    "research_runner",
    "run_tool_loop",
)


_HOMES: dict[str, str] = {
    "AdmissionRefused": "simone.agents._admission",
    "Event": "simone.agents._admission",
    "admit": "simone.agents._admission",
    "derive": "simone.agents._admission",
    "Budget": "simone.agents._budget",
    "BudgetLedger": "simone.agents._budget",
    "BudgetUse": "simone.agents._budget",
    "ResearchArgs": "simone.agents._builtin",
    "RetrieveContextArgs": "simone.agents._builtin",
    "RetrieveMemoryArgs": "simone.agents._builtin",
    "builtin_tools": "simone.agents._builtin",
    "ChatMessage": "simone.agents._chat",
    "ChatModel": "simone.agents._chat",
    "ChatResponse": "simone.agents._chat",
    "ToolCall": "simone.agents._chat",
    "ToolSpec": "simone.agents._chat",
    "Usage": "simone.agents._chat",
    "CONTAINMENT_NOTICE": "simone.agents._evidence",
    "EvidenceLedger": "simone.agents._evidence",
    "neutralise": "simone.agents._evidence",
    "render_evidence": "simone.agents._evidence",
    "LoopLimits": "simone.agents._loop",
    "LoopOutcome": "simone.agents._loop",
    "render_tool_result": "simone.agents._tool_text",
    "research_runner": "simone.agents._research",
    "run_tool_loop": "simone.agents._loop",
    "OpenAIChatModel": "simone.agents._openai_chat",
    "Orchestrator": "simone.agents._orchestrator",
    "WorkflowResearchRunner": "simone.agents._research",
    "Runtime": "simone.agents._runtime",
    "bundled_docs": "simone.agents._runtime",
    "ChildGroup": "simone.agents._session",
    "ChildHandle": "simone.agents._session",
    "ResearchCaps": "simone.agents._session",
    "ResearchRunner": "simone.agents._session",
    "Session": "simone.agents._session",
    "child_budget": "simone.agents._session",
    "Answer": "simone.agents._synthesis",
    "Citation": "simone.agents._synthesis",
    "ExtractiveModel": "simone.agents._synthesis",
    "StepRecord": "simone.agents._synthesis",
    "finalize": "simone.agents._synthesis",
    "ORCHESTRATOR": "simone.agents._tools",
    "RESEARCHER": "simone.agents._tools",
    "AgentProfile": "simone.agents._tools",
    "Tool": "simone.agents._tools",
    "ToolContext": "simone.agents._tools",
    "ToolRegistry": "simone.agents._tools",
    "UnknownTool": "simone.agents._tools",
    "DEPTH_PRESETS": "simone.workflows.research",
    "ResearchLimits": "simone.workflows.research",
}
"""Where each exported name lives (imported on first use by ``__getattr__``)."""

__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
