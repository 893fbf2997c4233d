"""The README's LangGraph example agent is the code tests/integration/test_langgraph.py runs
against a real worker, character for character (so the documented example cannot rot)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BEGIN = "# --- the README's example agent, verbatim ---\n"
END = "# --- end of the example ---"


def test_the_readme_shows_the_tested_agent() -> None:
    test = (REPO / "tests" / "integration" / "test_langgraph.py").read_text()
    example = test[test.index(BEGIN) + len(BEGIN) : test.index(END)].strip("\n")
    assert example.count("\n") > 10 and "def build_agent" in example
    assert example in (REPO / "README.md").read_text()
