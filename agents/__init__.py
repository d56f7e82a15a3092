"""simone.agents — who asks and who decides: admission, profiles, tools, sessions, models, synthesis.

The developer's entry point is :class:`Runtime`::

    async with Runtime.open(load_settings()) as runtime:
        answer = await runtime.ask({"actor": "alice"}, "How does simone fuse rankings?")

The MCP server lives in ``simone.agents._mcp`` (``simone mcp``) so that importing this package does not
import the MCP SDK.
"""

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
    render_tool_result as render_tool_result,
    run_tool_loop as run_tool_loop,
)
from simone.agents._openai_chat import OpenAIChatModel as OpenAIChatModel
from simone.agents._orchestrator import Orchestrator as Orchestrator
from simone.agents._providers import BUILTIN_FACTORIES as BUILTIN_FACTORIES
from simone.agents._research import (
    WorkflowResearchRunner as WorkflowResearchRunner,
    open_web_research as open_web_research,
    web_configured as web_configured,
)
from simone.agents._runtime import (
    Runtime as Runtime,
    ToolData as ToolData,
    bundled_docs as bundled_docs,
    memory_tools as memory_tools,
)
from simone.agents._session import (
    ChildGroup as ChildGroup,
    ChildHandle as ChildHandle,
    ResearchCaps as ResearchCaps,
    ResearchRunner as ResearchRunner,
    ResearchSpend as ResearchSpend,
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
from simone.agents._tools import (
    ORCHESTRATOR as ORCHESTRATOR,
    RESEARCHER as RESEARCHER,
    AgentProfile as AgentProfile,
    Tool as Tool,
    ToolContext as ToolContext,
    ToolRegistry as ToolRegistry,
    UnknownTool as UnknownTool,
)
from simone.workflows.research import DEPTH_PRESETS as DEPTH_PRESETS

__all__ = (
    "AdmissionRefused",
    "AgentProfile",
    "Answer",
    "BUILTIN_FACTORIES",
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
    "ResearchRunner",
    "ResearchSpend",
    "RetrieveContextArgs",
    "RetrieveMemoryArgs",
    "Runtime",
    "Session",
    "StepRecord",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolData",
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
    "memory_tools",
    "neutralise",
    "open_web_research",
    "render_evidence",
    "render_tool_result",
    "run_tool_loop",
    "web_configured",
)
