"""Merge candidates across a user's agents (the seed's rule, SESSION_MERGE_ACROSS_AGENTS): a returning
topic told to another agent of the same user joins the first agent's chain, which then belongs to
both; with the per-agent setting it forms a chain of its own. Real MongoDB-wire server, Milvus Lite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from support.formation_data import KYOTO, KYOTO_AGAIN, SCOPE, make_segment
from support.formation_in_process import running_formation

from athena.internal.v1 import formation_pb2
from athena.local import MongoWireServer
from athena_client.memory.v1 import memory_pb2
from athena_formation.server import Formation
from athena_formation.store.agent_filter import AgentColumn
from athena_formation.store.lexical_index import LexiconRow, UserLexicon
from athena_formation.store.user_vectors import UserVectors

CONCIERGE = memory_pb2.Scope(tenant_id=SCOPE.tenant_id, user_id=SCOPE.user_id, agent_id="concierge")


def _scope(agent_id: str) -> memory_pb2.Scope:
    return memory_pb2.Scope(tenant_id=SCOPE.tenant_id, user_id=SCOPE.user_id, agent_id=agent_id)


async def _form(f: Formation, segment: formation_pb2.Segment) -> formation_pb2.FormChainResponse:
    return await f.former.form(segment)


async def _found_by(f: Formation, agent_id: str, query: str) -> list[str]:
    request = memory_pb2.SearchMemoryRequest(scope=_scope(agent_id), query=query, limit=5)
    return [h.chain.id for h in (await f.recall.search(request)).hits]


async def test_a_topic_continued_with_another_agent_of_the_user_merges_and_the_chain_belongs_to_both(
    mongo_server: MongoWireServer, mongo_db_name: str, tmp_path: Path
) -> None:
    async with running_formation(mongo_server, mongo_db_name, tmp_path) as f:
        first = await _form(f, make_segment(KYOTO))
        again = await _form(f, make_segment(KYOTO_AGAIN, scope=CONCIERGE))
        assert first.outcome == formation_pb2.FORM_OUTCOME_CREATED
        assert again.outcome == formation_pb2.FORM_OUTCOME_MERGED and again.chain_id == first.chain_id

        chain = await f.recall.get_chain(memory_pb2.GetChainRequest(scope=_scope("concierge"), chain_id=first.chain_id))
        assert chain.scope.agent_id == SCOPE.agent_id and list(chain.agent_ids) == [SCOPE.agent_id, "concierge"]
        query = "Kyoto temples and a day trip to Nara"
        assert first.chain_id in await _found_by(f, SCOPE.agent_id, query)
        assert first.chain_id in await _found_by(f, "concierge", query)
        assert await _found_by(f, "coder", query) == []
        for agent in (SCOPE.agent_id, "concierge"):
            listed = await f.recall.list_chains(memory_pb2.ListChainsRequest(scope=_scope(agent)))
            assert [c.id for c in listed.chains] == [first.chain_id]
        rows = await f.vectors._run(
            lambda c: c.get(f.vectors.collection, ids=[first.chain_id], output_fields=["agent_id"])
        )
        assert rows[0]["agent_id"] == "|concierge|helper|"


async def test_with_merges_kept_per_agent_the_other_agents_segment_forms_its_own_chain(
    mongo_server: MongoWireServer, mongo_db_name: str, tmp_path: Path
) -> None:
    async with running_formation(mongo_server, mongo_db_name, tmp_path, session_merge_across_agents=False) as f:
        first = await _form(f, make_segment(KYOTO))
        again = await _form(f, make_segment(KYOTO_AGAIN, scope=CONCIERGE))
        assert again.outcome == formation_pb2.FORM_OUTCOME_CREATED and again.chain_id != first.chain_id
        assert await _found_by(f, "concierge", "Kyoto temples and a day trip to Nara") == [again.chain_id]
        # the same agent's returning topic still merges
        third = await _form(f, make_segment(KYOTO_AGAIN))
        assert third.outcome == formation_pb2.FORM_OUTCOME_MERGED and third.chain_id == first.chain_id


def test_an_agent_filter_selects_the_rows_of_every_chain_that_agent_is_in() -> None:
    column = AgentColumn(["helper", "|concierge|helper|", "coder", "|coder|concierge|"])
    assert column.mask("helper").tolist() == [True, True, False, False]
    assert column.mask("concierge").tolist() == [False, True, False, True]
    assert column.mask("coder").tolist() == [False, False, True, True]
    assert column.mask("nobody").tolist() == [False, False, False, False]


def test_rows_all_of_the_searched_agent_need_no_filter_until_a_chain_of_another_agent_arrives() -> None:
    column = AgentColumn(["helper", "|concierge|helper|"])
    assert column.every("helper") and not column.every("concierge") and AgentColumn().every("helper")

    vectors, lexicon = UserVectors(3), UserLexicon()
    for chain_id, agents, vector in (
        ("mine", "helper", [1.0, 0.0, 0.0]),
        ("shared", "|concierge|helper|", [0.9, 0.3, 0.0]),
    ):
        vectors.put(chain_id, agents, np.array(vector))
        lexicon.put(LexiconRow(chain_id, agents, {"kyoto": 1}, 2))
    query = np.array([1.0, 0.1, 0.0])
    # Every row is the helper's: the filtered search is the unfiltered one.
    assert vectors.top(query, agent_id="helper", limit=5) == vectors.top(query, agent_id=None, limit=5)
    assert lexicon.query(["kyoto"], agent_id="helper").top(5) == lexicon.query(["kyoto"]).top(5)

    vectors.put("theirs", "coder", np.array([1.0, 0.1, 0.0]))  # the closest of all, but another agent's
    lexicon.put(LexiconRow("theirs", "coder", {"kyoto": 1}, 2))
    assert not vectors.agents.every("helper")
    assert [c for c, _ in vectors.top(query, agent_id="helper", limit=5)] == ["mine", "shared"]
    assert {c for c, _ in lexicon.query(["kyoto"], agent_id="helper").top(5)} == {"mine", "shared"}
    assert [c for c, _ in vectors.top(query, agent_id="coder", limit=5)] == ["theirs"]
