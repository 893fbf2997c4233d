"""The README's settings table is generated from the Settings model and kept in sync."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.settings import Settings
from streams.cli.settings_doc import BEGIN, END, README, main, render, replace_section


def test_readme_settings_table_is_current() -> None:
    readme = README.read_text(encoding="utf-8")
    assert readme == replace_section(readme, render()), (
        "README.md's settings table is stale: run `make settings-doc` "
        "(python -m streams.cli.settings_doc) and commit the result"
    )


def test_every_setting_is_listed_once_with_its_default() -> None:
    table = render()
    for name in Settings.model_fields:
        assert table.count(f"`CONSOLIDATOR_{name.upper()}`") == 1, name
    assert "| `CONSOLIDATOR_PARTITIONS` | `6` | int, ≥ 1, ≤ 1024 |" in table
    assert "| `CONSOLIDATOR_LLM_OUTPUT_MODE` | `auto` |" in table
    assert "`CONSOLIDATOR_KAFKA_HOME`, `KAFKA_HOME`" in table


def test_rendering_ignores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    before = render()
    monkeypatch.setenv("CONSOLIDATOR_PARTITIONS", "99")
    assert render() == before


class Odd(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ODD_")

    # --- first ---
    # A comment | with a pipe
    # on two lines.
    mode: Literal["a", "b|c"] = "a"
    token: SecretStr | None = None  # trailing words
    key: SecretStr = SecretStr("placeholder")
    empty: str = ""
    items: list[int] = Field(default_factory=lambda: [1, 2])

    # --- second ---
    described: float = Field(default=0.5, ge=0, lt=1, description="From the field.")
    aliased: int = Field(default=1, validation_alias=AliasChoices("ODD_ALIASED", "ALIASED"))
    required: int

    @property
    def not_a_field(self) -> int:
        return 1


def test_a_model_with_odd_fields_renders_a_well_formed_table() -> None:
    table = render(Odd)
    assert table.index("**first**") < table.index("**second**")
    lines = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(lines) == len(Odd.model_fields)
    for line in lines:  # 4 cells: 5 unescaped pipes
        assert line.replace("\\|", "").count("|") == 5, line
    assert (
        "| `ODD_MODE` | `a` | `a` \\| `b\\|c` | A comment \\| with a pipe on two lines. |" in table
    )
    assert "| `ODD_TOKEN` | *(unset)* | secret (optional) | trailing words |" in table
    assert "| `ODD_KEY` | `placeholder` | secret |" in table
    assert '| `ODD_EMPTY` | `""` |' in table
    assert "| `ODD_ITEMS` | `[1, 2]` |" in table
    assert "| `ODD_DESCRIBED` | `0.5` | float, ≥ 0, < 1 | From the field. |" in table
    assert "| `ODD_ALIASED`, `ALIASED` | `1` |" in table
    assert "| `ODD_REQUIRED` | *(required)* | int |" in table
    assert "not_a_field" not in table.lower()


def test_replace_section_keeps_everything_outside_the_markers() -> None:
    doc = f"intro\n{BEGIN}\nold table\n{END}\noutro\n"
    assert replace_section(doc, "NEW") == f"intro\n{BEGIN}\nNEW\n{END}\noutro\n"
    with pytest.raises(ValueError, match="markers"):
        replace_section("no markers here", "NEW")


def test_cli_writes_then_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{BEGIN}\nstale\n{END}\n", encoding="utf-8")
    assert main([str(readme), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert main([str(readme)]) == 0
    assert main([str(readme), "--check"]) == 0
    assert render() in readme.read_text(encoding="utf-8")
    readme.write_text("no markers", encoding="utf-8")
    assert main([str(readme)]) == 2
