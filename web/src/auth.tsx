// Signing in, as `toolmux serve` hands out access: it prints `http://127.0.0.1:PORT/#token=…`;
// the page trades the token for a session — an HttpOnly, SameSite=Strict cookie and a session
// key the page keeps for its origin and sends as a header (see `api.ts`) — and takes the token
// out of the address bar at once, so it is neither kept in history nor sent anywhere else.
import { useEffect, useState, type FormEvent } from "react";
import { ApiFailure, api, describe, keepSessionKey } from "./api";

type State = "checking" | "signed-in" | "signed-out";

async function exchange(token: string) {
  const opened = await api<{ sessionKey: string }>("/api/auth/session", { method: "POST", body: { token } });
  keepSessionKey(opened.sessionKey);
}

export function useSession(): [State, (token: string) => Promise<void>] {
  const [state, setState] = useState<State>("checking");
  useEffect(() => {
    let live = true;
    (async () => {
      const hash = new URLSearchParams(location.hash.slice(1));
      const token = hash.get("token");
      if (token) {
        history.replaceState(null, "", location.pathname + location.search);
        try {
          await exchange(token);
        } catch {
          // A stale token: fall through to the check, which shows the sign-in screen.
        }
      }
      try {
        await api("/api/auth/session");
        if (live) setState("signed-in");
      } catch (e) {
        // A server without the session route (an older toolmux, or a key-less setup) answers
        // 404: there is nothing to sign in to.
        const out = e instanceof ApiFailure && e.status === 401;
        if (out) keepSessionKey(null);
        if (live) setState(out ? "signed-out" : "signed-in");
      }
    })();
    const out = () => setState("signed-out");
    window.addEventListener("toolmux:signed-out", out);
    return () => {
      live = false;
      window.removeEventListener("toolmux:signed-out", out);
    };
  }, []);
  return [
    state,
    async (token: string) => {
      await exchange(token);
      setState("signed-in");
    },
  ];
}

export function SignIn({ onToken }: { onToken: (token: string) => Promise<void> }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      await onToken(token.trim());
    } catch (err) {
      setError(describe(err));
    }
  };
  return (
    <main className="signin">
      <h1>toolmux</h1>
      <p>
        Open the address <code>toolmux serve</code> printed, or paste its token (after{" "}
        <code>#token=</code>) here.
      </p>
      <form onSubmit={submit}>
        <label htmlFor="token">Access token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          value={token}
          onChange={(e) => setToken(e.target.value)}
        />
        <button type="submit" disabled={!token.trim()}>
          Sign in
        </button>
      </form>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </main>
  );
}

export async function signOut() {
  try {
    await api("/api/auth/logout", { method: "POST" });
  } finally {
    keepSessionKey(null);
    window.dispatchEvent(new Event("toolmux:signed-out"));
  }
}
