"""The models layer: what a model name means. Its routing and bare form (``_names``), the
bundled table (``_table``), live windows from provider endpoints (``_live``, ``_live_sources``),
the window a local or self-hosted runtime serves and what it was seen to read (``_runtime``),
the window record and budget (``_windows``), the tokenizer a name implies (``_tokenizers``), how
a provider counts the output asked for (``_output``), and the one lookup that goes through them
in order (``_lookup``).

It imports the messages layer and the base modules only.
"""
