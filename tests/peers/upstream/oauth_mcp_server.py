"""An MCP server that checks OAuth tokens (the Python `mcp` SDK's resource-server support), for
toolmux's OAuth client tests, in front of the authorization server `oauth-server.mjs` runs.

Usage: python oauth_mcp_server.py --port PORT --issuer URL

It publishes its protected-resource metadata naming ISSUER, answers 401 with the
`WWW-Authenticate` challenge to a request without a valid token, and accepts a token only when
its signature checks against the issuer's JWKS, it has not expired, and the issuer's
introspection says it is active (so revoking the grant takes effect at once).
Tool: whoami() -> "signed in as SUBJECT".
"""

from __future__ import annotations

import argparse
import json
import urllib.parse
import urllib.request

import anyio
import jwt
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer


class Verifier:
    def active(self, token: str) -> bool:
        body = urllib.parse.urlencode({"token": token}).encode()
        with urllib.request.urlopen(f"{self.issuer}/introspect", data=body, timeout=10) as answer:
            return bool(json.load(answer).get("active"))

    def __init__(self, issuer: str, resource: str) -> None:
        self.issuer = issuer
        self.resource = resource
        self.keys = jwt.PyJWKClient(f"{issuer}/jwks")

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = self.keys.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["RS256"], options={"verify_aud": False})
        except jwt.PyJWTError:
            return None
        if not await anyio.to_thread.run_sync(self.active, token):
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "toolmux-test")),
            scopes=str(claims.get("scope") or "").split(),
            expires_at=claims.get("exp"),
            resource=self.resource,
            subject=claims.get("sub"),
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--issuer", required=True)
    args = parser.parse_args()
    resource = f"http://127.0.0.1:{args.port}/mcp"
    server = MCPServer(
        name="oauthy",
        # Its lists (one tool, no prompts or resources) are the same for every caller: public,
        # fresh for an hour (2026-07-28's caching hints; the SDK's default is private and stale
        # at once, which toolmux never writes to its cache file).
        cache_hints={
            method: CacheHint(ttl_ms=3_600_000, scope="public")
            for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
        },
        token_verifier=Verifier(args.issuer, resource),
        auth=AuthSettings(
            issuer_url=args.issuer, resource_server_url=resource, validate_token_resource=True
        ),
    )

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Who the token says the caller is."""
        return "signed in"

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
