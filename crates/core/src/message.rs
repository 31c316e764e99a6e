//! Messages the plugins hand to an agent: [`UserMessage`] with a [`MessageSource`], and the
//! [`ContentBlock`]s that messages and tool results are made of.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// Who authored a user-role message (todo-jobs §1.5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum MessageSource {
    /// Typed by the user.
    User,
    /// Produced by a plugin, e.g. `{plugin:"tool-jobs", form:"notice", summary:…}` or
    /// `{plugin:"schedule"}`.
    Plugin {
        /// The plugin name (`tool-jobs`, `schedule`).
        plugin: String,
        /// The message form (`notice`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        form: Option<String>,
        /// A one-line summary (at most 120 characters), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
}

impl MessageSource {
    /// The name shown for this source in transcripts: `user` or the plugin name.
    pub fn name(&self) -> &str {
        match self {
            MessageSource::User => "user",
            MessageSource::Plugin { plugin, .. } => plugin,
        }
    }

    /// Whether the user typed the message.
    pub fn is_user(&self) -> bool {
        matches!(self, MessageSource::User)
    }
}

/// A user-role message: a fresh unique `id`, text content and a source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Unique within the process (`msg-<n>`).
    pub id: String,
    /// Content blocks.
    pub content: Vec<ContentBlock>,
    /// Who authored it.
    pub source: MessageSource,
}

static NEXT_MESSAGE: AtomicU64 = AtomicU64::new(1);

impl UserMessage {
    /// A one-text-block message with a fresh id.
    pub fn text(text: impl Into<String>, source: MessageSource) -> Self {
        let n = NEXT_MESSAGE.fetch_add(1, Ordering::Relaxed);
        Self {
            id: format!("msg-{n}"),
            content: vec![ContentBlock::text(text)],
            source,
        }
    }

    /// The text blocks joined with `\n`.
    pub fn joined_text(&self) -> String {
        join_text(&self.content)
    }
}

/// A content block of a tool result or message. Only text is used by these families; more
/// kinds (images, resources) may follow, so matches outside this crate need a fallback arm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// The block's text.
    pub fn as_text(&self) -> &str {
        match self {
            ContentBlock::Text { text } => text,
        }
    }
}

/// Joins the text of content blocks with `\n`.
pub fn join_text(blocks: &[ContentBlock]) -> String {
    let mut out = String::new();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(block.as_text());
    }
    out
}
