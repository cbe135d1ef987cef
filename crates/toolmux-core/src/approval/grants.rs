//! "Allow for this conversation": tools a person allowed for the rest of a chat conversation,
//! which later calls of the same tool there find instead of asking again.

use std::collections::{HashMap, VecDeque};

use super::ApprovalRequest;
use crate::context::Channel;

/// How far a person's "allow" reaches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApprovalScope {
    /// This call only.
    #[default]
    Once,
    /// This call and every later call of the same tool in the same chat conversation.
    Conversation,
}

/// The chat conversation an approval request belongs to, if any: "for this conversation"
/// grants are kept by it.
pub(super) fn conversation_of(request: &ApprovalRequest) -> Option<&str> {
    match request.channel {
        Channel::Chat => request.session.as_deref(),
        _ => None,
    }
}

/// How many conversations keep "for this conversation" grants at once: a grant is a few bytes,
/// but they come from requests, so their number is bounded; past it the oldest conversation's
/// grants are forgotten (its calls ask again — the safe side).
const GRANT_CONVERSATIONS: usize = 4096;

/// Tools a person allowed for the rest of a chat conversation, by conversation, with the id of
/// the approval that allowed each, oldest conversation first. A tool is named with its source:
/// what a coding agent started from the conversation asks about (source `acp:…`, a name the
/// agent chose) never stands for the registry's tool of the same name.
#[derive(Default)]
pub(super) struct Grants {
    by_conversation: HashMap<String, HashMap<(String, String), uuid::Uuid>>,
    order: VecDeque<String>,
}

impl Grants {
    pub(super) fn grant(
        &mut self,
        conversation: &str,
        request: &ApprovalRequest,
        approval: uuid::Uuid,
    ) {
        if !self.by_conversation.contains_key(conversation) {
            if self.order.len() >= GRANT_CONVERSATIONS
                && let Some(oldest) = self.order.pop_front()
            {
                self.by_conversation.remove(&oldest);
            }
            self.order.push_back(conversation.to_string());
        }
        self.by_conversation
            .entry(conversation.to_string())
            .or_default()
            .insert((request.source.clone(), request.tool.clone()), approval);
    }

    pub(super) fn get(&self, conversation: &str, request: &ApprovalRequest) -> Option<uuid::Uuid> {
        let key = (request.source.clone(), request.tool.clone());
        self.by_conversation.get(conversation)?.get(&key).copied()
    }
}
