"""Which agents each row of a user's in-memory index belongs to, for a search's agent filter.

A row holds its chain's agents key (chain_agents.py). Keys are kept as small integer codes, one per
row: most searches name an agent, and comparing an int32 column with the codes of the keys naming
that agent is far cheaper than comparing an array of strings (docs/benchmarks.md, "Measured choices
in the code"). Used by user_vectors.py and lexical_index.py.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np

from athena_formation.store.chain_agents import key_agents

__all__ = ["AgentColumn"]


class AgentColumn:
    def __init__(self, agents: Iterable[str] = ()) -> None:
        self._code_of: dict[str, int] = {}
        self._codes = array("i")
        for agent_id in agents:
            self.append(agent_id)

    def __len__(self) -> int:
        return len(self._codes)

    def _code(self, agents_key: str) -> int:
        return self._code_of.setdefault(agents_key, len(self._code_of))

    def append(self, agents_key: str) -> None:
        self._codes.append(self._code(agents_key))

    def set(self, row: int, agents_key: str) -> None:
        self._codes[row] = self._code(agents_key)

    def keep(self, rows: Sequence[int]) -> None:
        """Only these rows, in this order (the index dropped or compacted the others)."""
        self._codes = array("i", (self._codes[i] for i in rows))

    def every(self, agent_id: str) -> bool:
        """Whether every row is `agent_id`'s: each key ever coded names it (a user of one agent, the
        common case), so a search can skip the mask, a pass over every row, and get the same answer."""
        return all(agent_id in key_agents(key) for key in self._code_of)

    def mask(self, agent_id: str) -> np.ndarray:
        """True for the rows of `agent_id` (a chain of several agents is each one's)."""
        codes = [code for key, code in self._code_of.items() if agent_id in key_agents(key)]
        if not codes or not self._codes:
            return np.zeros(len(self._codes), dtype=bool)
        column = np.frombuffer(self._codes, dtype=np.int32)
        return column == codes[0] if len(codes) == 1 else np.isin(column, codes)
