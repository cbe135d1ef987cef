//! Handing coding sessions from a one-shot process to a running `serve` (issue 29). A session
//! runs under the process that started it, so one started by `toolmux mcp` over stdio or by
//! `tools call run_session` would end with that process. `serve` publishes where it listens
//! in the project's state directory ([`publish`], `serve.json`); a one-shot process that finds
//! it asks that `serve` to start the session over its REST API ([`ServeHandoff`]), with the
//! local token, and the session outlives the one-shot process. Without a `serve`, the one-shot
//! process runs the session itself and waits for it before exiting
//! (`Assembly::finish_sessions`).
//!
//! `serve.json` is outside input: anyone who can write the state directory, or a file left by
//! a `serve` that is gone, chooses its address. So the local token goes only over a loopback
//! connection whose far end is a socket held by the very process the file names, which runs
//! this same program as this user (a process of another user cannot be inspected, so it never
//! qualifies) — proved on the connection the token is then sent over, not on the address
//! beforehand ([`ServeHandoff::connect`]). Anything else — no file, a link, a FIFO, a huge or garbled file, a dead or
//! foreign process — means no hand-off, with the reason logged, and the session runs here.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::net::TcpStream;
use toolmux_sessions::{Handoff, Owner, SessionError, SessionRecord};

/// The file under the project's state directory that a running `serve` names itself in.
pub const SERVE_FILE: &str = "serve.json";

/// The largest `serve.json` read: it holds a process id, a start time and an address.
const SERVE_FILE_CAP: u64 = 4096;

/// How long a hand-off waits to connect: `serve` is a local process that answers at once.
const CONNECT_LIMIT: Duration = Duration::from_secs(2);

/// How long a hand-off waits for the connection it made to be accepted (until then the far
/// end has no owner to check): `serve` accepts at once, but a loaded machine may be slow.
const ACCEPT_LIMIT: Duration = Duration::from_secs(10);

/// How often the far end's owner is looked for while the connection waits to be accepted.
const ACCEPT_POLL: Duration = Duration::from_millis(10);
/// How long a connection accepted by a socket not (yet) in serve's file table is looked at
/// again: the kernel lists an accepted socket just before the acceptor's descriptor exists.
const HELD_GRACE: Duration = Duration::from_millis(500);

/// The longest a hand-off waits for `serve`'s answer, which includes a person's answer when
/// `serve`'s policy asks about `run_session`.
const ANSWER_LIMIT: Duration = Duration::from_secs(60 * 60);

/// The largest answer read from `serve`: one session's record.
const ANSWER_CAP: usize = 1024 * 1024;

/// What `serve.json` holds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Published {
    /// The `serve` process (its id and start time, so a later process with the same id is not
    /// taken for it).
    owner: Owner,
    /// Where its REST API listens.
    address: SocketAddr,
}

/// A `serve`'s entry in `serve.json`, removed when dropped (a clean shutdown); one left by a
/// killed `serve` is recognised as stale by its process being gone.
#[derive(Debug)]
pub struct Publication {
    path: PathBuf,
}

impl Drop for Publication {
    fn drop(&mut self) {
        // Only the entry this process wrote: a second `serve` of the project may have written
        // its own since. Reading the file and then removing it would remove an entry written
        // between the two; so the entry is first taken aside (a rename, atomic), read there,
        // and one that is not ours is put back — with a link, which never replaces, so an
        // entry published meanwhile (newer still) stands. Between the rename and the link a
        // one-shot finds no entry and runs its session itself: no harm.
        let aside = self
            .path
            .with_file_name(format!("{SERVE_FILE}.{}.leaving", std::process::id()));
        match std::fs::rename(&self.path, &aside) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot remove the serve file");
                return;
            }
        }
        let ours = read_published(&aside)
            .ok()
            .is_some_and(|p| p.owner == Owner::current());
        if !ours
            && let Err(e) = std::fs::hard_link(&aside, &self.path)
            && e.kind() != std::io::ErrorKind::AlreadyExists
        {
            tracing::warn!(path = %self.path.display(), error = %e,
                "cannot put back another serve's entry");
        }
        if let Err(e) = std::fs::remove_file(&aside) {
            tracing::warn!(path = %aside.display(), error = %e, "cannot remove the serve file");
        }
    }
}

