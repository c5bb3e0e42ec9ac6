"""Calibration from an exact counter: measure a model's estimate against exact counts.

The counting layer's use of ``_calibration`` (which stores factors and sits below the counters):
count sample messages with an exact counter (an online count endpoint) and with the uncalibrated
estimate, and keep the ratio as the model's factor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from session_migrator.counting._calibration import calibration_factor, set_factor
from session_migrator.counting._counter import TokenCounter
from session_migrator.counting._tokens import counter_for
from session_migrator.messages._messages import Message
from session_migrator.models._table import bundled_name
from session_migrator.models._tokenizers import infer_tokenizer

__all__ = ["recalibrate_from_exact"]

_log = logging.getLogger("session_migrator.calibration")


def recalibrate_from_exact(
    model: str,
    exact_counter: TokenCounter,
    sample_messages: Sequence[Message],
    *,
    tokenizer: str | None = None,
    persist: bool = True,
) -> float:
    """Measure and set ``model``'s factor from an exact counter over ``sample_messages``.

    The factor is ``sum(exact) / sum(estimate)`` over the samples' texts, where the estimate is
    the uncalibrated estimating counter for ``tokenizer`` (default: guessed from the model name,
    e.g. ``claude`` or ``gemini``), so that ``counter_for(tokenizer, model=model)`` afterwards
    counts what the exact counter does on text like the samples. It replaces any earlier factor
    (a measurement, not an observation to average), clamped to [0.5, 2.0].

    If the exact counter fell back to an estimate for any sample (its ``exact`` is false after
    counting) or the samples hold no text, nothing changes and the current factor is returned.
    A few varied messages (prose, code, the user's language) of some hundred tokens suffice.
    """
    model = bundled_name(model)
    family = tokenizer or infer_tokenizer(model)
    estimate = counter_for(family)
    texts = [m.text for m in sample_messages if m.text.strip()]
    if not texts:
        return calibration_factor(model)
    exact_total = 0
    for text in texts:
        exact_total += exact_counter.count_text(text)
        if not exact_counter.exact:
            _log.warning("not recalibrating %s: the exact counter fell back to an estimate", model)
            return calibration_factor(model)
    estimate_total = sum(estimate.count_text(t) for t in texts)
    if exact_total <= 0 or estimate_total <= 0:
        return calibration_factor(model)
    return set_factor(model, exact_total / estimate_total, method="exact", persist=persist)
