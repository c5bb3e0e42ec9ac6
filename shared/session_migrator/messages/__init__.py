"""The messages layer: :class:`~session_migrator.Message`, its parts (tool calls, content parts),
its ids, the limit on nested data, sessions, the OpenAI chat format, and the chat APIs' rules.

It imports only the base modules (errors); every other layer builds on it.
"""
