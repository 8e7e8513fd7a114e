"""An in-process copy of each searched user's chain vectors, for Milvus Lite.

Milvus Lite (the local-file mode) runs inside formation in pure Python, and every search costs time
in proportion to all the rows of the collection, whatever the filter or the index: hundreds of
milliseconds per search at 100,000 rows (docs/benchmarks.md, "Measured choices in the code").
SearchMemory always searches one user, so formation keeps the
vectors of the users it has searched as one matrix each and answers with a matrix product; Milvus
stays the durable store and the source each user's matrix is loaded from, once.

Coherent because a Milvus Lite file admits one process (formation) and VectorIndex applies every
upsert and delete here after Milvus accepted it. Not used with a Milvus server, where other
processes may write.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

import numpy as np
import torch

from athena_formation.store.agent_filter import AgentColumn
from athena_formation.store.cache_eviction import evict_least_recent

__all__ = ["UserVectorCache", "UserVectors"]

UserKey = tuple[str, str]
"""(tenant_id, user_id)"""

_DTYPE = np.float16


class UserVectors:
    """One user's chains: ids, agents and unit vectors, row for row.

    Rows live in a buffer that doubles when full, and a chain's row is found through a dict, so an
    upsert costs the same for a user with ten chains or a hundred thousand.

    The rows are float16: a scan of one user's vectors reads the whole matrix for every search and is
    bound by memory bandwidth, and half the bytes take about half the time, in half the memory.
    Cosines come out within about 1e-4 of float32 ones, with the same top hits (docs/benchmarks.md,
    "Measured choices in the code"). Milvus keeps the float32 vectors; merge decisions read those.
    """

    def __init__(
        self, dim: int, ids: list[str] | None = None, agents: list[str] | None = None, matrix: np.ndarray | None = None
    ) -> None:
        self.dim = dim
        self.ids: list[str] = ids or []
        self.agents = AgentColumn(agents or [])
        self._row = {chain_id: i for i, chain_id in enumerate(self.ids)}
        self._buffer = matrix.astype(_DTYPE) if matrix is not None and len(matrix) else np.zeros((0, dim), dtype=_DTYPE)

    @property
    def matrix(self) -> np.ndarray:
        return self._buffer[: len(self.ids)]

    def put(self, chain_id: str, agent_id: str, vector: np.ndarray) -> None:
        unit = _unit(vector)
        row = self._row.get(chain_id)
        if row is None:
            row = len(self.ids)
            if row == len(self._buffer):
                grown = np.zeros((max(16, 2 * row), self.dim), dtype=_DTYPE)
                grown[:row] = self._buffer
                self._buffer = grown
            self.ids.append(chain_id)
            self.agents.append(agent_id)
            self._row[chain_id] = row
        else:
            self.agents.set(row, agent_id)
        self._buffer[row] = unit

    def drop(self, chain_ids: set[str]) -> None:
        keep = [i for i, c in enumerate(self.ids) if c not in chain_ids]
        self._buffer = self.matrix[keep]
        self.ids = [self.ids[i] for i in keep]
        self.agents.keep(keep)
        self._row = {chain_id: i for i, chain_id in enumerate(self.ids)}

    def similarities(self, query: np.ndarray, chain_ids: Iterable[str]) -> dict[str, float]:
        """Cosine of the query to each of these chains that has a row."""
        rows = [(c, r) for c in chain_ids if (r := self._row.get(c)) is not None]
        if not rows:
            return {}
        sims = self._buffer[[r for _, r in rows]].astype(np.float32) @ _unit(query)
        return {c: float(s) for (c, _), s in zip(rows, sims)}

    def unit_vectors(self, chain_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The unit vectors of these chains that have a row, in float32."""
        return {c: self._buffer[r].astype(np.float32) for c in chain_ids if (r := self._row.get(c)) is not None}

    def top(self, query: np.ndarray, *, agent_id: str | None, limit: int) -> list[tuple[str, float]]:
        """The `limit` most cosine-similar chains (of `agent_id` only, when given), best first.

        Two steps: torch's float16 matrix-vector product over every row (numpy has no fast float16
        path; its float16 results are rounded to about 3 decimals) and its top-k (the pool), then the
        best `limit + 32` (at least twice `limit`) scored again in float32, which orders them and gives
        the cosines. torch.topk, not numpy's argpartition, which is several times slower at 100,000 rows."""
        if not self.ids or limit <= 0:
            return []
        unit = _unit(query)
        coarse = torch.mv(torch.from_numpy(self.matrix), torch.from_numpy(unit.astype(_DTYPE))).float()
        if agent_id and not self.agents.every(agent_id):  # no rows to mask: skip a pass over all of them
            coarse.masked_fill_(torch.from_numpy(~self.agents.mask(agent_id)), -np.inf)
        pool = min(len(self.ids), max(2 * limit, limit + 32))
        rows = (
            torch.topk(coarse, pool, sorted=False).indices.numpy() if pool < len(self.ids) else np.arange(len(self.ids))
        )
        rows = rows[np.isfinite(coarse.numpy()[rows])]
        sims = self._buffer[rows].astype(np.float32) @ unit
        best = np.argsort(-sims, kind="stable")[:limit]
        return [(self.ids[rows[i]], float(sims[i])) for i in best]


