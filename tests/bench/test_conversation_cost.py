"""Issue 40's outcome, kept: replayed turn by turn on a LoCoMo dev conversation (dated, as people
wrote it) at 8,192 tokens, a fitter that keeps its cut reuses at least 90% of each prompt past
the budget (what a provider's prefix cache serves), also when the user returns after days and the
gap note comes and goes (behaviour: shared prefixes, not timing)."""

from __future__ import annotations

import os

import pytest

from benchmarks import conversation_cost, locomo

pytestmark = pytest.mark.skipif(
    not any(locomo.DEFAULT_DATA.glob("*.json")) and not os.environ.get("CI"),
    reason=f"the LoCoMo dev split is not beside the repository: {locomo.WHERE}",
)


@pytest.mark.parametrize("surface", ["SessionFitter, auto", "the guards (RequestFitter), auto"])
def test_a_kept_cut_is_reused_past_the_budget(surface: str) -> None:
    make = conversation_cost.SURFACES[surface]
    for conv in locomo.load(locomo.data_files()):
        r = conversation_cost.replay(make, conv.dated, conv.questions, 8_192)
        assert r.requests > 10
        assert r.reuse >= 0.90, (conv.id, r.reuse)
        assert r.retention > 0.5
