"""Renders the configuration table of the README from the Settings model (one source of truth)."""

from __future__ import annotations

from enum import Enum

from athena.config import Settings

__all__ = ["settings_markdown"]


_UNSET = {"stm_flush_keep_events": "(half of `STM_MAX_EVENTS_BEFORE_FLUSH`)"}
"""What an unset setting means, where it is not the chain scorer's own default."""


def _default(name: str, value: object) -> str:
    if value is None:
        return _UNSET.get(name, "(scorer's default)")
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value == "":
        return "(empty)"
    return f"`{value}`"


def settings_markdown() -> str:
    lines = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        doc = (field.description or "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name.upper()}` | {_default(name, field.default)} | {doc} |")
    return "\n".join(lines)
