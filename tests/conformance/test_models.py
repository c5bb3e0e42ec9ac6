"""The bundled table against what the providers document (``_models.PROVIDER_FACTS``): the
emulators serve the table's facts, so a wrong row would go unnoticed by every other cell."""

from __future__ import annotations

import pytest

from session_migrator import lookup_model
from tests.conformance._models import PROVIDER_FACTS


@pytest.mark.parametrize("name", sorted(PROVIDER_FACTS))
def test_bundled_table_agrees_with_the_provider(name: str) -> None:
    window, max_output, source = PROVIDER_FACTS[name]
    found = lookup_model(name)
    assert (found.context_window, found.max_input_tokens, found.max_output_tokens) == (
        window,
        window,
        max_output,
    ), f"{name}: the table says {found} ({found.ref}); {source} says {window:,} / {max_output:,}"
    assert found.source == "bundled:checked", found
