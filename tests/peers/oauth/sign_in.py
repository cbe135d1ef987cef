"""The MCP Python SDK's client signing in to an OAuth-protected MCP server (toolmux with
`server.auth`) through the SDK's own `OAuthClientProvider`, then listing and calling tools.

    python sign_in.py '{"url": ".../mcp", "call": {"name": "...", "arguments": {...}}}'

The client is pre-registered at the authorization server (oauth2-mock-server accepts any client
id, and has no dynamic registration): its record is in the token storage from the start, as a
client configured with a client id would have it. The "browser" is an HTTP client that follows
the authorization URL; the mock server approves at once and redirects to the redirect URI with
the code, which is read from the `Location` header instead of being served.

Prints one JSON line per outcome: {"authorize": URL}, {"token": ...} (the access token, so the
test can check that toolmux never logs it), {"tools": [names]}, {"result": ...}.
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

REDIRECT_URI = "http://127.0.0.1:9/callback"
CLIENT_ID = "toolmux-test-client"


def emit(value: Any) -> None:
    print(json.dumps(value), flush=True)


class Storage:
    """Token storage in memory, holding the pre-registered client from the start."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id=CLIENT_ID,
            redirect_uris=[REDIRECT_URI],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        emit({"token": tokens.access_token, "scope": tokens.scope})

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def main(plan: dict[str, Any]) -> None:
    redirected: dict[str, str] = {}

    async def follow(url: str) -> None:
        """The person's browser: open the authorization URL, which redirects at once."""
        emit({"authorize": url})
        async with httpx2.AsyncClient(follow_redirects=False) as browser:
            response = await browser.get(url)
        location = response.headers.get("location")
        if response.status_code not in (302, 303) or not location:
            raise RuntimeError(f"the authorization server answered {response.status_code}: {response.text}")
        query = parse_qs(urlparse(location).query)
        redirected.update({k: v[0] for k, v in query.items()})

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=redirected["code"], state=redirected.get("state"), iss=redirected.get("iss")
        )

    provider = OAuthClientProvider(
        server_url=plan["url"],
        client_metadata=OAuthClientMetadata(
            client_name="toolmux test client",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=Storage(),
        redirect_handler=follow,
        callback_handler=callback,
    )
    http = create_mcp_http_client(auth=provider)
    async with Client(streamable_http_client(plan["url"], http_client=http), cache=None) as client:
        tools = await client.list_tools()
        emit({"tools": [t.name for t in tools.tools]})
        call = plan.get("call")
        if call:
            result = await client.call_tool(call["name"], call.get("arguments") or {})
            emit({"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))
