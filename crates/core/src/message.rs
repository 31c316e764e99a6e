//! Messages the plugins hand to an agent: [`UserMessage`] with a [`MessageSource`] and the
//! [`Subject`]s it is about, and the [`ContentBlock`]s that messages and tool results are made
//! of.

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

/// What a plugin's message is about, set by the plugin that raises it and never read from the
/// message's text: whoever waits for news of a job or a reminder (a task of the MCP server, a
/// hold on a delivery) matches subjects, so a label the model wrote that reads like another
/// job's notice is never taken for it. Not model-facing: the text says what the model reads.
///
/// Serialized with a `kind` tag: `{"kind":"job","id":"bash-1"}`,
/// `{"kind":"jobNotice","id":"bash-1","key":"status"}`,
/// `{"kind":"reminder","id":"schedule-1","occurrence":1754395200000}`. More kinds may follow, so
/// matches outside this crate need a fallback arm, and a reader meeting an unknown kind in a
/// log refuses it as it refuses any payload it cannot decode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub enum Subject {
    /// A background job, by its job id (`bash-1`), whatever its kind: its completion notice,
    /// the notice that it was lost with its host, or a notice it raised while running.
    Job {
        /// The job id.
        id: String,
    },
    /// A notice a running job raised, by job id and the notice's coalescing key: a later
    /// notice with the same subject replaces one not delivered yet. Not the job's own subject:
    /// who waits for the job's end (a task) is not answered by it.
    JobNotice {
        /// The job id.
        id: String,
        /// The coalescing key the job chose.
        key: String,
    },
    /// One occurrence of a reminder: the schedule id (`schedule-1`) and the instant the
    /// occurrence was due, in milliseconds since the Unix epoch (UTC).
    Reminder {
        /// The schedule id.
        id: String,
        /// The occurrence's due instant, epoch milliseconds.
        occurrence: i64,
    },
}

impl Subject {
    /// A job's subject.
    pub fn job(id: impl Into<String>) -> Self {
        Subject::Job { id: id.into() }
    }

    /// A running job's notice's subject: job `id`, coalescing key `key`.
    pub fn job_notice(id: impl Into<String>, key: impl Into<String>) -> Self {
        Subject::JobNotice {
            id: id.into(),
            key: key.into(),
        }
    }

    /// A reminder occurrence's subject: schedule `id`, due at `occurrence` (epoch ms).
    pub fn reminder(id: impl Into<String>, occurrence: i64) -> Self {
        Subject::Reminder {
            id: id.into(),
            occurrence,
        }
    }

    /// Whether `self` and `other` are about the same thing: the same kind and id, whatever
    /// the occurrence (every occurrence of schedule `schedule-1` is about that schedule).
    pub fn same_thing(&self, other: &Subject) -> bool {
        match (self, other) {
            (Subject::Job { id: a }, Subject::Job { id: b }) => a == b,
            (Subject::JobNotice { id: a, key: k }, Subject::JobNotice { id: b, key: l }) => {
                a == b && k == l
            }
            (Subject::Reminder { id: a, .. }, Subject::Reminder { id: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// A user-role message: a fresh unique `id`, text content, a source and the subjects it is
/// about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Unique within the process (`msg-<n>`).
    pub id: String,
    /// Content blocks.
    pub content: Vec<ContentBlock>,
    /// Who authored it.
    pub source: MessageSource,
    /// What it is about, in the order its text names them (a lost-jobs notice names each job,
    /// a batch of reminders each occurrence); empty for a message about nothing in particular
    /// (one the user typed). Absent from the serialized form when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<Subject>,
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
            subjects: Vec::new(),
        }
    }

    /// This message, about `subjects` (replacing any it had).
    #[must_use]
    pub fn about(mut self, subjects: Vec<Subject>) -> Self {
        self.subjects = subjects;
        self
    }

    /// Whether this message is about the same thing as `subject` (see
    /// [`Subject::same_thing`]).
    pub fn is_about(&self, subject: &Subject) -> bool {
        self.subjects.iter().any(|s| s.same_thing(subject))
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
