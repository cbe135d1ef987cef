//! Hostile `serve.json` (issue 29's hand-off): the file a running `serve` publishes itself in
//! is outside input — left by a `serve` that is gone, or written by anyone who can write the
//! state directory. Whatever it names, the local token goes to no process but the project's
//! own `serve`: a listener of this test, named by a stale entry, by a live process that is not
//! toolmux, or by a FIFO, a link or a huge file in its place, gets nothing; the one-shot
//! command runs the session itself and waits for it, as without a `serve`.

#[path = "support/sessions.rs"]
mod sessions_support;
mod support;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sessions_support::{call_run_session, project, with_fake_runner};
use toolmux_testkit::project::TestProject;

/// A loopback listener that records every byte any connection sends it.
struct Recorder {
    address: std::net::SocketAddr,
    received: Arc<Mutex<Vec<u8>>>,
    connections: Arc<Mutex<usize>>,
}

impl Recorder {
    fn start() -> Self {
        Self::at("127.0.0.1:0")
    }

    /// A recorder listening at `address`.
    fn at(address: &str) -> Self {
        Self::on(TcpListener::bind(address).expect("bind"))
    }

    /// A recorder accepting on `listener`.
    fn on(listener: TcpListener) -> Self {
        let address = listener.local_addr().expect("address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let (bytes, count) = (received.clone(), connections.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                *count.lock().expect("count") += 1;
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut got = Vec::new();
                let _ = (&stream).take(64 * 1024).read_to_end(&mut got);
                bytes.lock().expect("bytes").extend(got);
            }
        });
        Self {
            address,
            received,
            connections,
        }
    }

    fn connections(&self) -> usize {
        *self.connections.lock().expect("count")
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().expect("bytes")).into_owned()
    }
}

fn state(project: &TestProject) -> PathBuf {
    project.path().join(".toolmux/state")
}

/// Makes the local token as `serve` would, so that there is one to leak.
fn local_token(project: &TestProject) -> String {
    let dir = state(project);
    std::fs::create_dir_all(&dir).expect("state dir");
    toolmux_http::load_or_create(&dir).expect("token").token
}

/// `tools call run_session` with `serve.json` as the test left it: the session ran here, to
/// its end (the command waited for it), and the command's stderr says why it was not handed
/// over. Returns that stderr.
fn run_here(project: &TestProject) -> String {
    let (id, stderr) = call_run_session(project, "pause");
    assert!(
        stderr.ends_with(&format!(
            "toolmux: waiting for 1 coding session(s) to finish before exiting ({id}); Ctrl-C \
             cancels them\n"
        )),
        "{stderr}"
    );
    let list = project.run(&["sessions", "list", "--json"]);
    let list: Value = serde_json::from_str(&list.stdout()).expect("JSON");
    assert_eq!(list["sessions"][0]["id"], id.as_str(), "{list}");
    assert_eq!(list["sessions"][0]["status"], "completed", "{list}");
    // Run by the one-shot command, not by anything the entry named.
    assert_ne!(
        list["sessions"][0]["owner"]["pid"],
        u64::from(std::process::id()),
        "{list}"
    );
    stderr
}

/// The reason logged for a `serve.json` that is not used.
fn refused(stderr: &str, path: &Path, why: &str) {
    let said = format!(
        "not handing the session to `toolmux serve`: `{}`: {why}; it runs in this process",
        path.display()
    );
    assert!(stderr.contains(&said), "{said}\nnot in:\n{stderr}");
}

fn publish(project: &TestProject, entry: &Value) -> PathBuf {
    let path = state(project).join("serve.json");
    std::fs::write(&path, entry.to_string()).expect("serve.json");
    path
}

/// The path of the entry the running `serve` published in `project`, and the entry.
fn published_entry(project: &TestProject) -> (PathBuf, Value) {
    let path = state(project).join("serve.json");
    let entry: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("serve.json")).expect("JSON");
    (path, entry)
}

/// Rewrites the running `serve`'s entry to name `address` in place of its own: the entry's
/// path and serve's pid.
fn name_serve_at(project: &TestProject, address: std::net::SocketAddr) -> (PathBuf, Value) {
    let (path, entry) = published_entry(project);
    publish(
        project,
        &json!({"owner": entry["owner"], "address": address}),
    );
    (path, entry["owner"]["pid"].clone())
}

/// `serve.json` naming `owner` at a listener of this test: the session runs here, the reason
/// is `why`, and the listener is never even connected to.
fn a_listener_named_with(owner: Value, why: &str) {
    let project = project();
    let token = local_token(&project);
    let recorder = Recorder::start();
    let path = publish(
        &project,
        &json!({"owner": owner, "address": recorder.address}),
    );
    let stderr = run_here(&project);
    refused(&stderr, &path, why);
    assert_eq!(recorder.connections(), 0);
    assert!(!recorder.received().contains(&token));
}

/// An entry naming this test's own process, which is alive and does own the listener, but is
/// not toolmux.
#[test]
fn a_live_process_that_is_not_toolmux_gets_no_token() {
    let me = toolmux_sessions::Owner::current();
    a_listener_named_with(
        json!({"pid": me.pid, "startTime": me.start_time}),
        &format!(
            "process {} is not this toolmux program run by this user",
            me.pid
        ),
    );
}

/// A stale entry: its process is gone (a start time that is not the live process's, as after
/// the id was reused).
#[test]
fn a_stale_entry_gets_no_token() {
    let me = toolmux_sessions::Owner::current();
    a_listener_named_with(
        json!({"pid": me.pid, "startTime": me.start_time + 1}),
        &format!("process {} is gone (a stale entry)", me.pid),
    );
}

