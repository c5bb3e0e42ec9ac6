"""The ModelWindow record and the token budget derived from it.

Kept apart from the lookup (``_models``) so that counting and fitting depend only on these facts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["DEFAULT_OUTPUT_FRACTION", "DEFAULT_SAFETY_MARGIN", "Budget", "ModelWindow"]

#: Reserved output is capped at this share of the window by default.
DEFAULT_OUTPUT_FRACTION = 0.25
#: When counts are estimates, this share of the budget is held back as a safety margin.
DEFAULT_SAFETY_MARGIN = 0.05


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """What is known about one model's context window.

    ``context_window`` is the total window (input plus output); ``max_input_tokens`` is the input
    cap, which is smaller for some models (gpt-5: 272,000 of 400,000). ``tokenizer`` names the
    encoding (``o200k_base``, ``cl100k_base``) or an estimated family (``claude``, ``gemini``, ...).
    ``source`` says where the facts came from (``explicit``, ``override``, ``profile``,
    ``metadata``, ``cache:<url>``, ``bundled:<origin>``) and ``as_of`` when they were gathered;
    ``ref`` names the bundled row or the provider's listing they were read from (``models.dev:
    providers/github-copilot/models/claude-sonnet-4``), ``""`` where there is none.

    >>> w = ModelWindow("gpt-4o", "openai", 128_000, 128_000, 16_384, "o200k_base", "explicit")
    >>> w.context_window
    128000
    """

    name: str
    provider: str
    context_window: int
    max_input_tokens: int
    max_output_tokens: int | None
    tokenizer: str
    source: str
    as_of: str = ""
    ref: str = ""

    def __post_init__(self) -> None:
        if self.context_window <= 0 or self.max_input_tokens <= 0:
            raise ValueError(
                f"model {self.name!r}: context_window and max_input_tokens must be positive"
            )
        if self.max_output_tokens is not None and self.max_output_tokens < 0:
            raise ValueError(f"model {self.name!r}: max_output_tokens must not be negative")

    def with_changes(self, **changes: object) -> ModelWindow:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Budget:
    """The input token budget for one target model.

    ``tokens = min(max_input_tokens, context_window - reserved_output) - safety_margin``; the
    margin is non-zero only when counts are estimates. A ``cap`` (e.g. a framework's own limit
    on the history's tokens) lowers ``tokens`` to at most itself.
    """

    tokens: int
    context_window: int
    max_input_tokens: int
    reserved_output: int
    safety_margin: int

    @classmethod
    def for_window(
        cls,
        window: ModelWindow,
        *,
        exact: bool,
        reserve_output: int | None = None,
        safety_margin: float = DEFAULT_SAFETY_MARGIN,
        output_fraction: float = DEFAULT_OUTPUT_FRACTION,
        extra_reserved: int = 0,
        cap: int | None = None,
    ) -> Budget:
        """The budget for ``window``.

        ``reserve_output`` defaults to the model's max output capped at ``output_fraction`` of
        the window. ``extra_reserved`` (e.g. tokens a framework adds: a retrieved context, a
        tool schema) is taken off as well. ``cap``: the budget is at most this many tokens.
        """
        if reserve_output is None:
            most = int(window.context_window * output_fraction)
            out = window.max_output_tokens if window.max_output_tokens is not None else most
            reserve_output = min(out, most)
        for label, value in (
            ("reserve_output", reserve_output),
            ("extra_reserved", extra_reserved),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{label} must be a whole number of tokens, got {value!r}")
            if value < 0:
                raise ValueError(f"{label} must not be negative, got {value}")
        if not 0 <= safety_margin < 1:
            raise ValueError(
                f"safety_margin must be a share from 0 to below 1, got {safety_margin}"
            )
        raw = min(window.max_input_tokens, window.context_window - reserve_output) - extra_reserved
        margin = 0 if exact else int(raw * safety_margin)
        tokens = max(0, raw - margin)
        return cls(
            tokens=min(tokens, max(0, cap)) if cap is not None else tokens,
            context_window=window.context_window,
            max_input_tokens=window.max_input_tokens,
            reserved_output=reserve_output,
            safety_margin=margin,
        )
