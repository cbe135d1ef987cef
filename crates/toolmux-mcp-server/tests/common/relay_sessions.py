"""An MCP server (Python `mcp` SDK, low-level API, stdio) for toolmux's per-client relay tests:
each process is one upstream session, and everything it answers names its process id, so a
test can tell which upstream session answered a client.

Usage: python relay_sessions.py
Tools:
  whoami  returns the process id
  level   returns the log level the server was last asked for ("unset" before any)
  emit    returns at once; 200 ms later, outside any request, sends a log message at each of
          debug, info, warning and error that the level asked for lets through (data:
          {"pid", "level"}), then `notifications/resources/updated` for each subscribed URI
Prompt `who`: one user message whose text is the process id.
Resource `session://state` (subscribable); reading it gives the process id.
Completion of any argument: the process id as the one value.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
URI = "session://state"


def build() -> Server:
    pid = str(os.getpid())
    state: dict[str, Any] = {"level": None, "subscribed": set(), "tasks": set()}
    tools = [
        types.Tool(name=name, description=text, input_schema=OBJECT)
        for name, text in [
            ("whoami", "Returns the process id."),
            ("level", "Returns the log level asked for."),
            ("emit", "Sends log messages and resource updates shortly after returning."),
        ]
    ]

    async def later(session: Any) -> None:
        await anyio.sleep(0.2)
        floor = LEVELS.index(state["level"]) if state["level"] else 0
        for level in ["debug", "info", "warning", "error"]:
            if LEVELS.index(level) >= floor:
                await session.send_log_message(level, {"pid": pid, "level": level}, logger="relay")
        for uri in sorted(state["subscribed"]):
            await session.send_resource_updated(uri)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "whoami":
            text = pid
        elif params.name == "level":
            text = state["level"] or "unset"
        elif params.name == "emit":
            task = asyncio.get_running_loop().create_task(later(ctx.session))
            state["tasks"].add(task)
            task.add_done_callback(state["tasks"].discard)
            text = "scheduled"
        else:
            return types.CallToolResult(content=[types.TextContent(text="unknown tool")], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="who", description="Names the process.")])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        message = types.PromptMessage(role="user", content=types.TextContent(text=pid))
        return types.GetPromptResult(messages=[message])

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=URI, name="state")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), text=pid)])

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        state["subscribed"].add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        state["subscribed"].discard(str(params.uri))
        return types.EmptyResult()

    async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        return types.CompleteResult(completion=types.Completion(values=[pid]))

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        state["level"] = params.level
        return types.EmptyResult()

    with warnings.catch_warnings():
        # MCP logging is deprecated in the newest revision; toolmux speaks older ones.
        warnings.simplefilter("ignore")
        return Server(
            "relay-sessions",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_list_resources=list_resources,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_completion=complete,
            on_set_logging_level=set_level,
        )


async def main() -> None:
    server = build()
    options = server.create_initialization_options(NotificationOptions())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
