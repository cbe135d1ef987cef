//! What toolmux's tests share, one module per job: finding the real peers ([`peers`]), waiting
//! for something a process does on its own time ([`eventually`]), watching the processes a test
//! starts ([`processes`]), scratch projects ([`project`]), FIFOs ([`fifo`]), the Python MCP
//! servers several tests start ([`servers`]), the Python MCP client ([`python_client`]), aimock
//! ([`aimock`]), a plain HTTP/1.1 client ([`http`]), `toolmux serve` in the background
//! ([`served`]), an OAuth authorization server for `server.auth` ([`issuer`]) and whether
//! this system can sandbox commands ([`sandbox`]), and a big catalog of made-up upstream tools
//! for discovery mode ([`big_catalog`]).
//!
//! A dev-only library: a crate's tests take what they need from it, and what is specific to one
//! crate's tests stays in that crate. It depends on no toolmux crate whose tests use it (they
//! would form a cycle); `toolmux-trust`, whose list of built-in tool names it serves as
//! [`served::DEFAULT_TOOLS`], is the one it takes.

pub mod aimock;
pub mod big_catalog;
pub mod conformance;
pub mod eventually;
pub mod fifo;
pub mod http;
pub mod issuer;
pub mod oauth_peers;
pub mod peers;
pub mod processes;
pub mod project;
pub mod python_client;
pub mod sandbox;
pub mod served;
pub mod servers;
