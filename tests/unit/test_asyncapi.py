"""The checked-in AsyncAPI document and HTTP response schemas are what the models generate."""

from __future__ import annotations

import json
from typing import Any

from schemas import asyncapi, topics
from schemas.changes import MemoryItemChanged
from schemas.events import RawEvent


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _resolve(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = doc
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def test_checked_in_asyncapi_matches_models() -> None:
    text = asyncapi.ASYNCAPI_PATH.read_text()
    assert text == asyncapi.render(asyncapi.document()), "run `python -m schemas.asyncapi`"


def test_checked_in_http_schemas_match_models() -> None:
    schemas = asyncapi.http_schemas()
    on_disk = {p.name.removesuffix(".schema.json") for p in asyncapi.HTTP_FOLDER.glob("*.json")}
    assert on_disk == set(schemas), "run `python -m schemas.asyncapi` to regenerate"
    for name, schema in schemas.items():
        text = (asyncapi.HTTP_FOLDER / f"{name}.schema.json").read_text()
        assert text == asyncapi.render(schema), f"{name} drifted: run `python -m schemas.asyncapi`"
        assert schema.get("additionalProperties") is False, name


def test_every_topic_is_a_channel_with_its_cleanup_policy() -> None:
    doc = asyncapi.document()
    assert doc["asyncapi"].startswith("3.")
    by_address = {c["address"]: c for c in doc["channels"].values()}
    assert set(by_address) == set(topics.ALL)
    for topic, channel in by_address.items():
        policy = channel["bindings"]["kafka"]["topicConfiguration"]["cleanup.policy"]
        assert policy == ["compact" if topic in topics.COMPACTED else "delete"], topic
        assert channel["messages"], topic
    used = {op["channel"]["$ref"] for op in doc["operations"].values()}
    assert used == {f"#/channels/{cid}" for cid in doc["channels"]}


def test_every_reference_resolves() -> None:
    doc = asyncapi.document()
    refs = _refs(doc)
    assert refs
    for ref in refs:
        _resolve(doc, ref)


def test_payloads_are_the_models_own_schemas() -> None:
    doc = asyncapi.document()
    schemas = doc["components"]["schemas"]
    for model in (RawEvent, MemoryItemChanged):
        own = model.model_json_schema(mode="validation")
        shared = schemas[model.__name__]
        assert set(shared["properties"]) == set(model.model_fields)
        assert shared["required"] == own["required"]
        assert shared["additionalProperties"] is False
    raw = _resolve(doc, doc["components"]["messages"]["RawEvent"]["payload"]["$ref"])
    assert (
        raw["properties"]["project_id"]["pattern"]
        == RawEvent.model_json_schema()["properties"]["project_id"]["pattern"]
    )
    # A nested model is a shared component, referenced, not inlined.
    # (``fact`` is nullable on MemoryItemChanged: an ``erased`` change carries no fact.)
    fact = schemas["MemoryItemChanged"]["properties"]["fact"]
    assert {"$ref": "#/components/schemas/Fact"} in fact["anyOf"]
    erased = schemas["MemoryItemChanged"]["properties"]["erased"]
    assert {"$ref": "#/components/schemas/ErasedScope"} in erased["anyOf"]
    json.dumps(doc)  # plain JSON, nothing exotic
