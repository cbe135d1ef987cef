import { StrictMode, Suspense, lazy, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { SignIn, signOut, useSession } from "./auth";
import { BrowserRouter, Link, useLocation, useNavigate } from "react-router";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useWaiting } from "./approvals";
import { FoldButton } from "./components/FoldButton";
import "./styles.css";

// Each page is its own chunk: the first load carries the shell and the page it opens on.
const Chat = lazy(() => import("./pages/Chat"));
const Tools = lazy(() => import("./pages/Tools"));
const Servers = lazy(() => import("./pages/Servers"));
const Activity = lazy(() => import("./pages/Activity"));
const Approvals = lazy(() => import("./pages/Approvals"));
const Sessions = lazy(() => import("./pages/Sessions"));
const Specs = lazy(() => import("./pages/Specs"));

type Theme = "light" | "dark" | "system";

function useTheme(): [Theme, (t: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(
    () => (localStorage.getItem("toolmux.theme") as Theme | null) ?? "system",
  );
  useEffect(() => {
    if (theme === "system") delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
    localStorage.setItem("toolmux.theme", theme);
  }, [theme]);
  return [theme, setTheme];
}

const PAGES = [
  { href: "/chat", label: "Chat" },
  { href: "/tools", label: "Tools" },
  { href: "/servers", label: "MCP servers" },
  { href: "/activity", label: "Activity" },
  { href: "/approvals", label: "Approvals" },
  { href: "/sessions", label: "Sessions" },
  { href: "/specs", label: "Specs" },
];

function Shell() {
  const path = useLocation().pathname;
  const navigate = useNavigate();
  const [theme, setTheme] = useTheme();
  const waiting = useWaiting();
  // On a narrow screen the page list folds behind a button; it folds again once a page is chosen.
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [path]);
  const count = waiting.approvals.length + waiting.inputs.length;
  useEffect(() => {
    if (path === "/" || path === "") void navigate("/chat", { replace: true });
  }, [path, navigate]);
  const section = "/" + (path.split("/")[1] ?? "");
  const page = PAGES.find((p) => p.href === section);
  useEffect(() => {
    document.title = page ? `${page.label} · toolmux` : "toolmux";
  }, [page]);
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand" aria-hidden="true">
          toolmux
        </span>
        <nav aria-label="Pages" className={menuOpen ? "open" : undefined}>
          <FoldButton open={menuOpen} onToggle={() => setMenuOpen((o) => !o)} controls="pages" className="menu-toggle">
            Menu
            {count > 0 && (
              <span className="badge count" aria-label={`${count} waiting`}>
                {count}
              </span>
            )}
          </FoldButton>
          <ul id="pages">
            {PAGES.map((p) => (
              <li key={p.href}>
                <Link to={p.href} aria-current={section === p.href ? "page" : undefined}>
                  {p.label}
                  {p.href === "/approvals" && count > 0 && (
                    <span className="badge count" aria-label={`${count} waiting`}>
                      {count}
                    </span>
                  )}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="spacer" />
        <label className="theme">
          <span className="visually-hidden">Colour theme</span>
          <select value={theme} onChange={(e) => setTheme(e.target.value as Theme)}>
            <option value="system">System theme</option>
            <option value="light">Light</option>
            <option value="dark">Dark</option>
          </select>
        </label>
        <button type="button" className="link" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<p className="muted">Loading…</p>}>
          {section === "/chat" && <Chat path={path} waiting={waiting} />}
          {section === "/tools" && <Tools path={path} />}
          {section === "/servers" && <Servers />}
          {section === "/activity" && <Activity />}
          {section === "/approvals" && <Approvals waiting={waiting} />}
          {section === "/sessions" && <Sessions path={path} />}
          {section === "/specs" && <Specs path={path} waiting={waiting} />}
          {!page && section !== "/" && (
            <section>
              <h1>Not found</h1>
              <p>
                There is no page at <code>{path}</code>. <Link to="/chat">Go to the chat</Link>.
              </p>
            </section>
          )}
        </Suspense>
      </main>
    </div>
  );
}

function App() {
  const [session, signIn] = useSession();
  if (session === "checking") return <p className="muted">Signing in…</p>;
  if (session === "signed-out") return <SignIn onToken={signIn} />;
  return <Shell />;
}

/// The page's data layer: every read of the API a page shows goes through it, shared by the
/// components that show it. A failure is shown at once (the API's errors are answers, not
/// hiccups to retry). Pages stay fresh through the server's event streams and by reading again
/// after their own changes, not whenever the window gets focus.
const queries = new QueryClient({ defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false } } });

const root = document.getElementById("root");
if (root)
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queries}>
        <BrowserRouter>
          <App />
        </BrowserRouter>
      </QueryClientProvider>
    </StrictMode>,
  );
