"""The schemas the LangChain guards count are the ones the provider classes send: a pydantic
``response_format`` as the openai SDK's strict ``json_schema`` (titles kept, every object closed),
tools in langchain-openai's strict form when the binding says ``strict=True``."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import tool
from pydantic import BaseModel, Field

from langchain_session_migrator._request import (
    binding_payloads,
    response_format_payload,
    strict_json_schema,
)
from session_migrator import TiktokenCounter, schema_tokens


class Item(BaseModel):
    sku: str = Field(description="The stock-keeping unit.")


class Order(BaseModel):
    """An order."""

    number: str = Field(description="The order number.")
    items: list[Item]
    note: str | None = None


@tool
def lookup(order: str, verbose: bool = False) -> str:
    """Look an order up."""
    return order


def _objects(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found += _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _objects(value)
    return found


def test_a_pydantic_response_format_is_counted_as_the_strict_json_schema() -> None:
    payload = response_format_payload(Order)
    assert payload["type"] == "json_schema"
    spec = payload["json_schema"]
    assert (spec["name"], spec["strict"]) == ("Order", True)
    assert spec["schema"]["properties"]["number"]["title"] == "Number"  # titles are sent
    objects = _objects(spec["schema"])
    assert len(objects) == 2  # Order and Item (in $defs)
    assert all(o["additionalProperties"] is False for o in objects)
    assert all(o["required"] == list(o["properties"]) for o in objects)
    # more than the tool form the guard counted before (no titles, not strict)
    c = TiktokenCounter("o200k_base")
    tool_form = binding_payloads({"tools": [Order]})
    assert schema_tokens([payload], c) > schema_tokens(tool_form, c)


def test_strict_json_schema_leaves_property_names_alone() -> None:
    schema = {"type": "object", "properties": {"properties": {"type": "string"}}}
    strict = strict_json_schema(schema)
    assert strict["properties"] == {"properties": {"type": "string"}}
    assert strict["required"] == ["properties"]
    assert strict["additionalProperties"] is False
    assert schema == {"type": "object", "properties": {"properties": {"type": "string"}}}


def test_tools_bound_strict_are_counted_strict() -> None:
    plain = binding_payloads({"tools": [lookup]})[0]
    strict = binding_payloads({"tools": [lookup], "strict": True})[0]
    assert "strict" not in plain["function"]
    assert strict["function"]["strict"] is True
    assert strict["function"]["parameters"]["additionalProperties"] is False
    c = TiktokenCounter("o200k_base")
    assert c.count_text(json.dumps(strict)) > c.count_text(json.dumps(plain))
