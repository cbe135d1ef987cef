//! The web pack through the real binary: `toolmux tools call url_fetch` and `web_search` in a
//! scratch project, against HTTP servers on loopback started by the test (a page, and fakes of
//! SearXNG's, Brave's and Tavily's documented wire formats).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::toolmux_project;

/// One request as the fake server saw it.
#[derive(Clone, Debug, Default)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A server on 127.0.0.1 answering every request with `content_type` and `body`, keeping
/// what it was asked.
fn serve(content_type: &'static str, body: String) -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            let mut request = Seen::default();
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut parts = line.split_whitespace();
            request.method = parts.next().unwrap_or_default().to_string();
            request.target = parts.next().unwrap_or_default().to_string();
            let mut length = 0;
            loop {
                line.clear();
                if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.trim().split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    request
                        .headers
                        .push((name.to_string(), value.trim().to_string()));
                }
            }
            let mut bytes = vec![0; length];
            let _ = reader.read_exact(&mut bytes);
            request.body = String::from_utf8_lossy(&bytes).into_owned();
            log.lock().expect("lock").push(request);
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = reader.get_mut().write_all(response.as_bytes());
        }
    });
    (addr, seen)
}

fn page() -> String {
    let paragraph = "The Seoul forecast calls for clear skies with a high of twenty-one degrees, \
                     light winds from the west and no rain expected before the weekend. "
        .repeat(4);
    format!(
        "<html><head><title>Weather in Seoul</title></head><body>\
         <nav><a href='/'>Home</a><a href='/radar'>Radar maps</a></nav>\
         <article><h1>Weather in Seoul</h1><p>{paragraph}</p><p>{paragraph}</p></article>\
         <footer>Weather Corp footer links</footer></body></html>"
    )
}

