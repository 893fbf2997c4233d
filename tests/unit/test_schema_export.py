"""The checked-in JSON Schemas are exactly what the models export (regenerate on change)."""

from __future__ import annotations

from schemas.export import FOLDER, json_schemas, render


def test_checked_in_schemas_match_models() -> None:
    schemas = json_schemas()
    on_disk = {p.name.removesuffix(".schema.json") for p in FOLDER.glob("*.schema.json")}
    assert on_disk == set(schemas), "run `python -m schemas.export` to regenerate"
    for name, schema in schemas.items():
        text = (FOLDER / f"{name}.schema.json").read_text()
        assert text == render(schema), f"{name} drifted: run `python -m schemas.export`"


def test_exported_schemas_forbid_unknown_fields() -> None:
    for name, schema in json_schemas().items():
        assert schema.get("additionalProperties") is False, name
