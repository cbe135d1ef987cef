"""An MCP server (Python `mcp` SDK, low-level API) serving whatever tools a JSON file lists,
for discovery mode's tests: a big catalog spread over several real upstream processes.

Usage: python catalog.py TOOLS_JSON
  TOOLS_JSON   a file holding a list of {"name", "description", "inputSchema"}

Every tool answers with the JSON text {"tool": NAME, "arguments": ARGUMENTS}: what it received.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server


def build(path: str) -> Server:
    with open(path) as f:
        listed = json.load(f)
    tools = [
        types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
        for t in listed
    ]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        received = {"tool": params.name, "arguments": params.arguments or {}}
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(received, sort_keys=True))])

    return Server("catalog", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build(sys.argv[1])
    options = server.create_initialization_options(NotificationOptions())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