#[test]
fn url_fetch_reads_a_page_as_markdown_where_the_config_allows_its_address() {
    let (addr, _) = serve("text/html; charset=utf-8", page());
    let url = format!("http://{addr}/seoul");
    let project = toolmux_project();

    // The default refuses loopback, before connecting, and says how to allow it.
    let refused = project.run(&["tools", "call", "url_fetch", "-a", &format!("url={url}")]);
    assert_eq!(refused.code(), 1, "{}", refused.stdout());
    let stderr = refused.stderr();
    assert!(
        stderr.contains("refused: 127.0.0.1 is a loopback address"),
        "{stderr}"
    );
    assert!(stderr.contains("urlFetch.allow"), "{stderr}");

    // Allowing exactly that address lets the call through.
    project.config(r#"{"urlFetch": {"allow": ["127.0.0.1"]}}"#);
    let result = project
        .run(&[
            "tools",
            "call",
            "url_fetch",
            "-a",
            &format!("url={url}"),
            "--json",
        ])
        .json();
    assert_ne!(result["isError"], json!(true), "{result}");
    let fetched = &result["structuredContent"];
    assert_eq!(fetched["format"], "markdown");
    assert_eq!(fetched["title"], "Weather in Seoul");
    let content = fetched["content"].as_str().expect("content");
    assert!(content.contains("twenty-one degrees"), "{content}");
    assert!(!content.contains("Radar maps"), "{content}");
    assert!(!content.contains("footer links"), "{content}");
}

#[test]
fn the_web_tools_are_listed_as_reads_that_run_without_asking() {
    let project = toolmux_project();
    let tools = project.run(&["tools", "list", "--json"]).json();
    for name in ["url_fetch", "web_search"] {
        let tool = tools
            .as_array()
            .expect("array")
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is listed: {tools}"));
        assert_eq!(tool["source"], "web");
        assert_eq!(tool["policy"], "allow", "{tool}");
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
        assert_eq!(tool["annotations"]["openWorldHint"], true);
        assert!(tool["outputSchema"].is_object(), "{tool}");
    }
}

#[test]
fn web_search_without_a_service_names_the_setting() {
    let project = toolmux_project();
    let run = project.run(&["tools", "call", "web_search", "-a", "query=weather seoul"]);
    assert_eq!(run.code(), 1);
    assert!(run.stderr().contains("set `webSearch`"), "{}", run.stderr());
}

/// Runs `web_search` in a project configured with `web_search` and returns its structured
/// result.
fn search_with(web_search: Value) -> Value {
    let project = toolmux_project();
    project.config(&json!({"webSearch": web_search}).to_string());
    let result = project
        .run(&[
            "tools",
            "call",
            "web_search",
            "--args",
            r#"{"query": "weather seoul", "count": 2}"#,
            "--json",
        ])
        .json();
    assert_ne!(result["isError"], json!(true), "{result}");
    result["structuredContent"].clone()
}

fn expected_hits() -> Value {
    json!([
        {"title": "Seoul weather", "url": "https://weather.example/seoul", "snippet": "Clear, 21°C"},
        {"title": "Korea forecast", "url": "https://forecast.example/kr", "snippet": "Sunny week"}
    ])
}

#[test]
fn web_search_speaks_searxngs_json_api() {
    let answer = json!({
        "query": "weather seoul",
        "number_of_results": 3,
        "results": [
            {"url": "https://weather.example/seoul", "title": "Seoul weather", "content": "Clear, 21°C", "engine": "duckduckgo"},
            {"url": "https://forecast.example/kr", "title": "Korea forecast", "content": "Sunny week", "engine": "bing"},
            {"url": "https://third.example/", "title": "Third", "content": "cut by count"}
        ],
        "answers": [], "suggestions": [], "infoboxes": []
    });
    let (addr, seen) = serve("application/json", answer.to_string());
    let found = search_with(json!({"kind": "searxng", "baseUrl": format!("http://{addr}/")}));
    assert_eq!(found["results"], expected_hits());
    let request = seen.lock().expect("lock")[0].clone();
    assert_eq!(request.method, "GET");
    assert!(request.target.starts_with("/search?"), "{}", request.target);
    assert!(
        request.target.contains("q=weather+seoul"),
        "{}",
        request.target
    );
    assert!(request.target.contains("format=json"), "{}", request.target);
}

#[test]
fn web_search_speaks_the_brave_search_api() {
    let answer = json!({
        "type": "search",
        "query": {"original": "weather seoul"},
        "web": {"type": "search", "results": [
            {"title": "Seoul weather", "url": "https://weather.example/seoul", "description": "Clear, 21°C", "type": "search_result"},
            {"title": "Korea forecast", "url": "https://forecast.example/kr", "description": "Sunny week", "type": "search_result"}
        ]}
    });
    let (addr, seen) = serve("application/json", answer.to_string());
    let found = search_with(json!({
        "kind": "brave", "baseUrl": format!("http://{addr}"), "apiKey": "brave-test-key"
    }));
    assert_eq!(found["results"], expected_hits());
    let request = seen.lock().expect("lock")[0].clone();
    assert_eq!(request.method, "GET");
    assert!(
        request.target.starts_with("/res/v1/web/search?"),
        "{}",
        request.target
    );
    assert!(request.target.contains("count=2"), "{}", request.target);
    assert_eq!(
        request.header("x-subscription-token"),
        Some("brave-test-key")
    );
}

#[test]
fn web_search_speaks_the_tavily_api() {
    let answer = json!({
        "query": "weather seoul",
        "answer": null,
        "results": [
            {"title": "Seoul weather", "url": "https://weather.example/seoul", "content": "Clear, 21°C", "score": 0.9},
            {"title": "Korea forecast", "url": "https://forecast.example/kr", "content": "Sunny week", "score": 0.8}
        ],
        "response_time": 0.5
    });
    let (addr, seen) = serve("application/json", answer.to_string());
    let found = search_with(json!({
        "kind": "tavily", "baseUrl": format!("http://{addr}"), "apiKey": "tvly-test"
    }));
    assert_eq!(found["results"], expected_hits());
    let request = seen.lock().expect("lock")[0].clone();
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/search");
    assert_eq!(request.header("authorization"), Some("Bearer tvly-test"));
    let body: Value = serde_json::from_str(&request.body).expect("a JSON body");
    assert_eq!(body, json!({"query": "weather seoul", "max_results": 2}));
}

#[test]
fn code_modes_fetch_goes_through_url_fetch_and_its_guard() {
    let (addr, seen) = serve("application/json", r#"{"temperature": 21.5}"#.to_string());
    let project = toolmux_project();
    let script = format!(
        "const r = await fetch('http://{addr}/weather');\n\
         return {{ ok: r.ok, status: r.status, type: r.headers.get('Content-Type'), \
         data: await r.json() }};"
    );
    let args = json!({ "code": script }).to_string();

    // By default the guard refuses the loopback address, and the script sees a ToolError.
    let refused = project.run(&["tools", "call", "run_code", "--args", &args, "--json"]);
    let text = format!("{}{}", refused.stdout(), refused.stderr());
    assert!(text.contains("ToolError"), "{text}");
    assert!(
        text.contains("refused: 127.0.0.1 is a loopback address"),
        "{text}"
    );
    assert!(
        seen.lock().expect("lock").is_empty(),
        "the server was reached"
    );

    project.config(r#"{"urlFetch": {"allow": ["127.0.0.1"]}}"#);
    let result = project
        .run(&["tools", "call", "run_code", "--args", &args, "--json"])
        .json();
    let returned = &result["structuredContent"]["result"];
    assert_eq!(
        *returned,
        json!({"ok": true, "status": 200, "type": "application/json", "data": {"temperature": 21.5}}),
        "{result}"
    );
    // The fetch is a url_fetch call in the execution log, from code mode.
    let logs = project.run(&["logs", "--json"]).ok();
    let url_fetch_calls: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["tool"] == "url_fetch")
        .collect();
    assert!(
        url_fetch_calls.iter().any(|r| r["channel"] == "code"),
        "{logs}"
    );
}
