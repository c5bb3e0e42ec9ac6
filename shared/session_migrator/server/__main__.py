"""``python -m session_migrator.server``: print the OpenAPI document (docs/openapi.json)."""

import json

from session_migrator.server import openapi

print(json.dumps(openapi(), indent=2))
