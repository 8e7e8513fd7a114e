"""Stage 6, the pipeline: the whole pipeline's sustained rate under a saturating load, beside the rate
the embedding model itself allows.

Per repeat, a backlog of conversations over many fresh scopes (the demo's sample conversation, every
text made unique to its scope so that no embedding cache answers for another scope) is stored through
the public API as fast as it goes (StoreEvents, a batch per scope per topic, from concurrent callers),
each scope's window then closed by FlushWindow: far more than cognition can decide while it arrives,
so cognition (its default workers) and formation work flat out from the first batch to the last task.
The clock runs from the first store until every chain check and flush of the repeat has its final
result. `pipeline_messages_per_s`: user messages decided (each check's decision) per second of that;
`pipeline_chains_per_s`: segments formed into chains (created or merged) per second.

Baseline: `embed_batched_per_s`, the local model (LocalEmbedder, as the services run it) encoding the
same texts in batches of 64 in this process while the stack is idle: the ceiling of a pipeline whose
every message needs at least one forward pass. `pipeline_vs_embed` is the first over the last.

A full run also measures its lever in the same run: the repeats alternate, in ABBA order, between
the services embedding with the int8 copy of the model (EMBEDDING_INT8, the default: the stage's
figures) and with the float model (`pipeline_messages_per_s_float_model`), cognition and formation
restarted with the setting between them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

from athena import keys
from athena.config import load_settings
from athena.embeddings import make_embedder
from athena.queue import FINAL_STATUSES, wait_for_results
from athena.redis_util import connect_redis
from athena_cli.sample_conversation import sample_conversation
from athena_cli.stack import LocalStack
from athena_client import AsyncAthenaClient, EventInput
from athena_lab.bench._report import Figure, StageResult, summary

__all__ = ["run_pipeline_stage"]

EMBED_BATCH = 64
CALLERS = 8
"""Concurrent API callers storing the backlog (each its own scopes)."""


def _conversation(tag: str) -> list[EventInput]:
    """The sample conversation, each text made unique to this scope (no embedding cache hit across scopes)."""
    return [
        EventInput(t.role, f"{t.content} (ref {tag})", t.type, timestamp=t.timestamp) for t in sample_conversation()
    ]


async def _embed_rate(texts: list[str], repeats: int) -> list[float]:
    """Texts per second of the local model over batches of EMBED_BATCH, fresh texts each repeat."""
    embedder = make_embedder(load_settings(), small_batch_threads=None)
    await embedder.embed(["warm-up"])
    rates = []
    for r in range(repeats):
        fresh = [f"{t} [{r}]" for t in texts]
        t0 = time.perf_counter()
        for i in range(0, len(fresh), EMBED_BATCH):
            await embedder.embed(fresh[i : i + EMBED_BATCH])
        rates.append(len(fresh) / (time.perf_counter() - t0))
    return rates


async def _store_scope(
    client: AsyncAthenaClient, scope_tag: str, tasks: list[tuple[str, str]], user_messages: list[int]
) -> None:
    scope = client.scope("bench", f"pipe-{scope_tag}", "a")
    sid = keys.scope_id(scope.tenant_id, scope.user_id, scope.agent_id)
    turns = _conversation(scope_tag)
    for start in range(0, len(turns), 7):  # about a topic per batch: what an agent platform would send
        batch = turns[start : start + 7]
        response = await client.store_events(scope, batch)
        tasks.extend((sid, r.task_id) for r in response.results if r.task_id)
        user_messages[0] += sum(1 for t in batch if t.role == "user")
    flush = await client.flush_window(scope)
    if flush.task_id:
        tasks.append((sid, flush.task_id))


async def _one_repeat(stack: LocalStack, scopes: int, timeout: float) -> tuple[float, int, int, int]:
    """(seconds, user messages decided, chains formed, tasks without a final result)."""
    run = uuid.uuid4().hex[:8]
    tasks: list[tuple[str, str]] = []
    user_messages = [0]
    async with stack.client(tenant_id="bench") as client:
        t0 = time.perf_counter()

        async def caller(k: int) -> None:
            for n in range(k, scopes, CALLERS):
                await _store_scope(client, f"{run}-{n}", tasks, user_messages)

        await asyncio.gather(*(caller(k) for k in range(CALLERS)))
    redis = connect_redis(stack.redis_url)
    try:
        results = await wait_for_results(redis, tasks, timeout=timeout, poll=0.1)
    finally:
        await redis.aclose()
    seconds = time.perf_counter() - t0
    final = [r for r in results.values() if r.get("status") in FINAL_STATUSES]
    decided = sum(1 for r in final if r.get("decision") in ("break", "continue", "none") and "trigger" not in r)
    chains = sum(1 for r in final if r.get("formation_outcome") in ("FORM_OUTCOME_CREATED", "FORM_OUTCOME_MERGED"))
    return seconds, decided, chains, len(tasks) - len(final)


_EMBEDDING_SERVICES = ("formation", "cognition")  # formation first: cognition's workers call it


async def _set_int8(stack: LocalStack, on: bool) -> None:
    """Cognition and formation running with EMBEDDING_INT8 `on` (restarted when they run with the other value)."""
    value = "true" if on else "false"
    if stack.env.get("EMBEDDING_INT8", "true") == value and all(s in stack.procs for s in _EMBEDDING_SERVICES):
        return
    for service in _EMBEDDING_SERVICES:
        await asyncio.to_thread(stack.stop_service, service)
    stack.env = {**stack.env, "EMBEDDING_INT8": value}
    for service in _EMBEDDING_SERVICES:
        stack.start_service(service)
        await asyncio.to_thread(stack.wait_serving, service, timeout=180)


def _abba(repeats: int) -> list[bool]:
    """The lever per repeat: on, off, off, on, on, off, ... (each side as often, drift balanced)."""
    return [(i + 1) % 4 in (1, 0) for i in range(2 * repeats)]


async def _measure(
    stack: LocalStack, scopes: int, repeats: int, timeout: float, tick: Callable[[], None], *, lever_pairs: bool
) -> StageResult:
    texts = [
        e.content for n in range(EMBED_BATCH * 4 // len(sample_conversation()) + 1) for e in _conversation(f"embed-{n}")
    ]
    embed_rates = await _embed_rate(texts, repeats)
    messages: list[float] = []
    chains: list[float] = []
    float_model: list[float] = []
    seconds: list[float] = []
    missing = 0
    for int8 in _abba(repeats) if lever_pairs else [True] * repeats:
        await _set_int8(stack, int8)
        s, decided, formed, lost = await _one_repeat(stack, scopes, timeout)
        missing += lost
        if not int8:
            float_model.append(decided / s)
            continue
        seconds.append(s)
        messages.append(decided / s)
        chains.append(formed / s)
        tick()
    await _set_int8(stack, True)
    res = StageResult(stage="pipeline")
    res.figures = [
        Figure(
            f"user messages decided and formed, {scopes} scopes at once",
            "msg/s",
            summary(messages),
            f"local model, batches of {EMBED_BATCH}",
            summary(embed_rates),
        ),
        Figure(f"chains formed, {scopes} scopes at once", "chains/s", summary(chains)),
    ]
    if float_model:
        res.figures.append(
            Figure(
                "user messages decided and formed, the int8 copy of the model",
                "msg/s",
                summary(messages),
                "the float model (EMBEDDING_INT8=false), same run",
                summary(float_model),
            )
        )
    res.keys = {
        "pipeline_messages_per_s": summary(messages)["median"],
        "pipeline_chains_per_s": summary(chains)["median"],
        "embed_batched_per_s": summary(embed_rates)["median"],
        "pipeline_vs_embed": res.figures[0].ratio(),
        "pipeline_messages_per_s_float_model": summary(float_model)["median"] if float_model else None,
    }
    res.detail = {
        "scopes": scopes,
        "repeats": repeats,
        "callers": CALLERS,
        "seconds_per_repeat": [round(s, 1) for s in seconds],
        "tasks_without_result": missing,
        "figures": {f.name: {"value": f.value, "baseline": f.baseline} for f in res.figures},
    }
    res.notes.append(
        f"{scopes} scopes x the sample conversation per repeat, {repeats} repeats, LLM off; "
        f"tasks without a final result: {missing}"
    )
    return res


def run_pipeline_stage(stack: LocalStack, *, quick: bool, tick: Callable[[], None]) -> StageResult:
    scopes, repeats = (8, 2) if quick else (64, 5)
    t0 = time.perf_counter()
    res = asyncio.run(_measure(stack, scopes, repeats, 600.0, tick, lever_pairs=not quick))
    res.seconds = time.perf_counter() - t0
    return res
