"""An MCP server (Python `mcp` SDK, low-level API) whose `tools/list` marks a tool
internal the seed format's way, with `"_internal": true` beside its name rather than in its
`_meta`, and says how its list may be cached, for toolmux's upstream tests.

Usage: python marked_server.py [--http PORT] [--cache-scope public|private] [--ttl-ms N]
  --http PORT   serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio
  (cache defaults: public, 300000; the SDK requires both on a 2026-07-28 list)

Tools: search(query) answers "found: QUERY"; reset() (internal) answers "reset".
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
import mcp_types.methods
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

SIEVE = mcp_types.methods.serialize_server_result


def keep_marks(method: str, version: str, data: Any, **kwargs: Any) -> dict[str, Any]:
    """The SDK's last step before the wire, keeping the tools' top-level `_internal`, which it
    drops as a field MCP's schema does not have (a server on another stack sends it as is)."""
    shaped = SIEVE(method, version, data, **kwargs)
    if method == "tools/list":
        marks = {t["name"]: t["_internal"] for t in data.get("tools", []) if "_internal" in t}
        for tool in shaped.get("tools", []):
            if tool["name"] in marks:
                tool["_internal"] = marks[tool["name"]]
    return shaped


mcp_types.methods.serialize_server_result = keep_marks


def build(args: argparse.Namespace) -> Server:
    schema: dict[str, Any] = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    # As JSON, not `types.Tool`: MCP's `Tool` has no field for the mark.
    tools: list[dict[str, Any]] = [
        {"name": "search", "description": "Searches.", "inputSchema": schema},
        {
            "name": "reset",
            "description": "Resets everything; for the host only.",
            "inputSchema": {"type": "object", "properties": {}},
            "_internal": True,
        },
    ]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> dict[str, Any]:
        return {"resultType": "complete", "tools": tools, "cacheScope": args.cache_scope, "ttlMs": args.ttl_ms}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        text = f"found: {arguments.get('query', '')}" if params.name == "search" else "reset"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("marked", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--cache-scope", choices=["public", "private"], default="public")
    parser.add_argument("--ttl-ms", type=int, default=300_000)
    args = parser.parse_args()
    server = build(args)
    options = server.create_initialization_options(NotificationOptions())
    if args.http:
        import uvicorn

        app = server.streamable_http_app()
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=args.http, log_level="warning")).serve()
        return
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
