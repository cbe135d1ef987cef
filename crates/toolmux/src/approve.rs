//! The command line's approver: a yes/no prompt on the terminal.

use std::io::IsTerminal;

use async_trait::async_trait;
use dialoguer::Confirm;
use dialoguer::console::Term;
use toolmux_core::{Approval, ApprovalRequest, Approver};

/// Asks on the terminal. Only installed when stdin and stderr are terminals; without one the
/// pipeline denies `ask` calls with a message saying how to change the policy.
pub struct TerminalApprover;

impl TerminalApprover {
    /// The approver, when there is a terminal to ask on.
    pub fn if_interactive() -> Option<Self> {
        (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then_some(Self)
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let prompt = format!(
            "{}\n  arguments: {}\nRun it?",
            request.message,
            serde_json::to_string(&request.arguments).unwrap_or_default()
        );
        let answer = tokio::task::spawn_blocking(move || {
            Confirm::new()
                .with_prompt(prompt)
                .default(false)
                .interact_on(&Term::stderr())
        })
        .await;
        match answer {
            Ok(Ok(true)) => Approval::Allow,
            Ok(Ok(false)) => Approval::Deny {
                reason: "the user declined at the terminal".to_string(),
            },
            Ok(Err(e)) => Approval::Deny {
                reason: format!("the terminal prompt failed: {e}"),
            },
            Err(e) => Approval::Deny {
                reason: format!("the terminal prompt failed: {e}"),
            },
        }
    }
}