/// Names this process, listening at `address`, as the project's `serve` for hand-offs. A
/// loopback `address` only: the local token is never sent anywhere else. `None` (with the
/// reason logged) when the file cannot be written.
pub fn publish(state_dir: &Path, address: SocketAddr) -> Option<Publication> {
    let mut address = address;
    if address.ip().is_unspecified() {
        address.set_ip(match address {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    if !address.ip().is_loopback() {
        return None;
    }
    let path = state_dir.join(SERVE_FILE);
    let published = Published {
        owner: Owner::current(),
        address,
    };
    let written = serde_json::to_vec(&published)
        .map_err(std::io::Error::other)
        .and_then(|bytes| toolmux_files::write_atomic(&path, &bytes));
    match written {
        Ok(()) => Some(Publication { path }),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e,
                "cannot publish this server for hand-offs; one-shot commands will run their sessions themselves");
            None
        }
    }
}

fn read_published(path: &Path) -> Result<Published, String> {
    let text = toolmux_files::read_text(path, SERVE_FILE_CAP, toolmux_files::Links::Refuse)
        .map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| format!("not a serve entry: {e}"))
}

/// Hands `run_session` to the project's running `serve`, when there is one that proves to be
/// it ([`ServeHandoff::find`]).
#[derive(Debug)]
pub struct ServeHandoff {
    state_dir: PathBuf,
}

impl ServeHandoff {
    /// Hand-offs to the `serve` named in `state_dir`.
    pub fn new(state_dir: &Path) -> Self {
        Self {
            state_dir: state_dir.to_path_buf(),
        }
    }

    /// The address of the project's running `serve` and its process; `Ok(None)` when there is
    /// no `serve.json`, `Err` with why the one there is not used.
    fn find(&self) -> Result<Option<(SocketAddr, Owner)>, String> {
        let path = self.state_dir.join(SERVE_FILE);
        if let Err(e) = path.symlink_metadata()
            && e.kind() == std::io::ErrorKind::NotFound
        {
            return Ok(None);
        }
        let Published { owner, address } = read_published(&path)?;
        if !address.ip().is_loopback() {
            return Err(format!("{address} is not a loopback address"));
        }
        if owner.pid == std::process::id() {
            return Err("it names this process".to_string());
        }
        if !owner.is_alive() {
            return Err(format!("process {} is gone (a stale entry)", owner.pid));
        }
        same_program(owner.pid)?;
        // Not the proof (serve may exit and its port be taken after this look), but no
        // connection at all is made to a listener that is not serve's at this moment.
        if !listens_on(owner.pid, address) {
            return Err(format!(
                "process {} does not listen on {address}",
                owner.pid
            ));
        }
        Ok(Some((address, owner)))
    }

