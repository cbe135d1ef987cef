// A real OAuth 2 authorization server for the tests of `server.auth` (toolmux as a protected
// resource): oauth2-mock-server on 127.0.0.1, with a second one (the "rogue") whose tokens claim
// the first's issuer and key id but are signed with a key pair of their own.
//
//   node issuer.mjs [ALG]        (ALG: RS256 by default, ES256 or EdDSA)
//
// Prints one JSON line, {"issuer": URL, "rogue": URL, "kid": KID}, then serves until killed.
//
// What a test asks for rides on the token request, as an identity provider's configuration
// would decide it:
// - client credentials (`grant_type=client_credentials`): `aud` and `scope` from the body, as
//   oauth2-mock-server does, plus `expires_in` (seconds, negative for an expired token) and
//   `sub`;
// - authorization code (the MCP SDK's sign-in): `aud` is the audience given by AUDIENCE in the
//   environment, `scope` what the authorization request asked for, and `client_id` the client.
import { OAuth2Server } from "oauth2-mock-server";

const alg = process.argv[2] ?? "RS256";
const audience = process.env.AUDIENCE;

async function start() {
  const server = new OAuth2Server();
  await server.issuer.keys.generate(alg);
  await server.start(0, "127.0.0.1");
  return server;
}

const issuer = await start();
const rogue = await start();
const kid = issuer.issuer.keys.toJSON()[0].kid;

// The scope each authorization code was asked for, so that its token grants it.
const scopes = new Map();
issuer.service.on("beforeAuthorizeRedirect", (redirect, req) => {
  const code = redirect.url.searchParams.get("code");
  if (code && typeof req.query.scope === "string") scopes.set(code, req.query.scope);
});

function shape(token, req) {
  const body = req.body ?? {};
  const now = Math.floor(Date.now() / 1000);
  if (body.grant_type === "client_credentials") {
    if (body.expires_in !== undefined) token.payload.exp = now + Number(body.expires_in);
    if (body.sub !== undefined) token.payload.sub = body.sub;
    if (body.client_id !== undefined) token.payload.client_id = body.client_id;
    return;
  }
  // The ID token already names its client as `aud`; only the access token is shaped.
  if (token.payload.aud !== undefined) return;
  if (audience !== undefined) token.payload.aud = audience;
  if (body.client_id !== undefined) token.payload.client_id = body.client_id;
  const asked = scopes.get(body.code);
  if (asked !== undefined) token.payload.scope = asked;
}

issuer.service.on("beforeTokenSigning", shape);
rogue.service.on("beforeTokenSigning", (token, req) => {
  shape(token, req);
  // Everything a real token of the issuer says, except the signature.
  token.payload.iss = issuer.issuer.url;
  token.header.kid = req.body?.kid ?? kid;
});

console.log(JSON.stringify({ issuer: issuer.issuer.url, rogue: rogue.issuer.url, kid }));

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, async () => {
    await Promise.all([issuer.stop(), rogue.stop()]);
    process.exit(0);
  });
}
