"""A real MCP client (the Python `mcp` SDK) that toolmux's tests drive.

Usage: python client.py PLAN_JSON

PLAN_JSON is an object:
  {"transport": "stdio", "command": "...", "args": [...], "env": {...}, "cwd": "..."}
  or {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "headers": {...}}
  plus
  "mode": how the client negotiates, the SDK's `Client(mode=...)`: "legacy" (the default here:
      the `initialize` handshake of 2025-11-25, the era most tests are about) or "auto" (the
      SDK's own default: `server/discover` first, so 2026-07-28 with a server that speaks it)
  "elicitation": a list of answers, used in order, one per elicitation request:
      "allow_once" | "allow_session" | "deny" | "decline" | "cancel", or an object, which is
      accepted as the form's content, or "wait": the form stays open until the server withdraws
      it (`notifications/cancelled`), as a person who has not answered yet
      (absent: the client declares no elicitation capability)
  "sampling": the text the client's "model" answers every sampling request with
      (absent: the client declares no sampling capability)
  "steps": a list of
      {"op": "list"}                           -> {"tools": [tool, ...]}   (tool as on the wire)
      {"op": "call", "name": N, "arguments": A} -> {"result": CallToolResult} or {"error": {...}}
          with "progress": true, the call sends a progress token and the outcome also has
          "progress": [params, ...] (every update received before the result)
      {"op": "prompts"}                        -> {"prompts": [prompt, ...]}
      {"op": "get_prompt", "name": N, "arguments": A} -> {"prompt": GetPromptResult} or {"error"}
      {"op": "resources"}                      -> {"resources": [...], "templates": [...]}
      {"op": "read", "uri": U}                 -> {"contents": [...]} or {"error": {...}}
      {"op": "subscribe" | "unsubscribe", "uri": U} -> {"ok": true} or {"error": {...}}
      {"op": "wait_updated", "uri": U, "timeout": S} -> {"updated": true|false}
      {"op": "complete", "ref": REF, "argument": {"name", "value"}} -> {"completion": {...}}
      {"op": "ping"}                           -> {"ok": true}
      {"op": "set_level", "level": L}          -> {"ok": true}
      {"op": "signal", "text": T}              -> {"signal": T}  (the test reacts to it)
      {"op": "wait_list_changed", "timeout": S} -> {"list_changed": true|false}
      {"op": "wait_resources_changed", "timeout": S} -> {"resources_changed": true|false}
          (like wait_list_changed, for notifications/resources/list_changed)
      {"op": "listen", "timeout": S, "resources": [U, ...]} -> {"listening": SubscriptionFilter}
          once the server acknowledged a `subscriptions/listen` for tool list changes (and the
          resources named, if any) (2026-07-28), then {"event": "ToolsListChanged" |
          "ResourceUpdated" | None} for the first change within S seconds; {"error": {...}}
          when the server refuses the request (before or after its acknowledgment)
      {"op": "wait_logs", "count": N, "timeout": S} -> {"logs": [params, ...]}  (log messages
          may travel on another HTTP stream than the call's result, so they can arrive after it)

Each step's outcome is printed as one JSON line on stdout as soon as it is known, so that a test
can react to a `signal` while the client stays connected. The first line describes the
connection: {"connected": {"protocolVersion": ..., "serverInfo": ..., "capabilities": ...}}.
The last line is {"done": {"elicitations": [...], "elicitation_ids": [...], "withdrawn": [...],
"logs": [...], "samplings": [...]}}: the forms asked, their request ids, and the ids of the "wait"
requests the server's `notifications/cancelled` named (over HTTP only: read off the wire).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.exceptions import MCPError


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class CancelRecorder(httpx2.AsyncBaseTransport):
    """Passes every exchange through, noting the request id of each `notifications/cancelled`
    the server sends on a response stream."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, seen: list[Any]) -> None:
        self.inner = inner
        self.seen = seen

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=CancelScanner(response.stream, self.seen),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


