//! Byte-bounded fitting of model-facing text (todo-jobs §5.5 and §5.7).
//!
//! Provides [`fit_with_suffix`] (tail-keeping cap of a tool result with a fixed suffix and a
//! truncation marker), [`fit_notice`] (head-keeping cap of a completion notice that keeps the
//! job id and the collection instruction first), and the UTF-8 boundary helpers they share.
//! Every function here is pure, never panics, and returns valid UTF-8 of at most the limit in
//! bytes.

/// Marker appended when a `job_output` body is cut (rule A of §5.5).
pub const OUTPUT_MARKER: &str = turnkit_jobs::OUTPUT_TRUNCATED_MARKER;
/// Marker appended when any other single-text result is cut (rule B of §5.5).
pub(crate) const RESULT_MARKER: &str = "\n[result truncated]";
/// Marker inserted when a completion notice is cut (§5.7).
pub(crate) const NOTICE_MARKER: &str = "\n[notice truncated]";
/// The short collection instruction that ends a cut completion notice (§5.7).
pub(crate) const NOTICE_ACTION: &str = "\nDone; job_output.";

pub(crate) use turnkit_core::{tail_utf8, truncate_utf8 as head_utf8};

/// Fit-with-suffix (todo-jobs §5.5): bounds `content + suffix` to `limit` bytes, keeping the
/// suffix and the **tail** of the content.
///
/// 1. If `content + suffix` fits, it is returned unchanged.
/// 2. `fixed` is `marker + suffix`, except that the marker is left out when `content` already
///    ends with the marker minus its leading newline (a producer's own truncation marker is
///    reused instead of adding a second one).
/// 3. If `fixed` alone takes `limit` bytes or more, the result is the last `limit` bytes of
///    `fixed`.
/// 4. Otherwise the result is the last `limit − len(fixed)` bytes of `content` followed by
///    `fixed`.
///
/// Cuts drop partial code points, so the result may be a few bytes shorter than `limit`; it is
/// never longer.
///
/// ```
/// use turnkit_tool_jobs::{OUTPUT_MARKER, fit_with_suffix};
/// let text = fit_with_suffix(&"a".repeat(1000), "\n[status: running]", 64, OUTPUT_MARKER);
/// assert_eq!(text, format!("{}\n[output truncated]\n[status: running]", "a".repeat(27)));
/// ```
pub fn fit_with_suffix(content: &str, suffix: &str, limit: usize, marker: &str) -> String {
    if content.len() + suffix.len() <= limit {
        return format!("{content}{suffix}");
    }
    let bare_marker = marker.strip_prefix('\n').unwrap_or(marker);
    let reuse = !bare_marker.is_empty() && content.ends_with(bare_marker);
    let fixed = if reuse {
        suffix.to_owned()
    } else {
        format!("{marker}{suffix}")
    };
    if fixed.len() >= limit {
        return tail_utf8(&fixed, limit).to_owned();
    }
    let kept = tail_utf8(content, limit - fixed.len());
    format!("{kept}{fixed}")
}

/// The parts of a completion notice (todo-jobs §5.7): `background job <id>` is the prefix,
/// ` (<kind>: <label>) finished <status line>` the detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeParts<'a> {
    /// The job id.
    pub id: &'a str,
    /// The job kind.
    pub kind: &'a str,
    /// The job label.
    pub label: &'a str,
    /// The status line, e.g. `[status: completed, exit code: 0]`.
    pub status_line: &'a str,
}

impl NoticeParts<'_> {
    fn prefix(&self) -> String {
        format!("background job {}", self.id)
    }

    fn detail(&self) -> String {
        format!(
            " ({}: {}) finished {}",
            self.kind, self.label, self.status_line
        )
    }

    /// The complete, uncut notice:
    /// `background job <id> (<kind>: <label>) finished <status line>. Read its output with job_output.`
    pub fn complete(&self) -> String {
        format!(
            "{}{}. Read its output with job_output.",
            self.prefix(),
            self.detail()
        )
    }
}

/// The completion notice for `parts`, bounded to `limit` bytes when the job has an
/// `outputLimitBytes` (todo-jobs §5.7). `None` means no limit: the complete notice.
///
/// Priority: the complete notice; else prefix + as much detail as fits + marker + action;
/// else prefix + action; else the tail of the action; else the head of prefix + action. The
/// job id and the collection instruction therefore survive ahead of kind, label and status.
///
/// ```
/// use turnkit_tool_jobs::{NoticeParts, fit_notice};
/// let label = "x".repeat(1000);
/// let status = format!("[status: completed, {}]", "d".repeat(1000));
/// let parts = NoticeParts { id: "pty-send-100", kind: "pty-send", label: &label, status_line: &status };
/// assert_eq!(
///     fit_notice(&parts, Some(64)),
///     "background job pty-send-100\n[notice truncated]\nDone; job_output."
/// );
/// ```
pub fn fit_notice(parts: &NoticeParts<'_>, limit: Option<u64>) -> String {
    let complete = parts.complete();
    let Some(limit) = limit else {
        return complete;
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if complete.len() <= limit {
        return complete;
    }
    let prefix = parts.prefix();
    let fixed_len = prefix.len() + NOTICE_MARKER.len() + NOTICE_ACTION.len();
    if fixed_len <= limit {
        let detail = parts.detail();
        let kept = head_utf8(&detail, limit - fixed_len);
        return format!("{prefix}{kept}{NOTICE_MARKER}{NOTICE_ACTION}");
    }
    let compact = format!("{prefix}{NOTICE_ACTION}");
    if compact.len() <= limit {
        return compact;
    }
    if NOTICE_ACTION.len() >= limit {
        return tail_utf8(NOTICE_ACTION, limit).to_owned();
    }
    let kept = head_utf8(&prefix, limit - NOTICE_ACTION.len());
    format!("{kept}{NOTICE_ACTION}")
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod tests;
