//! Whether this system can give the sandbox of `toolmux-exec`, found independently of it (with
//! util-linux's `unshare`, as the test's own user): a test that accepts a `shell.requireSandbox`
//! refusal asks here first, so that where the system can sandbox a refusal is a failure, never
//! a vacuous pass.

use std::process::{Command, Stdio};

/// Whether the test's user can make the namespaces the sandbox enters: user, mount, IPC,
/// network and PID.
pub fn system_can_sandbox() -> bool {
    unshare(&[])
}

/// Whether, besides, a `/proc` of the new PID namespace can be mounted (a container's masked
/// `/proc` forbids it in a user namespace).
pub fn system_can_mount_proc() -> bool {
    unshare(&["--mount-proc"])
}

fn unshare(more: &[&str]) -> bool {
    Command::new("unshare")
        .args([
            "--user",
            "--map-current-user",
            "--mount",
            "--ipc",
            "--net",
            "--pid",
            "--fork",
        ])
        .args(more)
        .arg("true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// What opening a file of toolmux's own `/proc` entry says from inside the sandbox, given the
/// notes of the call's sandbox report: nothing of toolmux is in a `/proc` of the command's own
/// PID namespace; where none could be mounted (the notes say so — asserted to happen only
/// where the system cannot), the entry is there and refused.
pub fn toolmux_proc_refusal(notes: &str) -> &'static str {
    if notes.contains("`/proc` of the command's own could not be mounted") {
        assert!(!system_can_mount_proc(), "{notes}");
        "Permission denied"
    } else {
        "No such file or directory"
    }
}
