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
//! a `serve` that is gone, chooses its address. So the local token goes only to a loopback
//! address whose listening socket belongs to the very process the file names, which runs this
//! same program as this user (a process of another user cannot be inspected, so it never
//! qualifies). Anything else — no file, a link, a FIFO, a huge or garbled file, a dead or
//! foreign process — means no hand-off, with the reason logged, and the session runs here.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolmux_sessions::{Handoff, Owner, SessionError, SessionRecord};

/// The file under the project's state directory that a running `serve` names itself in.
pub const SERVE_FILE: &str = "serve.json";

/// The largest `serve.json` read: it holds a process id, a start time and an address.
const SERVE_FILE_CAP: u64 = 4096;

/// How long a hand-off waits to connect: `serve` is a local process that answers at once.
const CONNECT_LIMIT: Duration = Duration::from_secs(2);

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
        // its own since.
        let ours = read_published(&self.path)
            .ok()
            .is_some_and(|p| p.owner.pid == std::process::id());
        if ours && let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot remove the serve file");
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

    /// The address of the project's running `serve` and its pid; `Ok(None)` when there is no
    /// `serve.json`, `Err` with why the one there is not used.
    fn find(&self) -> Result<Option<(SocketAddr, u32)>, String> {
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
        let same_program = match (
            std::fs::read_link(format!("/proc/{}/exe", owner.pid)),
            std::fs::read_link("/proc/self/exe"),
        ) {
            (Ok(theirs), Ok(ours)) => theirs == ours,
            _ => false,
        };
        if !same_program {
            return Err(format!(
                "process {} is not this toolmux program run by this user",
                owner.pid
            ));
        }
        if !listens_on(owner.pid, address) {
            return Err(format!(
                "process {} does not listen on {address}",
                owner.pid
            ));
        }
        Ok(Some((address, owner.pid)))
    }

    async fn post(&self, address: SocketAddr, body: &Map<String, Value>) -> Result<Value, String> {
        let token = toolmux_files::read_text(
            &self.state_dir.join(toolmux_http::LOCAL_TOKEN_FILE),
            SERVE_FILE_CAP,
            toolmux_files::Links::Refuse,
        )
        .map_err(|e| format!("the local token cannot be read: {e}"))?;
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_LIMIT)
            .timeout(ANSWER_LIMIT)
            // Never to another address than the one checked.
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|e| e.to_string())?;
        let body = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        let mut response = client
            .post(format!("http://{address}/api/sessions"))
            .header("Authorization", format!("Bearer {}", token.trim()))
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if bytes.len() + chunk.len() > ANSWER_CAP {
                return Err(format!("its answer is larger than {ANSWER_CAP} bytes"));
            }
            bytes.extend_from_slice(&chunk);
        }
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
        let (address, pid) = match self.find() {
            Ok(found) => found?,
            Err(why) => {
                tracing::warn!(
                    "not handing the session to `toolmux serve`: `{}`: {why}; it runs in this process",
                    self.state_dir.join(SERVE_FILE).display()
                );
                return None;
            }
        };
        // `serve` applies its own policy: when it asks, the answer is given there, and this
        // call waits for it; say so rather than wait in silence.
        eprintln!(
            "toolmux: handing the session to `toolmux serve` (pid {pid}, {address}); if its \
             policy asks about `run_session`, answer in its web app"
        );
        let answer = self.post(address, arguments).await.and_then(|answer| {
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

/// Whether process `pid` holds a listening TCP socket that `address` reaches: on its port and
/// on its IP or the unspecified one (read from `/proc`; a process of another user cannot be
/// inspected, so it never does). The IP counts: another listener may hold the same port on
/// another loopback address (`127.0.0.2`, `::1`), and it must not get the token.
fn listens_on(pid: u32, address: SocketAddr) -> bool {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|line| listening_inode(line, address))
                .collect::<Vec<_>>()
        })
        .collect();
    if inodes.is_empty() {
        return false;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let target = target.to_string_lossy();
            inodes
                .iter()
                .any(|inode| target == format!("socket:[{inode}]"))
        })
    })
}

/// The socket inode of one line of `/proc/net/tcp{,6}` when it is a listening socket
/// (state `0A`) that `address` reaches.
fn listening_inode(line: &str, address: SocketAddr) -> Option<String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (local_ip, local_port) = fields.get(1)?.rsplit_once(':')?;
    let listening = fields.get(3)? == &"0A";
    let ip = proc_net_ip(local_ip)?;
    let reaches = ip.is_unspecified() || ip == address.ip().to_canonical();
    (listening && reaches && u16::from_str_radix(local_port, 16).ok()? == address.port())
        .then(|| fields.get(9).map(|inode| (*inode).to_string()))
        .flatten()
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
    /// listener on 127.0.0.1:8080 is reached by that address only, one on `::` by any.
    #[test]
    fn a_listener_is_reached_by_its_own_ip_or_from_the_unspecified_one() {
        let v4 = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1";
        let at = |a: &str| a.parse::<SocketAddr>().expect("an address");
        assert_eq!(
            listening_inode(v4, at("127.0.0.1:8080")).as_deref(),
            Some("4242")
        );
        assert_eq!(listening_inode(v4, at("127.0.0.2:8080")), None);
        assert_eq!(listening_inode(v4, at("[::1]:8080")), None);
        assert_eq!(listening_inode(v4, at("127.0.0.1:8081")), None);
        let any6 = "   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 77 1";
        assert_eq!(
            listening_inode(any6, at("127.0.0.2:8080")).as_deref(),
            Some("77")
        );
        let loop6 = "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 78 1";
        assert_eq!(
            listening_inode(loop6, at("[::1]:8080")).as_deref(),
            Some("78")
        );
        assert_eq!(listening_inode(loop6, at("127.0.0.1:8080")), None);
    }
}
