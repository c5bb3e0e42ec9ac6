"""The summaries layer: what a cut part of a conversation becomes. The summarizer protocol and
the LLM summarizers (``_summarizers``), the offline extractive summary (``_extractive``, with its
outline, cues, notes and sentence scores) and the Markdown memory document (``_memory_doc``).

It imports the counting, models, messages and base layers only.
"""