/// An entry naming the project's real `serve` (the same program, alive) but another listener's
/// address: the socket is not that process's, so no connection is made to it.
#[test]
fn a_real_serve_named_with_another_address_gets_no_token_there() {
    let project = project();
    let served = toolmux_testkit::served::Served::start(&project, &[]);
    not_listening_there_gets_no_token(&project, &Recorder::start());
    served.stop();
}

/// Names the project's real `serve` as listening at `recorder`'s address, runs a one-shot, and
/// checks it was refused because serve does not listen there — and `recorder` got nothing.
fn not_listening_there_gets_no_token(project: &TestProject, recorder: &Recorder) {
    let (path, pid) = name_serve_at(project, recorder.address);
    let stderr = run_here(project);
    refused(
        &stderr,
        &path,
        &format!("process {pid} does not listen on {}", recorder.address),
    );
    assert_eq!(recorder.connections(), 0);
}

/// The real serve's port on another loopback IP is another listener's (here another
/// process's, standing for another user's): it never gets the token, though serve holds that
/// port on 127.0.0.1.
#[test]
fn the_real_serves_port_on_another_loopback_ip_gets_no_token() {
    let project = project();
    let served = toolmux_testkit::served::Served::start(&project, &[]);
    let (_, entry) = published_entry(&project);
    let port = entry["address"]
        .as_str()
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .expect("serve's address")
        .port();
    not_listening_there_gets_no_token(&project, &Recorder::at(&format!("127.0.0.2:{port}")));
    served.stop();
}

/// The check-then-use race: serve listened on the published address when it was checked, and
/// by the time the one-shot connects someone else accepts there (serve exited and its port was
/// taken). Made deterministic here: serve holds a listening socket of this test (as its stdin,
/// so `/proc` shows serve listening on the address), while this test's recorder is what
/// accepts on it. The one-shot checks the connection it made, finds its far end in this
/// test's process, and sends nothing over it — not the token, not a byte.
#[test]
fn a_connection_another_process_accepted_on_serves_listener_gets_no_token() {
    let project = project();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let held = listener.try_clone().expect("a second handle");
    let served =
        toolmux_testkit::served::Served::start_holding(&project, std::os::fd::OwnedFd::from(held));
    let recorder = Recorder::on(listener);
    let (path, pid) = name_serve_at(&project, recorder.address);
    let stderr = run_here(&project);
    refused(
        &stderr,
        &path,
        &format!(
            "the connection to {} was accepted by another process than {pid}",
            recorder.address
        ),
    );
    assert_eq!(recorder.connections(), 1);
    served.stop();
    assert_eq!(recorder.received(), "");
}

/// A serve started before its binary was replaced (an upgrade: a new file renamed over the
/// old, as installers do) runs a file that is gone, which `/proc` names `<path> (deleted)`:
/// refused, with a reason that says so and what to do, rather than "not this program".
#[test]
fn a_serve_whose_binary_was_replaced_since_is_refused_with_that_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let binary = dir.path().join("toolmux");
    std::fs::copy(env!("CARGO_BIN_EXE_toolmux"), &binary).expect("copy the binary");
    let project = with_fake_runner(TestProject::driving(&binary));
    let served = toolmux_testkit::served::Served::start(&project, &[]);
    let (path, entry) = published_entry(&project);
    let upgrade = dir.path().join("toolmux.new");
    std::fs::copy(env!("CARGO_BIN_EXE_toolmux"), &upgrade).expect("copy the binary");
    std::fs::rename(&upgrade, &binary).expect("replace the binary");
    let stderr = run_here(&project);
    refused(
        &stderr,
        &path,
        &format!(
            "process {} runs the toolmux binary that {} replaced (an upgrade since it \
             started); restart `toolmux serve` to hand sessions to it",
            entry["owner"]["pid"],
            binary.canonicalize().expect("the binary").display()
        ),
    );
    served.stop();
}

/// An address beyond loopback is never sent the token, whoever the entry names.
#[test]
fn an_address_beyond_loopback_gets_no_token() {
    let project = project();
    local_token(&project);
    let me = toolmux_sessions::Owner::current();
    let path = publish(
        &project,
        &json!({"owner": {"pid": me.pid, "startTime": me.start_time}, "address": "192.0.2.1:80"}),
    );
    let stderr = run_here(&project);
    refused(&stderr, &path, "192.0.2.1:80 is not a loopback address");
}

/// A FIFO in its place is not waited on, a huge file is not read, garbage is not trusted, a
/// link is not followed: each is refused with its reason and the session runs here.
#[test]
fn a_fifo_a_huge_file_garbage_or_a_link_is_ignored_with_its_reason() {
    let project = project();
    local_token(&project);
    let path = state(&project).join("serve.json");

    toolmux_testkit::fifo::mkfifo(&path);
    refused(&run_here(&project), &path, "a FIFO, not a regular file");
    std::fs::remove_file(&path).expect("remove");

    std::fs::write(&path, "x".repeat(1024 * 1024)).expect("huge");
    refused(
        &run_here(&project),
        &path,
        "larger than the 4096 bytes allowed",
    );

    std::fs::write(&path, "{\"owner\": 1").expect("garbage");
    let stderr = run_here(&project);
    assert!(
        stderr.contains(&format!(
            "not handing the session to `toolmux serve`: `{}`: not a serve entry: ",
            path.display()
        )),
        "{stderr}"
    );

    std::fs::remove_file(&path).expect("remove");
    let elsewhere = project.path().join("elsewhere.json");
    std::fs::write(&elsewhere, "{}").expect("target");
    std::os::unix::fs::symlink(&elsewhere, &path).expect("link");
    refused(
        &run_here(&project),
        &path,
        "a symbolic link, which is not followed here",
    );
}
