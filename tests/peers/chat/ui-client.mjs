// A real client of the AI SDK UI message stream protocol: the `ai` package's own chat transport
// (which checks the response and validates every chunk against the protocol's schema) and its
// `readUIMessageStream`, which assembles chunks into the UI message a front end would render.
//
// Usage: node ui-client.mjs <url of /api/chat> <chat id> <text>
// With TOOLMUX_API_KEY set, sends it as `Authorization: Bearer <key>`, as a front end would.
// Prints {"chunks": [...], "message": {...}} as JSON on stdout; exits 1 with the reason on error.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, chatId, text] = process.argv.slice(2);
if (!url || !chatId || !text) {
  console.error("usage: node ui-client.mjs <url> <chat id> <text>");
  process.exit(2);
}

const key = process.env.TOOLMUX_API_KEY;
const transport = new DefaultChatTransport({
  api: url,
  headers: key ? { Authorization: `Bearer ${key}` } : {},
});
const stream = await transport.sendMessages({
  chatId,
  trigger: "submit-message",
  messageId: undefined,
  abortSignal: undefined,
  messages: [{ id: "m1", role: "user", parts: [{ type: "text", text }] }],
});
const [forChunks, forMessage] = stream.tee();
const chunks = [];
const collecting = (async () => {
  const reader = forChunks.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
})();
let message;
for await (const state of readUIMessageStream({
  stream: forMessage,
  onError: (e) => {
    console.error(`stream error: ${e}`);
  },
})) {
  message = state;
}
await collecting;
process.stdout.write(JSON.stringify({ chunks, message }) + "\n");
