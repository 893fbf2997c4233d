"""JSON Schema export of every message, written to the checked-in ``schemas/json/`` folder.

Invariant: the files there equal ``json_schemas()`` byte for byte (a unit test keeps them in
sync); regenerate with ``python -m schemas.export``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from schemas.changes import FactCreated, FactSuperseded, MemoryItemChanged
from schemas.commands import Command
from schemas.events import RawEvent
from schemas.facts import ConflictSet, ExtractedFact, Fact
from schemas.hygiene import HygieneConfig, RunResponse, ScheduleCheckpoint, Status
from schemas.tokens import ApiToken
from schemas.transfer import (
    AliasLine,
    ConflictSetLine,
    ErasureLine,
    FactLine,
    Header,
    ImportReport,
    SourceLine,
)

MODELS: dict[str, type[BaseModel]] = {
    "raw_event": RawEvent,
    "extracted_fact": ExtractedFact,
    "fact": Fact,
    "conflict_set": ConflictSet,
    "fact_created": FactCreated,
    "fact_superseded": FactSuperseded,
    "memory_item_changed": MemoryItemChanged,
    "command": Command,
    "hygiene_config": HygieneConfig,
    "hygiene_run_response": RunResponse,
    "hygiene_schedule_checkpoint": ScheduleCheckpoint,
    "hygiene_status": Status,
    # The export file (consolidator export / import), one schema per line kind.
    "transfer_header": Header,
    "transfer_fact_line": FactLine,
    "transfer_conflict_set_line": ConflictSetLine,
    "transfer_alias_line": AliasLine,
    "transfer_erasure_line": ErasureLine,
    "transfer_source_line": SourceLine,
    "transfer_import_report": ImportReport,
    # `consolidator tokens list --json` (one per element; never a secret).
    "api_token": ApiToken,
}

FOLDER = Path(__file__).parent / "json"


def json_schemas() -> dict[str, dict[str, Any]]:
    return {name: model.model_json_schema(mode="validation") for name, model in MODELS.items()}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(folder: Path = FOLDER) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in json_schemas().items():
        path = folder / f"{name}.schema.json"
        path.write_text(render(schema))
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER):
        print(p)