    /// A connection to `address` whose far end is proved to be `owner`'s socket.
    ///
    /// Why on the connection and not on the address: a check that `owner` listens there and a
    /// connection made after it are two moments; `serve` may exit between them and another
    /// local process (another user's) take the port, and it would get the token. Here the
    /// connection is made first, then its far end — the established socket in
    /// `/proc/net/tcp{,6}` whose local address is our peer and whose peer is our local
    /// address, unique while the connection lives — must be one of `owner`'s open files, and
    /// `owner` must still be the process that `find` checked (same start time, so its pid was
    /// not reused). Only then does anything go over this same connection. Whoever accepts on a
    /// port — a listener that took it over, one sharing serve's listening socket — holds the
    /// accepted socket, so no one but serve can pass. (A Unix socket checked with
    /// `SO_PEERCRED` would give the same proof, but needs a second listener in `serve`.)
    async fn connect(&self, address: SocketAddr, owner: &Owner) -> Result<TcpStream, String> {
        let stream = tokio::time::timeout(CONNECT_LIMIT, TcpStream::connect(address))
            .await
            .map_err(|_| format!("no connection to {address} within {CONNECT_LIMIT:?}"))?
            .map_err(|e| format!("cannot connect to {address}: {e}"))?;
        let (ours, theirs) = (
            stream.local_addr().map_err(|e| e.to_string())?,
            stream.peer_addr().map_err(|e| e.to_string())?,
        );
        // The kernel lists the accepted socket (with its inode) a moment before the file
        // descriptor is in the acceptor's table: a far end seen but not yet held is looked at
        // again for `HELD_GRACE`, never judged on one look. The inode is this connection's for
        // as long as it lives, so the proof is the same. One look reads small `/proc` files,
        // off the async threads.
        let pid = owner.pid;
        let mut seen: Option<tokio::time::Instant> = None;
        let waited = tokio::time::timeout(ACCEPT_LIMIT, async {
            loop {
                let look = tokio::task::spawn_blocking(move || {
                    far_end_inode(ours, theirs)
                        .filter(|inode| *inode != 0)
                        .map(|inode| (inode, holds_socket(pid, inode)))
                })
                .await;
                match look {
                    Ok(Some((_, true))) => return true,
                    // Accepted but not (yet) held by serve.
                    Ok(Some((_, false))) => {
                        let first = *seen.get_or_insert_with(tokio::time::Instant::now);
                        if first.elapsed() >= HELD_GRACE {
                            return false;
                        }
                    }
                    // Not yet accepted (the kernel shows inode 0) or not yet listed.
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "a look at /proc for the hand-off's connection failed"),
                }
                tokio::time::sleep(ACCEPT_POLL).await;
            }
        })
        .await;
        match (waited, seen) {
            (Ok(true), _) if owner.is_alive() => {}
            (Ok(_), _) | (Err(_), Some(_)) => {
                return Err(format!(
                    "the connection to {address} was accepted by another process than {}",
                    owner.pid
                ));
            }
            (Err(_), None) => {
                return Err(format!(
                    "the connection to {address} was not accepted within {ACCEPT_LIMIT:?}"
                ));
            }
        }
        Ok(stream)
    }

    /// Posts `body` to `serve`'s `/api/sessions` over `stream` (proved by [`Self::connect`]),
    /// with the local token.
    async fn post(
        &self,
        stream: TcpStream,
        address: SocketAddr,
        body: &Map<String, Value>,
    ) -> Result<Value, String> {
        let token = toolmux_files::read_text(
            &self.state_dir.join(toolmux_http::LOCAL_TOKEN_FILE),
            SERVE_FILE_CAP,
            toolmux_files::Links::Refuse,
        )
        .map_err(|e| format!("the local token cannot be read: {e}"))?;
        let body = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        // One request over the connection already proved: no client pool, no redirect, no
        // proxy, no second connection that would need its own proof.
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        // The connection is driven beside the request; its failure is the request's too
        // (`send_request` says why), so here it is only logged.
        let driver = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "the hand-off connection to serve ended with an error");
            }
        });
        let request = hyper::Request::post("/api/sessions")
            .header(hyper::header::HOST, address.to_string())
            .header(
                hyper::header::AUTHORIZATION,
                format!("Bearer {}", token.trim()),
            )
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let answered = tokio::time::timeout(ANSWER_LIMIT, async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let bytes = Limited::new(response.into_body(), ANSWER_CAP)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        format!("its answer is larger than {ANSWER_CAP} bytes")
                    } else {
                        e.to_string()
                    }
                })?
                .to_bytes();
            Ok::<_, String>((status, bytes))
        })
        .await;
        driver.abort();
        let (status, bytes) =
            answered.map_err(|_| format!("no answer within {ANSWER_LIMIT:?}"))??;
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("its answer ({status}) is not JSON: {e}"))?;
        if status.is_success() {
            Ok(answer)
        } else {
            let message = answer["error"]["message"]
                .as_str()
                .or_else(|| answer["message"].as_str())
                .map_or_else(|| answer.to_string(), str::to_string);
            Err(format!("it answered {status}: {message}"))
        }
    }
}

#[async_trait::async_trait]
impl Handoff for ServeHandoff {
    async fn start(
        &self,
        arguments: &Map<String, Value>,
    ) -> Option<Result<SessionRecord, SessionError>> {
        let refused = |why: String| {
            tracing::warn!(
                "not handing the session to `toolmux serve`: `{}`: {why}; it runs in this process",
                self.state_dir.join(SERVE_FILE).display()
            );
        };
        let (address, owner) = match self.find() {
            Ok(found) => found?,
            Err(why) => {
                refused(why);
                return None;
            }
        };
        // Nothing has been sent yet: a connection that is not proved to be serve's means the
        // session runs here, as without a serve.
        let stream = match self.connect(address, &owner).await {
            Ok(stream) => stream,
            Err(why) => {
                refused(why);
                return None;
            }
        };
        let pid = owner.pid;
        // `serve` applies its own policy: when it asks, the answer is given there, and this
        // call waits for it; say so rather than wait in silence.
        eprintln!(
            "toolmux: handing the session to `toolmux serve` (pid {pid}, {address}); if its \
             policy asks about `run_session`, answer in its web app"
        );
        let answer = self
            .post(stream, address, arguments)
            .await
            .and_then(|answer| {
                serde_json::from_value::<SessionRecord>(answer)
                    .map_err(|e| format!("its answer is not a session: {e}"))
            });
        Some(match answer {
            Ok(record) => {
                eprintln!(
                    "toolmux: session {} handed to `toolmux serve` (pid {pid}, {address}); it \
                     runs there after this process exits",
                    record.id
                );
                Ok(record)
            }
            // Sent: what `serve` did with it stands (a refusal there is not overruled here).
            Err(why) => Err(SessionError::Failed(format!(
                "the session was handed to `toolmux serve` (pid {pid}, {address}), which did \
                 not start it: {why}"
            ))),
        })
    }
}

