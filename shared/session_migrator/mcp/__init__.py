"""The MCP layer: what the MCP tools do, without MCP (``_tools``), the arguments they take and
check (``_arguments``), the answers they give, paged and JSON-ready (``_answers``), and their
output schemas (``_schemas``). The server itself is :mod:`session_migrator.mcp_server`.

It imports the sessions layer and those under it only.
"""
