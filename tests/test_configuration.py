"""Settings: the seeds' variables with their documented defaults, validation naming the variable, the README table."""

from __future__ import annotations

from pathlib import Path

import pytest

from athena.config import Settings, SettingsError, load_settings
from athena_cli.config_table import settings_markdown

ROOT = Path(__file__).resolve().parents[1]

SEED_DEFAULTS = {
    "stm_task_timeout": 300.0,
    "memory_worker_count": 2,
    "enable_memory_workers": True,
    "stm_max_events_before_flush": 20,
    "topic_analysis_max_topics": 3,
    "topic_analysis_min_confidence": 0.6,
    "topic_analysis_llm_timeout": 20.0,
    "mtm_quality_min_score": 0.5,
    "session_max_chains_per_user": 100,
    "session_merge_min_confidence": 0.7,
    "session_similarity_threshold": 0.6,
    "queue_max_attempts": 3,
    "queue_result_ttl_seconds": 3600,
}


def test_seed_variables_have_the_documented_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [*SEED_DEFAULTS, "memory_os_mtm_quality_mode"]:
        monkeypatch.delenv(name.upper(), raising=False)
    s = load_settings()
    assert {k: getattr(s, k) for k in SEED_DEFAULTS} == SEED_DEFAULTS
    assert s.memory_os_mtm_quality_mode.value == "balanced"


def test_environment_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKER_COUNT", "5")
    monkeypatch.setenv("ENABLE_MEMORY_WORKERS", "false")
    monkeypatch.setenv("CHAIN_SIM_HIGH", "0.8")
    s = load_settings()
    assert (s.memory_worker_count, s.enable_memory_workers, s.chain_sim_high) == (5, False, 0.8)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MEMORY_WORKER_COUNT", "zero"),
        ("CHAIN_SIM_LOW", "1.5"),
        ("MEMORY_OS_MTM_QUALITY_MODE", "sloppy"),
        ("INGEST_GRPC_PORT", "70000"),
        ("STM_FLUSH_KEEP_EVENTS", "20"),  # must stay below STM_MAX_EVENTS_BEFORE_FLUSH (20)
    ],
)
def test_a_bad_value_stops_start_up_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=variable):
        load_settings()


def test_a_force_flush_keeps_half_its_size_unless_told_and_zero_is_the_seeds_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STM_FLUSH_KEEP_EVENTS", raising=False)
    monkeypatch.delenv("STM_MAX_EVENTS_BEFORE_FLUSH", raising=False)
    assert load_settings().flush_keep_events == 10
    monkeypatch.setenv("STM_MAX_EVENTS_BEFORE_FLUSH", "6")
    assert load_settings().flush_keep_events == 3
    monkeypatch.setenv("STM_FLUSH_KEEP_EVENTS", "0")
    assert load_settings().flush_keep_events == 0


def test_readme_configuration_table_matches_the_settings() -> None:
    readme = (ROOT / "README.md").read_text()
    assert settings_markdown() in readme, "regenerate the table with `athena config --markdown`"


def test_every_setting_is_documented() -> None:
    assert all(field.description for field in Settings.model_fields.values())


def test_every_setting_that_departs_from_the_seeds_is_in_the_departures_table_and_shown_by_athena_config() -> None:
    from typer.testing import CliRunner

    from athena.config import SEED_DEPARTURES
    from athena_cli.main import app

    architecture = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = architecture.split("## Departures from the seeds", 1)[1].split("\n## ", 1)[0]
    assert SEED_DEPARTURES and set(SEED_DEPARTURES) <= set(Settings.model_fields)
    missing = [name.upper() for name in SEED_DEPARTURES if name.upper() not in table]
    assert missing == []

    shown = CliRunner().invoke(app, ["config"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert "departs from the seed" in shown.output
    assert "a probability under the default scorer" in shown.output
