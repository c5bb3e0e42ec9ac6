"""The MCP layer: what the MCP tools do, without MCP (``_tools``), and their output schemas
(``_schemas``). The server itself is :mod:`session_migrator.mcp_server`.

It imports the sessions layer and those under it only.
"""
