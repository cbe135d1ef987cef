// A "browser" for `toolmux mcp login` in tests (TOOLMUX_BROWSER="node follow-sign-in.mjs"):
// follows the authorization URL and every redirect, as a browser would when the authorization
// server approves at once, so the last redirect reaches toolmux's loopback listener.
// Exits 1 if a step fails, printing why to stderr (toolmux then times out waiting).
const url = process.argv[process.argv.length - 1];
try {
  const response = await fetch(url, { redirect: "follow" });
  await response.arrayBuffer();
  if (!response.ok) {
    console.error(`follow-sign-in: ${response.status} from ${response.url}`);
    process.exit(1);
  }
} catch (error) {
  console.error(`follow-sign-in: ${error}`);
  process.exit(1);
}
