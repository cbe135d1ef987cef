//! A session's own git worktree: `git worktree add -b <branch> <path> HEAD`, under
//! `.toolmux/worktrees/<id>`, left for the person when the session ends (their branch holds
//! the agent's work).

use std::path::Path;
use std::time::Duration;

use crate::error::SessionError;
use crate::record::Worktree;

/// Creates `worktree` from the root's `HEAD`.
pub async fn create(root: &Path, worktree: &Worktree) -> Result<(), SessionError> {
    refuse_a_redirected_repository(root)?;
    if let Some(parent) = worktree.path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| SessionError::io(parent, e))?;
    }
    // The branch is stuck to `-b` and the paths come after `--`, so that nothing here is
    // read as another option of git whatever the names (the plan refuses a branch starting
    // with `-` already; this holds for any caller of `create`).
    let args = vec![
        "worktree".to_string(),
        "add".to_string(),
        format!("-b{}", worktree.branch),
        "--".to_string(),
        worktree.path.display().to_string(),
        "HEAD".to_string(),
    ];
    let git = crate::runners::which("git")
        .ok_or_else(|| SessionError::Failed("a worktree needs git, which is not on PATH".into()))?;
    let no_env: [(&str, &str); 0] = [];
    let (child, mut guard) =
        toolmux_scripts::child::spawn(git.as_os_str(), &args, root, no_env, false)
            .map_err(|e| SessionError::Failed(format!("cannot start git: {e}")))?;
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await;
    guard.sweep().await;
    match output {
        Err(_) => Err(SessionError::Failed(
            "`git worktree add` did not finish within 60s".into(),
        )),
        Ok(Err(e)) => Err(SessionError::Failed(format!("git: {e}"))),
        Ok(Ok(out)) if !out.status.success() => Err(SessionError::Failed(format!(
            "`git worktree add -b {} {}` failed: {}",
            worktree.branch,
            worktree.path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        Ok(Ok(_)) => Ok(()),
    }
}

/// The most of `.git/commondir` read: git writes one path there.
const MAX_COMMONDIR_BYTES: u64 = 4096;

/// Refuses a repository whose `.git/commondir` sends git elsewhere. A main repository's `.git`
/// folder has none, or the `.` the exec pack's sandbox makes so that it can keep it read-only;
/// anything else was planted (by a command, while `.git` was writable and no sandbox kept it)
/// so that git reads another folder's `config` and `hooks`, which toolmux's own `git`, run
/// here outside any sandbox, would then obey.
///
/// Whoever planted it chose what it is, too: it is read as git writes it — a regular file,
/// never through a link, a line of at most [`MAX_COMMONDIR_BYTES`] — and anything else is
/// refused unread (a FIFO would hold the session's start until someone wrote to it).
fn refuse_a_redirected_repository(root: &Path) -> Result<(), SessionError> {
    use toolmux_files::{Links, ReadTextError};
    let commondir = root.join(".git").join("commondir");
    let text = match toolmux_files::read_text(&commondir, MAX_COMMONDIR_BYTES, Links::Refuse) {
        Ok(text) => text,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(ReadTextError::Io(e)) => return Err(SessionError::io(&commondir, e)),
        Err(refused) => {
            return Err(SessionError::Failed(format!(
                "`{}` is not what git writes there ({refused}): something planted it. Remove \
                 it (and look at what is there) before starting a session in a worktree",
                commondir.display(),
            )));
        }
    };
    let target = text.trim_end_matches(['\n', '\r']);
    if target == "." {
        return Ok(());
    }
    // Quoted as Rust quotes a string (control characters escaped) and cut: whoever planted it
    // chose the text.
    let shown: String = target.chars().take(200).collect();
    Err(SessionError::Failed(format!(
        "`{}` sends git to {shown:?} for its configuration and hooks, which neither git nor \
         toolmux makes in a main repository: something planted it to have git run its own \
         commands. Remove it (and look at what is there) before starting a session in a \
         worktree",
        commondir.display(),
    )))
}
