"""The sessions layer: :class:`~session_migrator.SessionFitter`, one stored session fitted per
model, cached and logged, what the framework adapters read.

It imports the store, the migration layer and those under them only.
"""
