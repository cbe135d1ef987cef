//! What only this crate's tests can have: scratch projects that drive its `toolmux` binary,
//! whose path cargo gives to this crate's integration tests alone. Everything else they share
//! is in `toolmux-testkit`.

use toolmux_testkit::project::TestProject;

/// An empty scratch project whose `cmd` and `run` start this crate's `toolmux`.
pub fn toolmux_project() -> TestProject {
    TestProject::driving(env!("CARGO_BIN_EXE_toolmux"))
}