class CancelScanner(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, seen: list[Any]) -> None:
        self.inner = inner
        self.seen = seen

    async def __aiter__(self) -> Any:
        pending = b""
        async for chunk in self.inner:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not line.startswith(b"data:"):
                    continue
                try:
                    message = json.loads(line[5:])
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("method") == "notifications/cancelled":
                    self.seen.append((message.get("params") or {}).get("requestId"))
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(plan: dict[str, Any]) -> None:
    answers: list[str] = list(plan.get("elicitation") or [])
    elicitations: list[dict[str, Any]] = []
    elicitation_ids: list[Any] = []
    # The request ids named by the server's notifications/cancelled, read off the wire: the SDK
    # applies them itself and hands none to the message handler.
    withdrawn: list[Any] = []
    samplings: list[dict[str, Any]] = []
    logs: list[Any] = []
    updated: list[str] = []
    state = {"list_changed": anyio.Event(), "resources_changed": anyio.Event()}

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        elicitations.append(dump(params))
        elicitation_ids.append(context.request_id)
        answer = answers.pop(0) if answers else "cancel"
        if answer == "wait":
            # Cancelled by the SDK when the server withdraws the form (or the connection ends).
            await anyio.sleep_forever()
        if isinstance(answer, dict):
            return types.ElicitResult(action="accept", content=answer)
        if answer in ("decline", "cancel"):
            return types.ElicitResult(action=answer)
        return types.ElicitResult(action="accept", content={"decision": answer})

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        samplings.append(dump(params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=plan["sampling"]),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            state["list_changed"].set()
        if isinstance(message, types.ResourceListChangedNotification):
            state["resources_changed"].set()
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))

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
        # The SDK's client (its timeouts), over a transport that notes the server's cancels.
        http = httpx2.AsyncClient(
            headers=plan.get("headers"),
            timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            transport=CancelRecorder(httpx2.AsyncHTTPTransport(), withdrawn),
        )
        server = streamable_http_client(plan["url"], http_client=http)

    kwargs: dict[str, Any] = {
        "message_handler": on_message,
        "logging_callback": on_log,
        "cache": None,
        "mode": plan.get("mode", "legacy"),
    }
    if "elicitation" in plan:
        kwargs["elicitation_callback"] = on_elicit
    if "sampling" in plan:
        kwargs["sampling_callback"] = on_sample

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
                progress: list[dict[str, Any]] = []

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    progress.append({"progress": value, "total": total, "message": message})

                callback = on_progress if step.get("progress") else None
                try:
                    result = await client.call_tool(
                        step["name"], step.get("arguments") or {}, progress_callback=callback
                    )
                    outcome: dict[str, Any] = {"result": dump(result)}
                except MCPError as e:
                    outcome = {"error": {"code": e.code, "message": e.message}}
                if step.get("progress"):
                    outcome["progress"] = list(progress)
                emit(outcome)
            elif op == "prompts":
                emit({"prompts": [dump(p) for p in (await client.list_prompts()).prompts]})
            elif op == "get_prompt":
                try:
                    got = await client.get_prompt(step["name"], step.get("arguments"))
                    emit({"prompt": dump(got)})
                except MCPError as e:
                    emit({"error": {"code": e.code, "message": e.message}})
            elif op == "resources":
                resources = (await client.list_resources()).resources
                templates = (await client.list_resource_templates()).resource_templates
                emit({"resources": [dump(r) for r in resources], "templates": [dump(t) for t in templates]})
            elif op == "read":
                try:
                    read = await client.read_resource(step["uri"])
                    emit({"contents": [dump(c) for c in read.contents]})
                except MCPError as e:
                    emit({"error": {"code": e.code, "message": e.message}})
            elif op in ("subscribe", "unsubscribe"):
                try:
                    if op == "subscribe":
                        await client.subscribe_resource(step["uri"])
                    else:
                        await client.unsubscribe_resource(step["uri"])
                    emit({"ok": True})
                except MCPError as e:
                    emit({"error": {"code": e.code, "message": e.message}})
            elif op == "wait_updated":
                with anyio.move_on_after(step.get("timeout", 10)):
                    while step["uri"] not in updated:
                        await anyio.sleep(0.01)
                emit({"updated": step["uri"] in updated})
                updated.clear()
            elif op == "complete":
                ref = step["ref"]
                if ref["type"] == "ref/prompt":
                    reference: Any = types.PromptReference(type="ref/prompt", name=ref["name"])
                else:
                    reference = types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
                completed = await client.complete(reference, step["argument"])
                emit({"completion": dump(completed.completion)})
            elif op == "listen":
                try:
                    async with client.listen(
                        tools_list_changed=True, resource_subscriptions=step.get("resources", ())
                    ) as subscription:
                        emit({"listening": dump(subscription.honored)})
                        event: Any = None
                        with anyio.move_on_after(step.get("timeout", 10)):
                            event = await subscription.__anext__()
                        emit({"event": type(event).__name__ if event is not None else None})
                except MCPError as e:
                    emit({"error": {"code": e.code, "message": e.message}})
                except SubscriptionLost as e:
                    # The server ended the stream after its acknowledgment with an error.
                    cause = e.__cause__
                    if not isinstance(cause, MCPError):
                        raise
                    emit({"error": {"code": cause.code, "message": cause.message}})
            elif op == "ping":
                await client.send_ping()
                emit({"ok": True})
            elif op == "set_level":
                await client.set_logging_level(step["level"])
                emit({"ok": True})
            elif op == "signal":
                state["list_changed"] = anyio.Event()
                state["resources_changed"] = anyio.Event()
                emit({"signal": step["text"]})
            elif op == "wait_list_changed":
                with anyio.move_on_after(step.get("timeout", 10)):
                    await state["list_changed"].wait()
                emit({"list_changed": state["list_changed"].is_set()})
            elif op == "wait_resources_changed":
                with anyio.move_on_after(step.get("timeout", 10)):
                    await state["resources_changed"].wait()
                emit({"resources_changed": state["resources_changed"].is_set()})
            elif op == "wait_logs":
                with anyio.move_on_after(step.get("timeout", 10)):
                    while len(logs) < step.get("count", 1):
                        await anyio.sleep(0.01)
                emit({"logs": list(logs)})
            else:
                raise ValueError(f"unknown step {op!r}")
    emit(
        {
            "done": {
                "elicitations": elicitations,
                "elicitation_ids": elicitation_ids,
                "withdrawn": withdrawn,
                "logs": logs,
                "samplings": samplings,
            }
        }
    )


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: client.py PLAN_JSON")
    anyio.run(run, json.loads(sys.argv[1]))


if __name__ == "__main__":
    main()
