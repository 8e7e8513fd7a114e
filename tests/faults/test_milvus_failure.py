"""Milvus fails, and formation dies, between the chain's MongoDB write and its Milvus write."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pymilvus import MilvusClient
from support.formation_with_faults import start_formation_with_faults
from support.pipeline_ledger import StackFactory, conversation, drive, patient_options, read_ledger, wait_decided

from athena_cli.stack import LocalStack

pytestmark = pytest.mark.slow

TENANT = "faults-milvus"
USERS = 3
FAULTS = ["chain_written:milvus_down", "chain_written:exit", "vector_written:exit", "chain_written:milvus_down"]


async def _restart_formation_when_it_dies(stack: LocalStack, fired: Path, stop: asyncio.Event) -> int:
    restarts = 0
    while not stop.is_set():
        proc = stack.procs.get("formation")
        if proc is not None and proc.poll() is not None:
            stack.procs.pop("formation")
            start_formation_with_faults(stack, FAULTS, fired_log=fired)
            restarts += 1
            try:
                await asyncio.to_thread(stack.wait_serving, "formation")
            except RuntimeError:
                continue  # the next fault fired as soon as it served a retry: restart again
        await asyncio.sleep(0.1)
    return restarts


def _milvus_rows(path: Path) -> list[str]:
    client = MilvusClient(str(path))
    try:
        client.load_collection("cognitive_chains")
        return [
            r["chain_id"]
            for r in client.query("cognitive_chains", filter=f'tenant_id == "{TENANT}"', output_fields=["chain_id"])
        ]
    finally:
        client.close()


async def test_milvus_failure_and_a_crash_between_the_stores_form_every_chain_exactly_once(
    fault_stack: StackFactory, tmp_path: Path
) -> None:
    fired = tmp_path / "faults-fired.log"
    with fault_stack(services=("ingest", "cognition")) as stack:
        start_formation_with_faults(stack, FAULTS, fired_log=fired)
        await asyncio.to_thread(stack.wait_serving, "formation")
        stop = asyncio.Event()
        keeper = asyncio.create_task(_restart_formation_when_it_dies(stack, fired, stop))
        talks = {f"user{i}": conversation(user_index=i, topics=4) for i in range(USERS)}
        acked, errors = await drive(stack, tenant_id=TENANT, conversations=talks, pace=0.05, options=patient_options())
        await wait_decided(f"redis://127.0.0.1:{stack.ports.redis}/0", acked, timeout=120)
        stop.set()
        restarts = await keeper
        ledger = await read_ledger(stack, tenant_id=TENANT, acked=acked)
        async with stack.client(tenant_id=TENANT) as client:
            found = {
                c.id: [
                    h.chain.id
                    for h in await client.search_memory(
                        client.scope(TENANT, c.scope.user_id, c.scope.agent_id), c.topic, limit=10
                    )
                ]
                for u in talks
                for c in await client.list_chains(client.scope(TENANT, u, "agent"))
            }
    # The stack is stopped, so the Milvus Lite file is free to open here.
    rows = _milvus_rows(stack.data_dir / "milvus" / "milvus.db")

    print("\ninjected:", *fired.read_text().splitlines(), f"formation restarted {restarts} time(s)", sep="\n  ")
    print(
        f"counted: {len(rows)} Milvus rows for {len(ledger.chains)} chains; every chain found by search: {all(cid in hits for cid, hits in found.items())}"
    )
    print("counted:", ledger.summary())
    assert fired.read_text().splitlines() == FAULTS, "not every fault fired: the test exercised less than it claims"
    assert not errors
    assert ledger.problems() == []
    assert sorted(rows) == sorted(c["_id"] for c in ledger.chains), "Milvus rows and chains differ"
    assert all(cid in hits for cid, hits in found.items())