/// Whether process `pid` runs this program's binary: its `/proc/<pid>/exe` is this process's
/// (a process of another user cannot be inspected, so it never does).
///
/// A `serve` started before this binary was replaced (an upgrade) runs a file that is gone:
/// the kernel names it `<path> (deleted)`. That is refused, with that reason: the file it runs
/// is no longer there to be compared (a device and inode comparison fails the same way, the
/// new binary being a new file), it may be any older version with another API, and the fix is
/// in the user's hands — restart `serve`.
fn same_program(pid: u32) -> Result<(), String> {
    let theirs = std::fs::read_link(format!("/proc/{pid}/exe"));
    let ours = std::fs::read_link("/proc/self/exe");
    match (theirs, ours) {
        (Ok(theirs), Ok(ours)) if theirs == ours => Ok(()),
        (Ok(theirs), Ok(ours))
            if theirs.as_os_str().to_string_lossy() == format!("{} (deleted)", ours.display()) =>
        {
            Err(format!(
                "process {pid} runs the toolmux binary that {} replaced (an upgrade since it \
                 started); restart `toolmux serve` to hand sessions to it",
                ours.display()
            ))
        }
        _ => Err(format!(
            "process {pid} is not this toolmux program run by this user"
        )),
    }
}

/// Whether process `pid` holds a listening TCP socket that `address` reaches: on its port and
/// on its IP or the unspecified one (read from `/proc`; a process of another user cannot be
/// inspected, so it never does). The IP counts: another listener may hold the same port on
/// another loopback address (`127.0.0.2`, `::1`), and it must not get the token.
fn listens_on(pid: u32, address: SocketAddr) -> bool {
    let address = canonical(address);
    proc_sockets()
        .filter(|socket| {
            socket.listening
                && socket.local.port() == address.port()
                && (socket.local.ip().is_unspecified() || socket.local.ip() == address.ip())
        })
        .any(|socket| holds_socket(pid, socket.inode))
}

/// The inode of the socket at the far end of our connection from `ours` to `theirs`: the
/// entry whose local address is `theirs` and whose peer is `ours` (0 until it is accepted).
fn far_end_inode(ours: SocketAddr, theirs: SocketAddr) -> Option<u64> {
    let (ours, theirs) = (canonical(ours), canonical(theirs));
    proc_sockets()
        .find(|socket| !socket.listening && socket.local == theirs && socket.remote == ours)
        .map(|socket| socket.inode)
}

/// Whether socket `inode` is one of process `pid`'s open files.
fn holds_socket(pid: u32, inode: u64) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let wanted = format!("socket:[{inode}]");
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == wanted.as_str())
    })
}

/// An address as `/proc/net/tcp{,6}` compares: an IPv4-mapped IPv6 IP as its IPv4 one.
fn canonical(address: SocketAddr) -> SocketAddr {
    SocketAddr::new(address.ip().to_canonical(), address.port())
}

/// One TCP socket of this network namespace, as a line of `/proc/net/tcp{,6}` lists it.
#[derive(Debug, PartialEq)]
struct ProcSocket {
    local: SocketAddr,
    remote: SocketAddr,
    /// State `0A`.
    listening: bool,
    /// 0 for a connection not yet accepted.
    inode: u64,
}

/// Every TCP socket of this network namespace, IPv4 and IPv6.
fn proc_sockets() -> impl Iterator<Item = ProcSocket> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .into_iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(proc_socket)
                .collect::<Vec<_>>()
        })
}

