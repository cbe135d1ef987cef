// The AI SDK checks every chunk with zod, whose fast path compiles code with `new Function`;
// the page's CSP forbids that (no 'unsafe-eval'), and zod's probe for it, made as each object
// schema is built, would be reported as a violation on every load. Switched off before any
// schema exists (this module is imported first); the interpreted path is fast enough for a chat
// stream.
import { config } from "zod/v4/core";

config({ jitless: true });
