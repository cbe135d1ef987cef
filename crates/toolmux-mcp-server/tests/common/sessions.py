"""An MCP server (Python `mcp` SDK, low-level API, stdio) for toolmux's per-client session
tests: each process is one upstream session, so its process id names the session.

Usage: python sessions.py --meet DIR
Tools:
  whoami  returns the process id
  ask     waits until two processes are in `ask` at once (each leaves a file in DIR, so the
          calls provably overlap), then asks its client for a name by elicitation and returns
          "PID:NAME"
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def build(meet: str) -> Server:
    tools = [
        types.Tool(name="whoami", description="Returns the process id.", input_schema=OBJECT),
        types.Tool(name="ask", description="Asks the client for a name.", input_schema=OBJECT),
    ]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        pid = os.getpid()
        if params.name == "whoami":
            return types.CallToolResult(content=[types.TextContent(text=str(pid))])
        if params.name == "ask":
            open(os.path.join(meet, str(pid)), "w").close()
            with anyio.move_on_after(15):
                while len(os.listdir(meet)) < 2:
                    await anyio.sleep(0.05)
            answer = await ctx.session.elicit(
                "Who are you?",
                {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            )
            name = (answer.content or {}).get("name", answer.action)
            return types.CallToolResult(content=[types.TextContent(text=f"{pid}:{name}")])
        return types.CallToolResult(content=[types.TextContent(text="unknown tool")], is_error=True)

    return Server("sessions", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--meet", required=True)
    args = parser.parse_args()
    server = build(args.meet)
    options = server.create_initialization_options(NotificationOptions())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