/// One line of `/proc/net/tcp{,6}`: `sl local rem st queues tr retrnsmt uid timeout inode …`.
fn proc_socket(line: &str) -> Option<ProcSocket> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let address = |field: &str| -> Option<SocketAddr> {
        let (ip, port) = field.rsplit_once(':')?;
        Some(SocketAddr::new(
            proc_net_ip(ip)?,
            u16::from_str_radix(port, 16).ok()?,
        ))
    };
    Some(ProcSocket {
        local: address(fields.get(1)?)?,
        remote: address(fields.get(2)?)?,
        listening: *fields.get(3)? == "0A",
        inode: fields.get(9)?.parse().ok()?,
    })
}

/// An IP as `/proc/net/tcp{,6}` writes it: hex of 32-bit words in the machine's byte order
/// (8 digits for IPv4, 32 for IPv6), an IPv4-mapped IPv6 one as its IPv4 address.
fn proc_net_ip(hex: &str) -> Option<std::net::IpAddr> {
    let word = |i: usize| -> Option<[u8; 4]> {
        Some(
            u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16)
                .ok()?
                .to_ne_bytes(),
        )
    };
    match hex.len() {
        8 => Some(std::net::Ipv4Addr::from(word(0)?).into()),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            Some(std::net::IpAddr::from(std::net::Ipv6Addr::from(bytes)).to_canonical())
        }
        _ => None,
    }
}

#[cfg(test)]
mod proc_net_tests {
    use super::*;

    /// `/proc/net/tcp{,6}` lines as Linux writes them on this (little-endian) machine: a
    /// listener on 127.0.0.1:8080, one on `::` and one on `::1`, and an established
    /// connection over IPv4-mapped IPv6 (the far end of a connection to a dual-stack
    /// listener), compared as IPv4.
    #[test]
    fn proc_net_lines_are_read_with_their_ips_ports_state_and_inode() {
        let at = |a: &str| a.parse::<SocketAddr>().expect("an address");
        let v4 = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1";
        assert_eq!(
            proc_socket(v4),
            Some(ProcSocket {
                local: at("127.0.0.1:8080"),
                remote: at("0.0.0.0:0"),
                listening: true,
                inode: 4242
            })
        );
        let any6 = "   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 77 1";
        assert_eq!(proc_socket(any6).map(|s| s.local), Some(at("[::]:8080")));
        let loop6 = "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 78 1";
        assert_eq!(proc_socket(loop6).map(|s| s.local), Some(at("[::1]:8080")));
        let mapped = "   3: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 0 1";
        assert_eq!(
            proc_socket(mapped),
            Some(ProcSocket {
                local: at("127.0.0.1:8080"),
                remote: at("127.0.0.1:54321"),
                listening: false,
                inode: 0
            })
        );
        assert_eq!(proc_socket("garbage"), None);
    }

    /// A real connection of this process to a listener of its own: its far end is found, not
    /// yet accepted (inode 0), then accepted, held by this process.
    #[test]
    fn the_far_end_of_a_real_connection_is_found_and_its_holder_known() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let stream =
            std::net::TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
        let (ours, theirs) = (
            stream.local_addr().expect("local"),
            stream.peer_addr().expect("peer"),
        );
        assert_eq!(far_end_inode(ours, theirs), Some(0));
        let (_accepted, _) = listener.accept().expect("accept");
        let inode = far_end_inode(ours, theirs).expect("listed");
        assert_ne!(inode, 0);
        assert!(holds_socket(std::process::id(), inode));
        assert!(listens_on(std::process::id(), theirs));
        assert!(!listens_on(
            std::process::id(),
            SocketAddr::new([127, 0, 0, 2].into(), theirs.port())
        ));
    }

    /// A serve leaving removes its own entry, and only its own: another serve's entry, written
    /// over ours since, stays as it was, and nothing is left beside it.
    #[test]
    fn a_leaving_serve_removes_its_own_entry_and_leaves_another_serves() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(SERVE_FILE);
        let at: SocketAddr = "127.0.0.1:8080".parse().expect("an address");
        drop(publish(dir.path(), at).expect("published"));
        assert!(!path.exists());

        let publication = publish(dir.path(), at).expect("published");
        let other = r#"{"owner":{"pid":1,"startTime":1},"address":"127.0.0.1:9090"}"#;
        std::fs::write(&path, other).expect("another serve's entry");
        drop(publication);
        assert_eq!(std::fs::read_to_string(&path).expect("still there"), other);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, [SERVE_FILE]);
    }
}
