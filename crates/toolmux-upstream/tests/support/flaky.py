"""An MCP server (Python `mcp` SDK, low-level API) that crashes in the middle of a call on its
first run and works on the next, for toolmux's retry tests; it also marks tools internal.

Usage: python flaky.py --marker PATH --received PATH [--http PORT]
  --marker PATH    a call of `lookup`, `tally` or `touch` exits the process mid-call while PATH
                   does not exist (creating it first), so the first run crashes and the next
                   one (restarted, with PATH present) answers
  --received PATH  every call received is appended to PATH as one line (its tool's name), so a
                   test counts what the server got, not what toolmux says it sent
  --http PORT      serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio

Tools: lookup (readOnlyHint), tally (idempotentHint), touch (no hints), pid,
secret_get (`_meta._internal: true`), admin_reset (internal only by toolmux's configuration).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def build(args: argparse.Namespace) -> Server:
    tools = [
        types.Tool(
            name="lookup",
            description="Reads something; crashes on the first run.",
            input_schema=OBJECT,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name="tally",
            description="Sets a value; crashes on the first run.",
            input_schema=OBJECT,
            annotations=types.ToolAnnotations(idempotent_hint=True),
        ),
        types.Tool(name="touch", description="Changes something; crashes on the first run.", input_schema=OBJECT),
        types.Tool(name="pid", description="Returns the process id.", input_schema=OBJECT),
        types.Tool(
            name="secret_get",
            description="For the host only.",
            input_schema=OBJECT,
            meta={"_internal": True},
        ),
        types.Tool(name="admin_reset", description="Internal by configuration.", input_schema=OBJECT),
    ]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        with open(args.received, "a") as f:
            f.write(name + "\n")
        if name in ("lookup", "tally", "touch"):
            if not os.path.exists(args.marker):
                open(args.marker, "w").close()
                sys.stderr.write("flaky: crashing in the middle of a call\n")
                sys.stderr.flush()
                os._exit(3)
            return types.CallToolResult(content=[types.TextContent(text=f"{name} after restart")])
        if name == "pid":
            return types.CallToolResult(content=[types.TextContent(text=str(os.getpid()))])
        return types.CallToolResult(content=[types.TextContent(text=f"{name} ran")])

    return Server("flaky", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--marker", required=True)
    parser.add_argument("--received", required=True)
    parser.add_argument("--http", type=int)
    args = parser.parse_args()
    server = build(args)
    if args.http:
        import uvicorn

        app = server.streamable_http_app()
        config = uvicorn.Config(app, host="127.0.0.1", port=args.http, log_level="warning")
        await uvicorn.Server(config).serve()
        return
    options = server.create_initialization_options(NotificationOptions())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
