"""Which agent each row of a user's in-memory index belongs to, for a search's agent filter.

Agents are kept as small integer codes, one per row: most searches name an agent, and comparing an
int32 column with one code is far cheaper than comparing an array of strings (docs/benchmarks.md,
"Measured choices in the code"). Used by user_vectors.py and lexical_index.py.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["AgentColumn"]


class AgentColumn:
    def __init__(self, agents: Iterable[str] = ()) -> None:
        self._code_of: dict[str, int] = {}
        self._codes = array("i")
        for agent_id in agents:
            self.append(agent_id)

    def __len__(self) -> int:
        return len(self._codes)

    def _code(self, agent_id: str) -> int:
        return self._code_of.setdefault(agent_id, len(self._code_of))

    def append(self, agent_id: str) -> None:
        self._codes.append(self._code(agent_id))

    def set(self, row: int, agent_id: str) -> None:
        self._codes[row] = self._code(agent_id)

    def keep(self, rows: Sequence[int]) -> None:
        """Only these rows, in this order (the index dropped or compacted the others)."""
        self._codes = array("i", (self._codes[i] for i in rows))

    def mask(self, agent_id: str) -> np.ndarray:
        """True for the rows of `agent_id`."""
        code = self._code_of.get(agent_id)
        if code is None or not self._codes:
            return np.zeros(len(self._codes), dtype=bool)
        return np.frombuffer(self._codes, dtype=np.int32) == code
