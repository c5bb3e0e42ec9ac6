"""The migration layer: the fit decision and the strategies. The engine behind every strategy
(``_engine``, its fast path ``_steady``, the system prompt's part ``_system``), the strategies
(``_strategies``), ``plan()`` and ``migrate()`` (``_migrate``) and the fit of a whole provider
request (``_request``).

It imports the recall layer and those under it only.
"""
