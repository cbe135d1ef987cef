//! Hostile pages through the real binary (issue 28, D25): the page that aborted toolmux (2,500
//! nested `<b>`) through `toolmux tools call url_fetch` and through code mode's `fetch()`,
//! which runs url_fetch through the hub. The process must answer, not die (rc 134).

mod support;

use std::net::SocketAddr;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::http::{Answer, scripted_server};

/// A server on 127.0.0.1 answering every request with `body` as HTML.
fn serve_html(body: String) -> SocketAddr {
    scripted_server(move |_| Answer {
        status: "200 OK",
        headers: String::new(),
        content_type: "text/html",
        body: body.clone(),
    })
}

fn deep_bold_page() -> String {
    format!(
        "<html><body>{}x{}</body></html>",
        "<b>".repeat(2500),
        "</b>".repeat(2500)
    )
}

#[test]
fn a_deeply_nested_page_does_not_abort_url_fetch() {
    let addr = serve_html(deep_bold_page());
    let project = toolmux_project();
    project.config(r#"{"urlFetch": {"allow": ["127.0.0.1"]}}"#);
    let run = project.run(&[
        "tools",
        "call",
        "url_fetch",
        "-a",
        &format!("url=http://{addr}/deep.html"),
        "--json",
    ]);
    assert_eq!(run.code(), 0, "{}{}", run.stdout(), run.stderr());
    let result = run.json();
    let fetched = &result["structuredContent"];
    assert_eq!(fetched["format"], "text", "{result}");
    assert!(
        fetched["note"]
            .as_str()
            .is_some_and(|n| n.contains("more than 512 deep")),
        "{result}"
    );
}

#[test]
fn a_deeply_nested_page_does_not_abort_code_modes_fetch() {
    let addr = serve_html(deep_bold_page());
    let project = toolmux_project();
    project.config(r#"{"urlFetch": {"allow": ["127.0.0.1"]}}"#);
    let script = format!(
        "const r = await fetch('http://{addr}/deep.html');\n\
         return {{ ok: r.ok, status: r.status, text: await r.text() }};"
    );
    let args = json!({ "code": script }).to_string();
    let run = project.run(&["tools", "call", "run_code", "--args", &args, "--json"]);
    assert_eq!(run.code(), 0, "{}{}", run.stdout(), run.stderr());
    let result = run.json();
    let returned = &result["structuredContent"]["result"];
    assert_eq!(returned["ok"], true, "{result}");
    assert_eq!(returned["status"], 200, "{result}");
    assert!(
        returned["text"].as_str().is_some_and(|t| t.contains('x')),
        "{result}"
    );
}
