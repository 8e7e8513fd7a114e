"""The conversation events the detector reasons about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["Turn", "is_user_message", "message_indices", "user_message_indices"]

ROLES = frozenset({"user", "agent", "system"})
TYPES = frozenset({"message", "thought", "action", "observation"})


def _frozen(mapping: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class Turn:
    """One event of the short-term window: who spoke (role), what kind of event (type), its text, and
    when it happened (epoch seconds; None where the data has no time)."""

    role: str
    type: str
    content: str
    metadata: Mapping[str, str] = field(default_factory=dict)
    timestamp: float | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {sorted(ROLES)}, got {self.role!r}")
        if self.type not in TYPES:
            raise ValueError(f"type must be one of {sorted(TYPES)}, got {self.type!r}")
        object.__setattr__(self, "metadata", _frozen(self.metadata))  # frozen all the way down


def is_user_message(turn: Turn) -> bool:
    """Only these trigger chain checks and only these can open a segment (seed: boundaries follow the user)."""
    return turn.role == "user" and turn.type == "message"


def message_indices(window: Sequence[Turn], end: int) -> list[int]:
    """Indices (<= end) of user and agent messages: the conversation text the scorers read.

    Thoughts, actions, observations and system turns count as events (force flush) but are not
    conversation content: tool output would swamp the topic signal.
    """
    return [i for i in range(end + 1) if window[i].type == "message" and window[i].role in ("user", "agent")]


def user_message_indices(window: Sequence[Turn], end: int) -> list[int]:
    return [i for i in range(end + 1) if is_user_message(window[i])]
