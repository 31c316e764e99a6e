//! [`TodoError`]: every way a `todo_write` call can fail (todo-jobs §2.3).

use turnkit_core::{AppendError, InvalidArguments};

/// Why `todo_write` refused a call. Nothing was appended in any case. The `Display` text is
/// the spec's exact message; the host renders it as `Error: <message>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TodoError {
    /// The arguments do not decode as `{todos:[{content,status}]}`. Schema validation in the
    /// host normally rejects such calls first (decision 2), with the same prefix.
    /// The text is `invalid arguments: <serde message>` ([`InvalidArguments`]).
    #[error(transparent)]
    InvalidArguments(#[from] InvalidArguments),
    /// An item's content is empty after trimming (step 1.2).
    #[error("invalid todo: `content` must be a non-empty string")]
    EmptyContent,
    /// An item's trimmed content equals an earlier item's (step 1.3). Holds the trimmed
    /// content; the message JSON-quotes it.
    #[error("invalid todos: duplicate content {}", json_quote(.0))]
    DuplicateContent(String),
    /// More than one item is `in_progress` under [`crate::InProgressPolicy::Single`]
    /// (step 2). Holds the count.
    #[error("invalid todos: at most one task may be in_progress (got {0})")]
    TooManyInProgress(usize),
    /// The call has no calling agent (step 3).
    #[error("todo_write requires an owning agent session")]
    NoAgent,
    /// The session refused the `todo/write` event (a closed session, a host veto or an
    /// injected fault). Not a spec message: the append error's own text.
    #[error(transparent)]
    Append(#[from] AppendError),
}

/// JSON string quoting (todo-jobs §2.3 "JSON quoting"): serde_json's escaping.
pub(crate) fn json_quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}
