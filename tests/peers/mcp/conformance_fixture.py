"""Upstream MCP server carrying every fixture of the conformance suite's `active` server scenarios.

Usage:
  python conformance_fixture.py              serve one client over stdio (how toolmux starts it)
  python conformance_fixture.py --http PORT  serve streamable HTTP on http://127.0.0.1:PORT/mcp

The @modelcontextprotocol/conformance suite (server mode) expects fixture tools, resources and
prompts with fixed names (test_simple_text, test://static-text, test_simple_prompt, ...), and
checks behaviours that only make sense with a server behind them: log and progress
notifications during a tool call, sampling and elicitation requests sent back to the client,
resource subscriptions, completion. toolmux does not implement these itself; it relays them from
an upstream server. This file is that upstream server, so that running the suite against
`toolmux serve` exercises the relay end to end, while running it with `--http` checks the fixture
alone: every active scenario passes directly against it, so any failure through toolmux is the
relay's.

The low-level `Server` API is used throughout rather than `MCPServer`: several behaviours
(resources/subscribe, logging/setLevel, completion, server-to-client requests tied to the
inbound tool call) are only reachable there, and the fixture's value is in its exact wire
shapes, which the low-level handlers state literally instead of deriving them from Python
signatures (MCPServer would, for instance, add an outputSchema/structuredContent of its own).
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import struct
import sys
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import INVALID_PARAMS

# Logging, sampling and the 2025-era subscribe flow are deprecated by the SDK's newest protocol
# revision (2026-07-28), but they are exactly what the suite tests on the handshake-era
# protocol the suite speaks. The warnings would only clutter the stderr that toolmux captures.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

# The suite checks `error.code` nowhere, but a relay should see the spec's code for an unknown
# resource (-32002) so that it can be checked to pass through untouched.
RESOURCE_NOT_FOUND = -32002

# ---------------------------------------------------------------------------------------------
# Binary payloads. Valid media rather than placeholder bytes, so a relay or client that decodes
# them does not trip over garbage.

# A 1x1 transparent PNG.
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def _tiny_wav() -> str:
    """A 10 ms, 8 kHz, 8-bit mono silent WAV (tools-call-audio requires mimeType audio/wav)."""
    samples = b"\x80" * 80  # 8-bit PCM is unsigned: 0x80 is silence
    fmt = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, 8000, 8000, 1, 8)
    data = struct.pack("<4sI", b"data", len(samples)) + samples
    riff = struct.pack("<4sI4s", b"RIFF", 4 + len(fmt) + len(data), b"WAVE")
    return base64.b64encode(riff + fmt + data).decode()


WAV_SILENCE = _tiny_wav()

# ---------------------------------------------------------------------------------------------
# Fixture catalogue. Names, URIs and argument names are the ones the suite's scenarios use
# (see dist/index.js of @modelcontextprotocol/conformance 0.1.13); changing any of them fails
# the matching scenario.

STATIC_TEXT_URI = "test://static-text"
STATIC_BINARY_URI = "test://static-binary"
WATCHED_URI = "test://watched-resource"  # resources-subscribe / resources-unsubscribe
TEMPLATE_URI = "test://template/{id}/data"  # resources-templates-read reads test://template/123/data
TEMPLATE_RE = re.compile(r"^test://template/(?P<id>[^/]+)/data$")

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def _string_args(**props: str) -> dict[str, Any]:
    """An inputSchema of required string properties, `name=description`."""
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": desc} for name, desc in props.items()},
        "required": list(props),
    }


TOOLS = [
    types.Tool(name="test_simple_text", description="Returns a simple text content block", input_schema=NO_ARGS),
    types.Tool(name="test_image_content", description="Returns a PNG image content block", input_schema=NO_ARGS),
    types.Tool(name="test_audio_content", description="Returns a WAV audio content block", input_schema=NO_ARGS),
    types.Tool(
        name="test_embedded_resource", description="Returns an embedded text resource", input_schema=NO_ARGS
    ),
    types.Tool(
        name="test_multiple_content_types",
        description="Returns text, image and embedded resource content together",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_tool_with_logging",
        description="Sends three info log notifications while it runs",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_error_handling", description="Always fails with a tool error (isError)", input_schema=NO_ARGS
    ),
    types.Tool(
        name="test_tool_with_progress",
        description="Reports progress 0, 50, 100 of 100 against the caller's progressToken",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_sampling",
        description="Asks the client for an LLM completion (sampling/createMessage)",
        input_schema=_string_args(prompt="The prompt to send to the LLM"),
    ),
    types.Tool(
        name="test_elicitation",
        description="Asks the client for a username and email (elicitation/create)",
        input_schema=_string_args(message="The message to show the user"),
    ),
    types.Tool(
        name="test_elicitation_sep1034_defaults",
        description="Elicits a form whose fields all carry default values (SEP-1034)",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_elicitation_sep1330_enums",
        description="Elicits a form with every enum variant (SEP-1330)",
        input_schema=NO_ARGS,
    ),
    # The 2026-07-28 suite's input-required scenarios call these by name. This server speaks the
    # handshake era and elicits; toolmux puts the form to a 2026-07-28 client as an
    # input-required result of its own (its own key and requestState).
    *(
        types.Tool(name=name, description="Asks the client for a name (elicitation/create)", input_schema=NO_ARGS)
        for name in ("test_input_required_result_elicitation", "test_input_required_result_tampered_state")
    ),
    # From the suite's `pending` (not yet active) json-schema-2020-12 scenario, which fails if
    # $schema, $defs or additionalProperties go missing from the listed inputSchema: exactly
    # what a relay that re-serialises schemas through a typed model tends to strip.
    types.Tool(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        input_schema={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
    # Not used by the suite: lets a relay test provoke notifications/resources/updated on demand.
    types.Tool(
        name="test_update_watched_resource",
        description=f"Changes {WATCHED_URI} and notifies its subscribers (notifications/resources/updated)",
        input_schema=NO_ARGS,
    ),
]

RESOURCES = [
    types.Resource(
        uri=STATIC_TEXT_URI,
        name="static-text",
        description="A static text resource",
        mime_type="text/plain",
    ),
    types.Resource(
        uri=STATIC_BINARY_URI,
        name="static-binary",
        description="A static binary resource (a 1x1 PNG)",
        mime_type="image/png",
    ),
    types.Resource(
        uri=WATCHED_URI,
        name="watched-resource",
        description="A resource that can be subscribed to; test_update_watched_resource changes it",
        mime_type="text/plain",
    ),
]

RESOURCE_TEMPLATES = [
    types.ResourceTemplate(
        uri_template=TEMPLATE_URI,
        name="template-data",
        description="JSON data for the given id",
        mime_type="application/json",
    ),
]

PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt without arguments"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt that substitutes two arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource",
        arguments=[
            types.PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True),
        ],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt that carries an image"),
]

# Candidate values offered by completion/complete, per (reference, argument name). The suite
# only checks that a `completion.values` array comes back (for ref/prompt
# test_prompt_with_arguments, argument arg1, value "test"); real candidates make a relay test
# able to check that values travel back intact.
COMPLETIONS: dict[tuple[str, str, str], list[str]] = {
    ("ref/prompt", "test_prompt_with_arguments", "arg1"): ["paris", "park", "party", "test-value"],
    ("ref/prompt", "test_prompt_with_arguments", "arg2"): ["alpha", "beta", "gamma"],
    ("ref/resource", TEMPLATE_URI, "id"): ["1", "123", "456"],
}

# ---------------------------------------------------------------------------------------------
# Per-session state. Over stdio there is one client per process; over HTTP several sessions
# share the process (the suite opens a new one per scenario), so state is keyed by the
# Mcp-Session-Id header, which the SDK's stateful HTTP transport requires after initialize.

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class SessionState:
    def __init__(self) -> None:
        # None until logging/setLevel: the spec leaves the default to the server, and sending
        # everything keeps log relaying testable through an intermediary that never forwards
        # logging/setLevel.
        self.min_level: str | None = None
        self.subscriptions: set[str] = set()


_sessions: dict[str, SessionState] = {}
_watched_version = 0


def _state(ctx: Any) -> SessionState:
    headers = getattr(ctx.request, "headers", None)
    key = (headers.get("mcp-session-id") if headers is not None else None) or "stdio"
    return _sessions.setdefault(key, SessionState())


async def _log(ctx: Any, level: str, message: str) -> None:
    """Send notifications/message for this request, honouring the session's logging/setLevel."""
    floor = _state(ctx).min_level
    if floor is not None and LEVELS.index(level) < LEVELS.index(floor):
        return
    # related_request_id puts the notification on the tool call's own SSE response stream
    # (before the result), not the standalone GET stream, so the client sees it in order.
    await ctx.session.send_log_message(
        level=level, data=message, logger="conformance_fixture", related_request_id=ctx.request_id
    )


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG_1X1, mime_type="image/png")


