// A real OAuth 2 authorization server for toolmux's OAuth client tests: oauth2-mock-server
// (signed JWTs, JWKS, PKCE checked, refresh tokens, revocation and introspection endpoints),
// with three test behaviours on its hooks:
//   - access tokens live TOKEN_TTL seconds (default 3600), so a test can watch them expire;
//   - `POST /revoke` revokes the grant: introspection then says inactive and a refresh is
//     refused with `invalid_grant`, until a person signs in again (a new authorization code);
//   - every event is one JSON line appended to the file EVENTS (else stdout), tokens included
//     (this is a test fixture: the test needs them to prove toolmux never prints them).
// It listens on 127.0.0.1:PORT (default: any free port); the first event is
// {"event":"ready","issuer":"http://127.0.0.1:PORT"}.
import { appendFileSync } from "node:fs";
import { OAuth2Server } from "oauth2-mock-server";

const ttl = Number(process.env.TOKEN_TTL ?? "3600");
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
let revoked = false;
const say = (event) =>
  process.env.EVENTS
    ? appendFileSync(process.env.EVENTS, `${JSON.stringify(event)}\n`)
    : console.log(JSON.stringify(event));

server.service.on("beforeTokenSigning", (token) => {
  token.payload.exp = token.payload.iat + ttl;
});
server.service.on("beforeResponse", (response, req) => {
  const grant = req.body?.grant_type;
  if (grant === "refresh_token" && revoked) {
    response.statusCode = 400;
    response.body = { error: "invalid_grant", error_description: "the grant was revoked" };
  } else if (grant === "authorization_code") {
    revoked = false;
  }
  if (response.statusCode === 200) {
    response.body.expires_in = ttl;
  }
  say({
    event: "token",
    grant,
    status: response.statusCode,
    resource: req.body?.resource ?? null,
    access_token: response.body.access_token ?? null,
    refresh_token: response.body.refresh_token ?? null,
  });
});
server.service.on("beforeRevoke", () => {
  revoked = true;
  say({ event: "revoke" });
});
server.service.on("beforeIntrospect", (response) => {
  response.body = { active: !revoked };
});

await server.start(Number(process.env.PORT ?? "0"), "127.0.0.1");
const port = new URL(server.issuer.url).port;
server.issuer.url = `http://127.0.0.1:${port}`;
say({ event: "ready", issuer: server.issuer.url });
