"""A real MCP client (the Python `mcp` SDK) that toolmux's tests drive.

Usage: python client.py PLAN_JSON

PLAN_JSON is an object:
  {"transport": "stdio", "command": "...", "args": [...], "env": {...}, "cwd": "..."}
  or {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "headers": {...}}
  plus
  "elicitation": a list of answers, used in order, one per elicitation request:
      "allow_once" | "allow_session" | "deny" | "decline" | "cancel"
      (absent: the client declares no elicitation capability)
  "steps": a list of
      {"op": "list"}                           -> {"tools": [tool, ...]}   (tool as on the wire)
      {"op": "call", "name": N, "arguments": A} -> {"result": CallToolResult} or {"error": {...}}
      {"op": "ping"}                           -> {"ok": true}
      {"op": "set_level", "level": L}          -> {"ok": true}
      {"op": "signal", "text": T}              -> {"signal": T}  (the test reacts to it)
      {"op": "wait_list_changed", "timeout": S} -> {"list_changed": true|false}
      {"op": "wait_logs", "count": N, "timeout": S} -> {"logs": [params, ...]}  (log messages
          may travel on another HTTP stream than the call's result, so they can arrive after it)

Each step's outcome is printed as one JSON line on stdout as soon as it is known, so that a test
can react to a `signal` while the client stays connected. The first line describes the
connection: {"connected": {"protocolVersion": ..., "serverInfo": ..., "capabilities": ...}}.
The last line is {"done": {"elicitations": [...], "logs": [...]}}.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(plan: dict[str, Any]) -> None:
    answers: list[str] = list(plan.get("elicitation") or [])
    elicitations: list[dict[str, Any]] = []
    logs: list[Any] = []
    list_changed = anyio.Event()
    state = {"list_changed": list_changed}

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        elicitations.append(dump(params))
        answer = answers.pop(0) if answers else "cancel"
        if answer in ("decline", "cancel"):
            return types.ElicitResult(action=answer)
        return types.ElicitResult(action="accept", content={"decision": answer})

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            state["list_changed"].set()

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(dump(params))

    if plan["transport"] == "stdio":
        server: Any = StdioServerParameters(
            command=plan["command"],
            args=plan.get("args", []),
            env=plan.get("env"),
            cwd=plan.get("cwd"),
        )
    else:
        http = create_mcp_http_client(headers=plan.get("headers"))
        server = streamable_http_client(plan["url"], http_client=http)

    kwargs: dict[str, Any] = {
        "message_handler": on_message,
        "logging_callback": on_log,
        "cache": None,
    }
    if "elicitation" in plan:
        kwargs["elicitation_callback"] = on_elicit

    async with Client(server, **kwargs) as client:
        emit(
            {
                "connected": {
                    "protocolVersion": client.protocol_version,
                    "serverInfo": dump(client.server_info) if client.server_info else None,
                    "capabilities": dump(client.server_capabilities),
                    "instructions": client.instructions,
                }
            }
        )
        for step in plan.get("steps", []):
            op = step["op"]
            if op == "list":
                result = await client.list_tools()
                emit({"tools": [dump(t) for t in result.tools]})
            elif op == "call":
                try:
                    result = await client.call_tool(step["name"], step.get("arguments") or {})
                    emit({"result": dump(result)})
                except MCPError as e:
                    emit({"error": {"code": e.code, "message": e.message}})
            elif op == "ping":
                await client.send_ping()
                emit({"ok": True})
            elif op == "set_level":
                await client.set_logging_level(step["level"])
                emit({"ok": True})
            elif op == "signal":
                state["list_changed"] = anyio.Event()
                emit({"signal": step["text"]})
            elif op == "wait_list_changed":
                with anyio.move_on_after(step.get("timeout", 10)):
                    await state["list_changed"].wait()
                emit({"list_changed": state["list_changed"].is_set()})
            elif op == "wait_logs":
                with anyio.move_on_after(step.get("timeout", 10)):
                    while len(logs) < step.get("count", 1):
                        await anyio.sleep(0.01)
                emit({"logs": list(logs)})
            else:
                raise ValueError(f"unknown step {op!r}")
    emit({"done": {"elicitations": elicitations, "logs": logs}})


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: client.py PLAN_JSON")
    anyio.run(run, json.loads(sys.argv[1]))


if __name__ == "__main__":
    main()