def _embedded(uri: str, text: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(uri=uri, mime_type="text/plain", text=text),
    )


# ---------------------------------------------------------------------------------------------
# Tools


async def _sampling(ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
    caps = ctx.session.client_capabilities
    if caps is None or caps.sampling is None:
        return types.CallToolResult(content=[_text("The client does not support sampling")], is_error=True)
    result = await ctx.session.create_message(
        messages=[
            types.SamplingMessage(role="user", content=_text(str(args.get("prompt", "")))),
        ],
        max_tokens=100,
        # Tied to the tool call, so over HTTP the request rides the call's SSE stream and a
        # relay can attribute it to the call it must forward it to.
        related_request_id=ctx.request_id,
    )
    reply = result.content.text if isinstance(result.content, types.TextContent) else str(result.content)
    return types.CallToolResult(content=[_text(f"LLM response: {reply}")])


async def _elicit(ctx: Any, message: str, schema: dict[str, Any], label: str) -> types.CallToolResult:
    caps = ctx.session.client_capabilities
    if caps is None or caps.elicitation is None:
        return types.CallToolResult(content=[_text("The client does not support elicitation")], is_error=True)
    result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    content = json.dumps(result.content, sort_keys=True) if result.content is not None else "{}"
    return types.CallToolResult(content=[_text(f"{label}: action={result.action}, content={content}")])


# elicitation/create schemas. The suite answers with fixed content; the JS client it uses does
# not validate that content against the schema, but the enum members below include every value
# it sends, so a relay or client that does validate still accepts the answer:
#   test_elicitation                   {"username": "testuser", "email": "test@example.com"}
#   test_elicitation_sep1034_defaults  {"name": "Jane Smith", "age": 25, "score": 88,
#                                       "status": "inactive", "verified": false}
#   test_elicitation_sep1330_enums     {"untitledSingle": "option1", "titledSingle": "value1",
#                                       "legacyEnum": "opt1", "untitledMulti": ["option1", "option2"],
#                                       "titledMulti": ["value1", "value2"]}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

USER_INFO_SCHEMA = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

SEP1034_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

SEP1330_SCHEMA = {
    "type": "object",
    "properties": {
        # Each variant must keep its exact shape: the suite fails an untitled enum that carries
        # oneOf/enumNames, a titled one that carries enum, and so on.
        "untitledSingle": {
            "type": "string",
            "description": "Untitled single-select",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Titled single-select",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Legacy titled enum (deprecated enumNames)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Untitled multi-select",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Titled multi-select",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    global _watched_version
    args = params.arguments or {}
    match params.name:
        case "test_simple_text":
            return types.CallToolResult(content=[_text("This is a simple text response for testing.")])
        case "test_image_content":
            return types.CallToolResult(content=[_image()])
        case "test_audio_content":
            return types.CallToolResult(
                content=[types.AudioContent(type="audio", data=WAV_SILENCE, mime_type="audio/wav")]
            )
        case "test_embedded_resource":
            return types.CallToolResult(
                content=[_embedded("test://embedded-resource", "This is an embedded resource content.")]
            )
        case "test_multiple_content_types":
            return types.CallToolResult(
                content=[
                    _text("Multiple content types test:"),
                    _image(),
                    _embedded("test://mixed-content-resource", '{"test": "data", "value": 123}'),
                ]
            )
        case "test_tool_with_logging":
            # The delays make the three messages separate events on the wire, which is what the
            # scenario is after: a client (or relay) that only handles one notification per
            # request, or only those sent before it started reading, would miss some.
            await _log(ctx, "info", "Tool execution started")
            await anyio.sleep(0.05)
            await _log(ctx, "info", "Tool processing data")
            await anyio.sleep(0.05)
            await _log(ctx, "info", "Tool execution completed")
            return types.CallToolResult(content=[_text("Tool with logging executed successfully")])
        case "test_error_handling":
            # A tool-level failure: a successful JSON-RPC response with isError, not an error.
            return types.CallToolResult(
                content=[_text("This tool intentionally returns an error for testing")], is_error=True
            )
        case "test_tool_with_progress":
            # report_progress echoes the caller's _meta.progressToken verbatim (a no-op without
            # one) and sends on the call's own stream, ahead of the result. The JS client drops
            # its progress handler once the result arrives, so order matters.
            for step, progress in enumerate((0, 50, 100)):
                if step:
                    await anyio.sleep(0.05)
                await ctx.session.report_progress(progress, 100, f"Completed step {step + 1} of 3")
            return types.CallToolResult(content=[_text("Tool with progress executed successfully")])
        case "test_sampling":
            return await _sampling(ctx, args)
        case "test_elicitation":
            message = str(args.get("message", "Please provide your information"))
            return await _elicit(ctx, message, USER_INFO_SCHEMA, "User response")
        case "test_elicitation_sep1034_defaults":
            return await _elicit(
                ctx,
                "Test client default value handling - please accept with defaults",
                SEP1034_SCHEMA,
                "Elicitation completed",
            )
        case "test_elicitation_sep1330_enums":
            return await _elicit(
                ctx, "Test enum schema variants - please choose", SEP1330_SCHEMA, "Elicitation completed"
            )
        case "test_input_required_result_elicitation" | "test_input_required_result_tampered_state":
            return await _elicit(ctx, "What is your name?", NAME_SCHEMA, "Hello")
        case "json_schema_2020_12_tool":
            return types.CallToolResult(content=[_text(f"Received: {json.dumps(args, sort_keys=True)}")])
        case "test_update_watched_resource":
            _watched_version += 1
            state = _state(ctx)
            if WATCHED_URI in state.subscriptions:
                # Unsolicited by nature, so sent on the connection's standalone channel (the GET
                # SSE stream over HTTP), as a real server's change notifications would be.
                await ctx.session.send_resource_updated(WATCHED_URI)
            return types.CallToolResult(
                content=[
                    _text(
                        f"{WATCHED_URI} is now at version {_watched_version}; "
                        f"subscribed: {WATCHED_URI in state.subscriptions}"
                    )
                ]
            )
    raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name}")


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


# ---------------------------------------------------------------------------------------------
# Resources


async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_resource_templates(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=RESOURCE_TEMPLATES)


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == STATIC_TEXT_URI:
        contents: Any = types.TextResourceContents(
            uri=uri, mime_type="text/plain", text="This is the content of the static text resource."
        )
    elif uri == STATIC_BINARY_URI:
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG_1X1)
    elif uri == WATCHED_URI:
        contents = types.TextResourceContents(
            uri=uri, mime_type="text/plain", text=f"Watched resource, version {_watched_version}"
        )
    elif match := TEMPLATE_RE.match(uri):
        # The scenario only checks that the id shows up in the content.
        item_id = match["id"]
        body = {"id": item_id, "templateTest": True, "data": f"Data for ID: {item_id}"}
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(body))
    else:
        raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}", data={"uri": uri})
    return types.ReadResourceResult(contents=[contents])


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    # Any URI is accepted, like the scenario's description asks ("track subscribed URIs"); only
    # test://watched-resource ever changes.
    _state(ctx).subscriptions.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    _state(ctx).subscriptions.discard(str(params.uri))
    return types.EmptyResult()