class UserVectorCache:
    """The loaded users' vectors, and which user each cached chain belongs to.

    Bounded by `max_chains` rows in all: past it, the least recently searched users are dropped
    (they load again from Milvus on their next search), so memory stays flat however many users search.
    """

    def __init__(self, dim: int, *, max_chains: int = 200_000) -> None:
        self.dim = dim
        self.max_chains = max_chains
        self._users: OrderedDict[UserKey, UserVectors] = OrderedDict()
        self._owner: dict[str, UserKey] = {}

    @property
    def cached_chains(self) -> int:
        return sum(len(v.ids) for v in self._users.values())

    def has(self, user: UserKey) -> bool:
        """Whether the user is loaded (without counting as a search of it)."""
        return user in self._users

    def get(self, user: UserKey) -> UserVectors | None:
        vectors = self._users.get(user)
        if vectors is not None:
            self._users.move_to_end(user)
        return vectors

    def _evict(self, *, keep: UserKey) -> None:
        for _, vectors in evict_least_recent(self._users, size=lambda v: len(v.ids), limit=self.max_chains, keep=keep):
            for chain_id in vectors.ids:
                self._owner.pop(chain_id, None)

    def load(self, user: UserKey, rows: Iterable[tuple[str, str, np.ndarray]]) -> UserVectors:
        """Install a user's rows (chain id, agent id, vector) as read from Milvus."""
        ids, agents, units = [], [], []
        for chain_id, agent_id, vector in rows:
            ids.append(chain_id)
            agents.append(agent_id)
            units.append(_unit(vector))
            self._owner[chain_id] = user
        vectors = UserVectors(self.dim, ids, agents, np.vstack(units) if units else None)
        self._users[user] = vectors
        self._users.move_to_end(user)
        self._evict(keep=user)
        return vectors

    def put(self, user: UserKey, chain_id: str, agent_id: str, vector: np.ndarray) -> None:
        """An upsert Milvus accepted: applied only to a loaded user (others load it from Milvus)."""
        vectors = self._users.get(user)
        if vectors is not None:
            vectors.put(chain_id, agent_id, vector)
            self._owner[chain_id] = user
            self._evict(keep=user)

    def clear(self) -> None:
        """Forget everything (after a write whose outcome in Milvus is unknown): users reload from Milvus."""
        self._users.clear()
        self._owner.clear()

    def drop(self, chain_ids: Iterable[str]) -> None:
        """A delete Milvus accepted."""
        by_user: dict[UserKey, set[str]] = {}
        for chain_id in chain_ids:
            user = self._owner.pop(chain_id, None)
            if user is not None:
                by_user.setdefault(user, set()).add(chain_id)
        for user, ids in by_user.items():
            if user in self._users:
                self._users[user].drop(ids)


def _unit(vector: np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v
