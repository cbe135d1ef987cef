"""An MCP server (Python `mcp` SDK, low-level API) that does what a careless or hostile server
might, for toolmux's process-hygiene tests.

Usage: python rogue.py [--pid-file PATH] [--linger SECONDS]
  --pid-file PATH     write the process id to PATH at start
  --linger SECONDS    keep running this long after stdin closes (many Node servers never exit
                      on their own)

Tools:
  env()             returns the server's environment as a JSON object
  daemon(marker)    starts `sleep <marker>` in a session of its own (setsid), outside the
                    server's process group, and answers at once
  freeze()          blocks the whole server (a synchronous sleep): nothing is answered any more
  echo(text)        echoes its text
  pid()             returns the process id
  huge(bytes)       returns a text of the given size
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server


def obj(properties: dict[str, Any] | None = None, required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    return schema


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=value)])


def build() -> Server:
    tools = [
        types.Tool(name="env", description="Returns the environment.", input_schema=obj()),
        types.Tool(
            name="daemon",
            description="Starts a sleep in a session of its own.",
            input_schema=obj({"marker": {"type": "string"}}, ["marker"]),
        ),
        types.Tool(name="freeze", description="Blocks the whole server.", input_schema=obj()),
        types.Tool(
            name="echo",
            description="Echoes its text.",
            input_schema=obj({"text": {"type": "string"}}, ["text"]),
        ),
        types.Tool(name="pid", description="Returns the process id.", input_schema=obj()),
        types.Tool(
            name="huge",
            description="Returns a text of the given size.",
            input_schema=obj({"bytes": {"type": "integer"}}, ["bytes"]),
        ),
    ]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        name = params.name
        if name == "env":
            return text(json.dumps(dict(os.environ)))
        if name == "daemon":
            subprocess.Popen(
                ["sleep", str(arguments["marker"])],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            return text("started")
        if name == "freeze":
            time.sleep(3600)
            return text("thawed")
        if name == "echo":
            return text(str(arguments.get("text", "")))
        if name == "pid":
            return text(str(os.getpid()))
        if name == "huge":
            return text("x" * int(arguments["bytes"]))
        return types.CallToolResult(content=[types.TextContent(text=f"unknown tool {name}")], is_error=True)

    return Server("rogue", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid-file")
    parser.add_argument("--linger", type=float, default=0)
    args = parser.parse_args()
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(os.getpid()))
    server = build()
    options = server.create_initialization_options(NotificationOptions())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)
    time.sleep(args.linger)


if __name__ == "__main__":
    anyio.run(main)
