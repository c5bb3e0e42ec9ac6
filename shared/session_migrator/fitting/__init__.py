"""The fitting layer: the pieces every strategy fits with. A conversation as units and turns
(``_units``), the newest-suffix walk (``_fit``), the current turn's working set (``_working``),
the tiers that shrink old tool outputs (``_tiers``), cutting inside a message (``_truncate``,
``_sections``), the repairs of a conversation that fits (``_fits``), the lead message
(``_lead``) and what a strategy returns (``_result``).

It imports the summaries, counting, models, messages and base layers only.
"""
