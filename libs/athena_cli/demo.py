"""`athena demo`: replay the sample conversation through the public API and show what Athena made of it."""

from __future__ import annotations

import asyncio

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from athena import keys
from athena.queue import FairQueue, TaskResult, wait_for_results
from athena.redis_util import connect_redis
from athena_cli.sample_conversation import SAMPLE_SCOPE, sample_conversation
from athena_cli.stack import LocalStack
from athena_client import AsyncAthenaClient

__all__ = ["run_demo", "wait_until_processed"]


async def wait_until_processed(
    redis_url: str, scope: str, task_ids: list[str], *, timeout: float
) -> dict[str, TaskResult]:
    """The final results of these tasks of one scope (athena.queue.wait_for_results), or what there is at `timeout`."""
    redis = connect_redis(redis_url)
    try:
        return await wait_for_results(redis, [(scope, t) for t in task_ids], timeout=timeout)
    finally:
        await redis.aclose()


async def run_demo(stack: LocalStack, *, console: Console, timeout: float) -> None:
    tenant, user, agent = SAMPLE_SCOPE
    scope = AsyncAthenaClient.scope(tenant, user, agent)
    turns = sample_conversation()
    responses = []
    async with stack.client() as client:
        with Progress(console=console, transient=False) as progress:
            bar = progress.add_task("replaying the sample conversation", total=len(turns))
            for turn in turns:
                responses.append(await client.store_event(scope, turn))
                progress.advance(bar)
                # Roughly the pace of a real conversation, compressed.
                await asyncio.sleep(0.05)
        task_ids = [r.task_id for r in responses if r.task_id]
        console.print(
            f"stored [bold]{len(responses)}[/bold] events; queued [bold]{len(task_ids)}[/bold] chain checks (one per user message)"
        )

        with console.status("waiting for cognition to decide every user message..."):
            results = await wait_until_processed(
                stack.redis_url, keys.scope_id(tenant, user, agent), task_ids, timeout=timeout
            )

        by_task = {r.task_id: (t, r) for t, r in zip(turns, responses) if r.task_id}
        table = Table(title="chain-break decisions (one per user message)")
        for col in ("user message", "decision", "path", "score", "segment handed to formation"):
            table.add_column(col, overflow="fold")
        for task_id in task_ids:
            turn, _ = by_task[task_id]
            res = results.get(task_id, {})
            score = res.get("score")
            seg = ""
            if res.get("segment_id"):
                seg = f"{res['segment_events']} events -> {res.get('formation_outcome', '')}"
            elif res.get("status") == "dead_lettered":
                seg = f"dead-lettered: {res.get('error', '')[:60]}"
            table.add_row(
                turn.content[:70],
                res.get("decision", res.get("status", "pending")),
                res.get("path", ""),
                f"{score:.2f}" if isinstance(score, (int, float)) else "",
                seg,
            )
        console.print(table)
        # The conversation is over: FlushWindow forms its last topic (the idle flush would, later).
        flush = await client.flush_window(scope)
        if flush.task_id:
            with console.status("FlushWindow: forming the last topic..."):
                flushed = await wait_until_processed(
                    stack.redis_url, keys.scope_id(tenant, user, agent), [flush.task_id], timeout=timeout
                )
            res = flushed.get(flush.task_id, {})
            console.print(
                f"FlushWindow closed the conversation: the open segment's {flush.events} events -> {res.get('formation_outcome', '')}"
            )
            results.update(flushed)
        window = await client.get_full_context(scope)
        console.print(f"short-term window now holds {len(window)} events")

        outcomes = [r.get("formation_outcome", "") for r in results.values()]
        console.print(
            f"formation: {outcomes.count('FORM_OUTCOME_CREATED')} chains created, "
            f"{outcomes.count('FORM_OUTCOME_MERGED')} merged into an existing chain, "
            f"{outcomes.count('FORM_OUTCOME_REJECTED')} rejected by the quality gate"
        )
        for r in results.values():
            if r.get("formation_outcome") == "FORM_OUTCOME_REJECTED":
                console.print(
                    f"  rejected segment {r['segment_id']} ({r['segment_events']} events): {r.get('formation_reason', '')}"
                )
        chains = await client.list_chains(scope)
        ctable = Table(title="cognitive chains formed")
        for col in (
            "topic",
            "summary",
            "entities",
            "quality (overall / coherence / completeness / relevance)",
            "events",
            "merges",
            "heat",
        ):
            ctable.add_column(col, overflow="fold")
        for c in chains:
            q = c.quality
            ctable.add_row(
                c.topic,
                c.summary[:160] + ("..." if len(c.summary) > 160 else ""),
                ", ".join(e.text for e in c.entities[:8]),
                f"{q.overall:.2f} / {q.coherence:.2f} / {q.completeness:.2f} / {q.relevance:.2f}",
                str(c.event_count),
                str(c.merge_count),
                f"{c.heat_score:.2f}",
            )
        console.print(ctable)

        query = "Which Kyoto temples need a reservation?"
        hits = await client.search_memory(scope, query, limit=3)
        stable = Table(title=f"SearchMemory: {query!r}")
        for col in ("rank", "score", "cosine", "words", "topic", "why"):
            stable.add_column(col, overflow="fold")
        for i, h in enumerate(hits, 1):
            stable.add_row(
                str(i), f"{h.score:.2f}", f"{h.similarity:.2f}", f"{h.lexical_score:.2f}", h.chain.topic, h.why
            )
        console.print(stable)

    redis = connect_redis(stack.redis_url)
    depth = await FairQueue(redis).depth()
    await redis.aclose()
    console.print(
        f"queue: ready={depth.ready} in_flight={depth.in_flight} delayed={depth.delayed} dead_lettered={depth.dead_lettered}"
    )