# ---------------------------------------------------------------------------------------------
# Prompts


async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


def _require(args: dict[str, str], *names: str) -> None:
    missing = [name for name in names if name not in args]
    if missing:
        raise MCPError(code=INVALID_PARAMS, message=f"Missing required arguments: {', '.join(missing)}")


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    args = params.arguments or {}
    match params.name:
        case "test_simple_prompt":
            messages = [types.PromptMessage(role="user", content=_text("This is a simple prompt for testing."))]
        case "test_prompt_with_arguments":
            _require(args, "arg1", "arg2")
            text = f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'"
            messages = [types.PromptMessage(role="user", content=_text(text))]
        case "test_prompt_with_embedded_resource":
            _require(args, "resourceUri")
            messages = [
                types.PromptMessage(
                    role="user", content=_embedded(args["resourceUri"], "Embedded resource content for testing.")
                ),
                types.PromptMessage(role="user", content=_text("Please process the embedded resource above.")),
            ]
        case "test_prompt_with_image":
            messages = [
                types.PromptMessage(role="user", content=_image()),
                types.PromptMessage(role="user", content=_text("Please analyze the image above.")),
            ]
        case _:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
    return types.GetPromptResult(description=f"Fixture prompt {params.name}", messages=messages)


# ---------------------------------------------------------------------------------------------
# Completion and logging


async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
    ref = params.ref
    key = ref.name if isinstance(ref, types.PromptReference) else ref.uri
    candidates = COMPLETIONS.get((ref.type, key, params.argument.name), [])
    values = [v for v in candidates if v.startswith(params.argument.value)]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    _state(ctx).min_level = params.level
    return types.EmptyResult()


def build_server() -> Server[Any]:
    server: Server[Any] = Server(
        "toolmux-conformance-fixture",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )
    # Registered afterwards rather than as on_set_logging_level, which the SDK flags as
    # deprecated. Capabilities derive from registered handlers, so `logging` is still
    # advertised, like `completions` and `resources.subscribe` are.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_http(server: Server[Any], port: int) -> None:
    import uvicorn

    # Bound to 127.0.0.1, the SDK turns on its DNS-rebinding protection (Host/Origin checks),
    # which the suite's dns-rebinding-protection scenario requires. SSE responses (not plain
    # JSON) so that notifications and server-to-client requests can ride each POST's stream.
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT/mcp")
    options = parser.parse_args()
    server = build_server()
    if options.http is not None:
        serve_http(server, options.http)
    else:
        anyio.run(serve_stdio, server)


if __name__ == "__main__":
    sys.exit(main())
