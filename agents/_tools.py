"""Agent profiles and the tool registry: the first of two locks.

A :class:`Tool` is a plain async function ``handler(context, args)`` with a pydantic argument model.
An :class:`AgentProfile` lists the tools (and tool groups) a role may call. The
:class:`ToolRegistry` checks, on every call, in this order: the tool exists; the profile may call it
(else :class:`~simone.runtime.AccessDenied`); the session's context belongs to the profile's role; the
arguments are a JSON object carrying no scope of their own (else
:class:`~simone.runtime.ScopeViolation`); they validate against the model (else
:class:`~simone.runtime.InvalidRequest`). The context passed to the handler is always the session's —
never anything the model wrote. The providers then check the caller again: the second lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict
from simone.agents._admission import TRUST_FIELDS
from simone.agents._budget import BudgetLedger
from simone.agents._chat import ToolSpec
from simone.runtime import (
    SCOPE_KEYS,
    AccessDenied,
    Caller,
    ConfigError,
    InvalidRequest,
    InvalidResponse,
    ProviderTool,
    ScopeViolation,
    TrustedContext,
    parse_tool_arguments,
)

ArgsT = TypeVar("ArgsT", bound=BaseModel)

FORBIDDEN_ARGUMENT_KEYS = frozenset(SCOPE_KEYS) | TRUST_FIELDS
"""Keys that would carry a scope or a role; tool arguments never may, at any depth."""


class UnknownTool(InvalidRequest):
    """A tool name nobody registered (a model inventing tools gets this)."""


class AgentProfile(BaseModel):
    """A role an agent plays: its caller and the tools it may call.

    Attributes:
        name: the profile's name.
        caller: the caller its contexts are admitted under.
        tools: tool names it may call.
        groups: tool groups it may call (every tool registered in the group).
        description: what the role is for (shown to a chat model).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    caller: Caller
    tools: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    description: str = ""

    def may_call(self, tool: Tool[Any]) -> bool:
        """Whether this profile may call ``tool``."""
        return tool.name in self.tools or (tool.group is not None and tool.group in self.groups)


ORCHESTRATOR = AgentProfile(
    name="orchestrator",
    caller=Caller.ORCHESTRATOR,
    tools=frozenset({"retrieve_context", "retrieve_memory", "delegate_research"}),
    groups=frozenset({"memory"}),
    description=(
        "You answer the user's question from their memory and documents, and delegate questions that "
        "need current or source-backed web evidence to a researcher."
    ),
)
"""The orchestrator: memory and documents, the memory tools, and delegation — never the web itself."""

RESEARCHER = AgentProfile(
    name="researcher",
    caller=Caller.RESEARCHER,
    tools=frozenset({"web_research", "retrieve_context"}),
    description="You research a question on the web within a fixed budget and report cited evidence.",
)
"""The researcher: bounded web research, and the same routed retrieval."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool handler receives besides its arguments: the session's trusted context and ledger.

    Attributes:
        context: the admitted context of the calling session (never model output).
        ledger: the session's budget ledger; handlers clamp their work to it.
        session: the calling session (for tools that spawn children, such as delegate_research).
    """

    context: TrustedContext
    ledger: BudgetLedger | None = None
    session: Any = None


ToolHandler = Callable[[ToolContext, ArgsT], Awaitable[BaseModel]]


@dataclass(frozen=True)
class Tool(Generic[ArgsT]):
    """A tool: a name, a description, an argument model and an async handler.

    Attributes:
        name: the name models call it by.
        description: what it does (shown to models).
        args: the pydantic model its arguments must validate against (``extra="forbid"`` advised).
        handler: ``async (tool_context, args) -> result model``; the context is the session's.
        group: an optional group (``memory``) a profile can grant as a whole.
        callers: the callers that may call it (empty: any caller whose profile grants it); the
            registry refuses any other with :class:`~simone.runtime.AccessDenied`.
    """

    name: str
    description: str
    args: type[ArgsT]
    handler: ToolHandler[ArgsT]
    group: str | None = None
    callers: frozenset[Caller] = frozenset()

    @classmethod
    def of(cls, tool: ProviderTool[ArgsT, Any]) -> Tool[ArgsT]:
        """A provider factory's tool as a registry tool (its result checked against its result model)."""

        async def handler(tool_context: ToolContext, args: ArgsT) -> BaseModel:
            result: BaseModel = await tool.run(tool_context.context, args)
            expected = isinstance(result, tool.result)  # not narrowed: the result model is a runtime value
            if not expected:
                raise InvalidResponse(
                    f"the tool {tool.name!r} returned a {type(result).__name__}, not a {tool.result.__name__}",
                    provider=tool.name,
                )
            return result

        return cls(
            name=tool.name,
            description=tool.description,
            args=tool.args,
            handler=handler,
            group=tool.group,
            callers=tool.callers,
        )

    def spec(self) -> ToolSpec:
        """The tool as a model sees it: its arguments' JSON schema without the ``title`` annotations.

        pydantic titles every schema after its field or class (``"title": "Query"`` beside the property
        ``query``); they repeat the names a model already reads and carry nothing the descriptions do not,
        so they are dropped (validation is unchanged: a title is an annotation). So is the argument
        model's own docstring at the top: the tool's description is what a model reads about the tool.
        """
        schema = compact_schema(self.args.model_json_schema())
        schema.pop("description", None)
        return ToolSpec(name=self.name, description=self.description, parameters=schema)


