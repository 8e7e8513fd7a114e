"""A service's log setup makes every line on stderr JSON, including what libraries write their own way:
Python warnings (printed as plain text by default) and transformers (its own plain-text handler)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import warnings

    from athena.telemetry import setup_logging

    setup_logging("formation")
    # After the setup, as in a service: the model is loaded (and transformers imported) later.
    from transformers.utils import logging as transformers_logging

    warnings.warn("a library's deprecation notice", DeprecationWarning, stacklevel=1)
    transformers_logging.get_logger("transformers.modeling_utils").warning("a notice from transformers")
    """
)


@pytest.mark.parametrize("ci", [None, "true"], ids=["outside-ci", "with-CI-set"])
def test_warnings_and_transformers_messages_come_out_once_each_as_json_lines(ci: str | None) -> None:
    # With CI set, transformers lets its records propagate as well as printing them itself.
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci else {})
    env["PYTHONWARNINGS"] = "always"
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    lines = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a line that is not JSON: {line!r}\n{run.stderr}")
    by_msg = {r["msg"]: r for r in records}
    warned = [r for r in records if "a library's deprecation notice" in r["msg"]]
    assert len(warned) == 1 and warned[0]["logger"] == "py.warnings" and warned[0]["level"] == "warning", records
    assert [r["msg"] for r in records].count("a notice from transformers") == 1, records
    notice = by_msg["a notice from transformers"]
    assert notice["logger"] == "transformers.modeling_utils" and notice["service"] == "formation"
