"""The sessions layer: :class:`~session_migrator.SessionFitter`, one stored session fitted per
model, cached and logged, what the framework adapters read; and
:class:`~session_migrator.Compactor`, which writes its summaries in the background, ahead of the
cut that needs them.

It imports the store, the migration layer and those under them only.
"""