@dataclass
class ToolRegistry:
    """The tools of a runtime, and the capability check of every call."""

    _tools: dict[str, Tool[Any]] = field(default_factory=dict)

    def register(self, tool: Tool[Any], *, replace: bool = False) -> None:
        """Add ``tool``; a second tool with the same name is a :class:`ConfigError` unless ``replace``."""
        if tool.name in self._tools and not replace:
            raise ConfigError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def extend(self, tools: Iterable[Tool[Any]]) -> None:
        """Register several tools."""
        for tool in tools:
            self.register(tool)

    def names(self) -> list[str]:
        """Every registered tool name, sorted."""
        return sorted(self._tools)

    def get(self, name: str) -> Tool[Any]:
        """The tool ``name``.

        Raises:
            UnknownTool: nobody registered it.
        """
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownTool(
                f"there is no tool named {name!r}; available: {', '.join(self.names()) or 'none'}"
            ) from None

    def for_profile(self, profile: AgentProfile) -> list[Tool[Any]]:
        """The tools ``profile`` may call, sorted by name."""
        return [tool for name, tool in sorted(self._tools.items()) if profile.may_call(tool)]

    def specs(self, profile: AgentProfile) -> list[ToolSpec]:
        """The specs of the tools ``profile`` may call."""
        return [tool.spec() for tool in self.for_profile(profile)]

    def check(self, profile: AgentProfile, context: TrustedContext, name: str) -> Tool[Any]:
        """Lock one: the tool exists and ``profile`` may call it from ``context``.

        Raises:
            UnknownTool: no such tool.
            AccessDenied: the profile may not call it.
            ScopeViolation: the context was admitted for another role than the profile's.
        """
        tool = self.get(name)
        if tool.callers and context.caller not in tool.callers:
            raise AccessDenied(
                f"a {context.caller.value} may not call {name!r}; it is for "
                f"{', '.join(sorted(c.value for c in tool.callers))}",
                provider=name,
            )
        if not profile.may_call(tool):
            raise AccessDenied(
                f"the {profile.name} may not call {name!r}; its tools are "
                f"{', '.join(t.name for t in self.for_profile(profile)) or 'none'}",
                provider=name,
            )
        if context.caller is not profile.caller:
            raise ScopeViolation(
                f"a {profile.name} session must run in a {profile.caller.value} context, "
                f"not {context.caller.value}"
            )
        return tool

    def parse(self, tool: Tool[ArgsT], arguments: str | Mapping[str, Any] | None) -> ArgsT:
        """Parse and validate model-supplied ``arguments`` for ``tool``.

        Raises:
            InvalidRequest: not JSON, not an object, or not valid for the tool.
            ScopeViolation: the arguments carry scope or role keys at any depth.
        """
        return parse_tool_arguments(tool.name, tool.args, arguments, forbidden=FORBIDDEN_ARGUMENT_KEYS)

    async def call(
        self,
        profile: AgentProfile,
        context: TrustedContext | ToolContext,
        name: str,
        arguments: str | Mapping[str, Any] | None,
    ) -> BaseModel:
        """Check, parse and run one tool call with the session's context (and ledger)."""
        tool_context = context if isinstance(context, ToolContext) else ToolContext(context=context)
        tool = self.check(profile, tool_context.context, name)
        args = self.parse(tool, arguments)
        return await tool.handler(tool_context, args)


_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
"""Keywords whose value maps names (a property called ``title``, say) to subschemas."""
_SCHEMA_ONE = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
    }
)
_SCHEMA_LIST = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})


def compact_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (a JSON schema) without ``title`` annotations, at any depth; everything else kept.

    Only keywords that hold subschemas are walked, so data such as ``default``, ``enum`` or ``const``
    values, and properties that happen to be called ``title``, are left as they are.
    """
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: _subschema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = _subschema(value)
        elif key in _SCHEMA_LIST and isinstance(value, list):
            out[key] = [_subschema(sub) for sub in value]
        else:
            out[key] = value
    return out


def _subschema(value: Any) -> Any:
    return compact_schema(value) if isinstance(value, Mapping) else value
