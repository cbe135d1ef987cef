//! Rebuilds the crate when the web app's build output changes: the embed derive lists
//! `web/dist` at compile time, and a new hashed file name would otherwise go unnoticed.
fn main() {
    println!("cargo:rerun-if-changed=../../web/dist");
}
