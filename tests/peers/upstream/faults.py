"""An MCP server (Python `mcp` SDK, low-level API) that misbehaves on request, for toolmux's
upstream fault tests.

Usage: python faults.py [options]
  --http PORT          serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio
  --fail-start TEXT    print TEXT on stderr and exit 2 before the handshake
  --page-size N        list tools N per page (default: all in one page)
  --endless-pages      every tools/list page names a next cursor (a paging bug)
  --malformed-schema   add a tool whose input schema is not valid JSON Schema
  --pid-file PATH      write the process id to PATH at start
  --cancel-file PATH   `hang` writes "cancelled" to PATH when the client cancels it

Tools: echo(text), crash(), hang(), huge(bytes), kinds(), fail(), grow(), slow(ms), pid().
The server's version is empty, as Python servers often send. Its tool list is public and
fresh for an hour (2026-07-28's caching hints).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
WAV_EMPTY = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--fail-start")
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--endless-pages", action="store_true")
    parser.add_argument("--malformed-schema", action="store_true")
    parser.add_argument("--pid-file")
    parser.add_argument("--cancel-file")
    return parser.parse_args()


def obj(properties: dict[str, Any] | None = None, required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    return schema


def build(args: argparse.Namespace) -> Server:
    tools: list[types.Tool] = [
        types.Tool(
            name="echo",
            description="Echoes its text.",
            input_schema={
                "$schema": "http://json-schema.org/draft-07/schema#",
                **obj({"text": {"type": "string"}}, ["text"]),
            },
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(name="crash", description="Exits the process in the middle of the call.", input_schema=obj()),
        types.Tool(name="hang", description="Never answers.", input_schema=obj()),
        types.Tool(
            name="huge",
            description="Returns a text of the given size.",
            input_schema=obj({"bytes": {"type": "integer"}}, ["bytes"]),
        ),
        types.Tool(
            name="kinds",
            description="Returns every kind of content and structured content.",
            input_schema=obj(),
            output_schema=obj({"ok": {"type": "boolean"}}, ["ok"]),
        ),
        types.Tool(name="fail", description="Returns a tool error.", input_schema=obj()),
        types.Tool(name="grow", description="Adds a tool and says the list changed.", input_schema=obj()),
        types.Tool(
            name="slow",
            description="Answers after a pause.",
            input_schema=obj({"ms": {"type": "integer"}}, ["ms"]),
        ),
        types.Tool(name="pid", description="Returns the process id.", input_schema=obj()),
    ]
    if args.malformed_schema:
        tools.append(
            types.Tool(
                name="malformed",
                description="Declares an input schema that is not valid JSON Schema.",
                input_schema={"type": "object", "properties": {"a": {"type": "strng"}}},
            )
        )
    grown = 0

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        cursor = params.cursor if params else None
        if args.endless_pages:
            n = int(cursor or "0")
            return types.ListToolsResult(tools=tools[:1] if n == 0 else [], next_cursor=str(n + 1))
        if not args.page_size:
            return types.ListToolsResult(tools=tools)
        start = int(cursor or "0")
        end = start + args.page_size
        return types.ListToolsResult(
            tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        nonlocal grown
        arguments = params.arguments or {}
        name = params.name
        if name == "echo":
            return types.CallToolResult(content=[types.TextContent(text=str(arguments.get("text", "")))])
        if name == "crash":
            sys.stderr.write("faults: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        if name == "hang":
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                if args.cancel_file:
                    with open(args.cancel_file, "w") as f:
                        f.write("cancelled")
                raise
        if name == "huge":
            return types.CallToolResult(content=[types.TextContent(text="x" * int(arguments["bytes"]))])
        if name == "kinds":
            return types.CallToolResult(
                content=[
                    types.TextContent(text="text", annotations=types.Annotations(audience=["user"])),
                    types.ImageContent(data=PNG_1PX, mime_type="image/png"),
                    types.AudioContent(data=WAV_EMPTY, mime_type="audio/wav"),
                    types.ResourceLink(uri="file:///tmp/a.txt", name="a.txt", mime_type="text/plain"),
                    types.EmbeddedResource(
                        resource=types.TextResourceContents(uri="file:///tmp/b.txt", text="b", mime_type="text/plain")
                    ),
                ],
                structured_content={"ok": True},
            )
        if name == "fail":
            return types.CallToolResult(content=[types.TextContent(text="it went wrong")], is_error=True)
        if name == "grow":
            grown += 1
            tools.append(types.Tool(name=f"extra_{grown}", description="Added later.", input_schema=obj()))
            await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[types.TextContent(text=f"extra_{grown}")])
        if name == "slow":
            await anyio.sleep(int(arguments["ms"]) / 1000)
            return types.CallToolResult(content=[types.TextContent(text="done")])
        if name == "pid":
            return types.CallToolResult(content=[types.TextContent(text=str(os.getpid()))])
        return types.CallToolResult(content=[types.TextContent(text=f"unknown tool {name}")], is_error=True)

    # Its list is the same for every caller and changes only with a notice (`grow`): public, and
    # fresh for an hour (2026-07-28's caching hints; the SDK's default is private and stale at
    # once, which toolmux never writes to its cache file).
    hints = {"tools/list": CacheHint(ttl_ms=3_600_000, scope="public")}
    return Server("faults", cache_hints=hints, on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    args = parse_args()
    if args.fail_start:
        sys.stderr.write(args.fail_start + "\n")
        sys.exit(2)
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(os.getpid()))
    server = build(args)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    if args.http:
        import uvicorn

        app = server.streamable_http_app()
        config = uvicorn.Config(app, host="127.0.0.1", port=args.http, log_level="warning")
        await uvicorn.Server(config).serve()
        return
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
