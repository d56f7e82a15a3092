"""Tool profiles: which of a role's tools an MCP host lists — a small default, the full set on request.

An MCP host puts the whole ``tools/list`` answer in front of its model on every turn, so the default
list is kept small: the orchestrator's ``core`` profile lists the two retrieval tools, research
delegation and **one** memory tool (``memory``, an ``action`` and a ``kind`` naming any of the 30
per-kind memory operations) — about 7,000 characters on the wire instead of about 25,000
(``benchmarks/tool_surface.py``). The other profiles:

===============  ===========================================================================
``core``         retrieve_context, retrieve_memory, delegate_research, memory (default);
                 a researcher: web_research, retrieve_context
``retrieval``    retrieve_context, retrieve_memory (reads only: no writes, no research)
``memory``       memory, retrieve_memory
``full``         every tool the role may call: the per-kind memory tools (create_note,
                 list_todos, …) beside ``memory``
===============  ===========================================================================

A profile narrows a role and never widens it: the role (``orchestrator`` or ``researcher``) decides
what may be called at all, and the profile what is listed. A tool that is neither listed nor a
deprecated alias of a listed one is answered as unknown. A profile chooses among simone's own tools
(:data:`SIMONE_TOOLS`) only: a tool a developer registers and grants in an agent profile of their own
is listed under every tool profile — their agent profile has chosen it already.

**Deprecated aliases.** The per-kind memory tools (:data:`MEMORY_ALIASES`) were the orchestrator's
list before profiles. On a profile that lists ``memory`` but not them, they stay callable by their old
names for one release (:data:`ALIASES_REMOVED_IN`): the call runs as before and its answer ends with a
line saying it is deprecated and which ``memory`` call replaces it (also in the result's ``_meta``
under ``simone/deprecated``, and logged once per name). ``full`` lists them, undeprecated.

This module imports nothing of simone's runtime, so ``simone --help`` can name the profiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_TOOLS = "core"
"""The profile ``simone mcp`` and ``simone serve`` list when neither a flag, a token nor ``[mcp] tools``
names one."""

MEMORY_TOOL = "memory"
"""The one memory tool of the small profiles (see :mod:`simone.agents.mcp._memory_tool`)."""

ALIASES_REMOVED_IN = "0.3.0"
"""The release that drops the deprecated aliases from the small profiles (they stay in ``full``)."""


@dataclass(frozen=True)
class ToolProfile:
    """A named subset of a role's tools, as an MCP host lists them.

    Attributes:
        name: what ``--tools``, ``[mcp] tools`` and a token's profile call it.
        description: one line for ``--help`` and the docs.
        tools: the tool names it lists (those the role may call); ``None``: every tool of the role.
    """

    name: str
    description: str
    tools: frozenset[str] | None = None

    def lists(self, name: str) -> bool:
        """Whether this profile lists the tool ``name`` (for a role that may call it).

        Every profile lists a tool that is not one of simone's own (:data:`SIMONE_TOOLS`).
        """
        return self.tools is None or name in self.tools or name not in SIMONE_TOOLS


TOOL_PROFILES: Mapping[str, ToolProfile] = {
    profile.name: profile
    for profile in (
        ToolProfile(
            "core",
            "retrieval, research delegation and the one memory tool",
            frozenset(
                {"retrieve_context", "retrieve_memory", "delegate_research", MEMORY_TOOL, "web_research"}
            ),
        ),
        ToolProfile(
            "retrieval",
            "retrieve_context and retrieve_memory only: reads, no writes, no research",
            frozenset({"retrieve_context", "retrieve_memory"}),
        ),
        ToolProfile(
            "memory", "the memory tool and retrieve_memory", frozenset({MEMORY_TOOL, "retrieve_memory"})
        ),
        ToolProfile("full", "every tool of the role, the per-kind memory tools included", None),
    )
}
"""Every tool profile by name."""

TOOL_PROFILE_NAMES: tuple[str, ...] = tuple(TOOL_PROFILES)
"""The profile names, default first."""

# The per-kind memory tools and the ``memory`` call that replaces each: (action, kind or None).
_KINDS = (
    ("note", "notes"),
    ("todo", "todos"),
    ("checklist", "checklists"),
    ("fact", "facts"),
    ("task_state", "task_states"),
)
MEMORY_ALIASES: Mapping[str, tuple[str, str | None]] = {
    **{f"{action}_{one}": (action, one) for one, _ in _KINDS for action in ("create", "update", "complete")},
    **{f"{action}_{many}": (action, one) for one, many in _KINDS for action in ("list", "search")},
    "add_checklist_item": ("add_item", None),
    "update_checklist_item": ("update_item", None),
    "move_checklist_item": ("move_item", None),
    "remove_checklist_item": ("remove_item", None),
    "delete_memory": ("delete", None),
}
"""Each per-kind memory tool (a deprecated alias on the small profiles) and its ``memory`` call."""


SIMONE_TOOLS: frozenset[str] = frozenset(
    {"retrieve_context", "retrieve_memory", "delegate_research", "web_research", MEMORY_TOOL, *MEMORY_ALIASES}
)
"""simone's own tools: the ones a profile chooses among."""


def replacement(name: str) -> str | None:
    """The ``memory`` call that replaces the deprecated tool ``name`` (as JSON text), or ``None``."""
    found = MEMORY_ALIASES.get(name)
    if found is None:
        return None
    action, kind = found
    call = f'"action": "{action}"' + (f', "kind": "{kind}"' if kind else "")
    if action.endswith("_item"):
        call += ', "id": <checklist id>'
    return f"{MEMORY_TOOL} {{{call}, …the same fields}}"


def deprecation_notice(name: str) -> str:
    """The line a deprecated alias's answer ends with."""
    return (
        f"deprecated: {name} is an old tool name, kept until simone {ALIASES_REMOVED_IN}; "
        f"call {replacement(name)} instead"
    )


def tool_profiles_help(what: str, *, default: str = "[mcp] tools, else core") -> str:
    """The help of a ``--tools PROFILE`` option: ``what``, its default, and every profile in a phrase."""
    profiles = "; ".join(f"{p.name}: {p.description}" for p in TOOL_PROFILES.values())
    return f"{what} (default: {default}) — {profiles}"


def tool_profile(name: str | ToolProfile) -> ToolProfile:
    """The profile ``name`` (a profile passes through).

    Raises:
        ConfigError: no profile has that name (the message lists them).
    """
    if isinstance(name, ToolProfile):
        return name
    found = TOOL_PROFILES.get(name.strip().lower()) if isinstance(name, str) else None
    if found is None:
        from simone.runtime import ConfigError  # here, not at the top: see the module docstring

        raise ConfigError(
            f"there is no tool profile {name!r}; the profiles are {', '.join(TOOL_PROFILE_NAMES)} "
            "(--tools, [mcp] tools, or a token's --tools)"
        )
    return found
