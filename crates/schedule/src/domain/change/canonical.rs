//! A change in exactly the canonical form, read by position without a JSON parser: the
//! replay's fast path (the whole change, or only a transition's operation, id and time).

use std::sync::Arc;

use turnkit_core::MAX_SAFE_INTEGER;

use super::decode::cron_rule;
use super::operation::ScheduleChange;
use super::record::{Rule, ScheduleRecord, check_id};
use crate::domain::instant::Timestamp;

/// A change in exactly the form [`ScheduleChange`] serializes to (keys in §3.2 order, no
/// whitespace, strings without escapes, plain integers), read by position; `None` for any
/// other text or an invalid change. The text's strings and numbers are then their values, so
/// every rule of [`decode_change`] is checked on them as it is.
pub(super) fn canonical_change(text: &str) -> Option<ScheduleChange> {
    let mut c = Cursor(text);
    c.tag("{\"version\":1,\"operation\":\"")?;
    let operation = c.string()?;
    if operation == "create" {
        c.tag(",\"schedule\":{\"id\":\"")?;
        let id = c.string()?;
        c.tag(",\"kind\":\"")?;
        let kind = c.string()?;
        c.tag(",\"prompt\":\"")?;
        let prompt = c.string()?;
        let rule = match kind {
            "after" => {
                c.tag(",\"afterSeconds\":")?;
                Rule::After {
                    seconds: c.integer()?,
                }
            }
            "every" => {
                c.tag(",\"everySeconds\":")?;
                Rule::Every {
                    seconds: c.integer()?,
                }
            }
            "at" => Rule::At,
            "cron" => {
                c.tag(",\"cron\":\"")?;
                let cron = c.string()?;
                c.tag(",\"timeZone\":\"")?;
                cron_rule(cron, c.string()?)?
            }
            _ => return None,
        };
        c.tag(",\"scheduledAt\":\"")?;
        let scheduled_at = Timestamp::parse(c.string()?)?;
        c.tag("}}")?;
        return c
            .0
            .is_empty()
            .then_some(())
            .and_then(|()| ScheduleRecord::new(id, prompt, rule, scheduled_at).ok())
            .map(ScheduleChange::Create);
    }
    let transition = canonical_transition_rest(operation, c)?;
    let id = Arc::<str>::from(transition.id());
    Some(match transition {
        ChangeRef::Delete(_) => ScheduleChange::Delete { id },
        ChangeRef::Dispatch(_) => ScheduleChange::Dispatch { id },
        ChangeRef::DispatchEvery(_, accepted_at) => {
            ScheduleChange::DispatchEvery { id, accepted_at }
        }
    })
}

/// A delete or dispatch, its id borrowed from the payload text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChangeRef<'a> {
    /// [`ScheduleChange::Delete`].
    Delete(&'a str),
    /// [`ScheduleChange::Dispatch`].
    Dispatch(&'a str),
    /// [`ScheduleChange::DispatchEvery`].
    DispatchEvery(&'a str, Timestamp),
}

impl<'a> ChangeRef<'a> {
    /// The id the change is about.
    pub(crate) fn id(self) -> &'a str {
        match self {
            ChangeRef::Delete(id) | ChangeRef::Dispatch(id) | ChangeRef::DispatchEvery(id, _) => id,
        }
    }
}

/// A delete or dispatch in exactly the form [`canonical_change`] reads, with its id borrowed
/// from `text` (what [`decode_change_text`] decodes it to, without allocating); `None` for
/// any other text, a create included.
pub(crate) fn canonical_transition(text: &str) -> Option<ChangeRef<'_>> {
    let mut c = Cursor(text);
    c.tag("{\"version\":1,\"operation\":\"")?;
    let operation = c.string()?;
    if operation == "create" {
        return None;
    }
    canonical_transition_rest(operation, c)
}

/// The rest of a canonical delete or dispatch after its operation.
pub(super) fn canonical_transition_rest<'a>(
    operation: &str,
    mut c: Cursor<'a>,
) -> Option<ChangeRef<'a>> {
    c.tag(",\"id\":\"")?;
    let id = c.string()?;
    check_id(id).ok()?;
    match (operation, c.0) {
        ("delete", "}") => Some(ChangeRef::Delete(id)),
        ("dispatch", "}") => Some(ChangeRef::Dispatch(id)),
        ("dispatch", _) => {
            c.tag(",\"acceptedAt\":\"")?;
            let accepted_at = Timestamp::parse(c.string()?)?;
            (c.0 == "}").then_some(ChangeRef::DispatchEvery(id, accepted_at))
        }
        _ => None,
    }
}

/// The unread rest of a payload text, for [`canonical_change`].
pub(super) struct Cursor<'a>(&'a str);

impl<'a> Cursor<'a> {
    /// Consumes `tag` exactly.
    fn tag(&mut self, tag: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(tag)?;
        Some(())
    }

    /// Consumes a string's body and closing quote (the opening quote is part of the tag
    /// before it); `None` if it holds an escape or a control character.
    fn string(&mut self) -> Option<&'a str> {
        let end = self
            .0
            .bytes()
            .position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
        if self.0.as_bytes()[end] != b'"' {
            return None;
        }
        let (body, rest) = self.0.split_at(end);
        self.0 = &rest[1..];
        Some(body)
    }

    /// Consumes a plain non-negative integer (no sign, fraction, exponent or leading zero)
    /// that is a safe integer.
    fn integer(&mut self) -> Option<i64> {
        let digits = self.0.bytes().position(|b| !b.is_ascii_digit())?;
        let (number, rest) = self.0.split_at(digits);
        if digits == 0 || digits > 16 || (digits > 1 && number.starts_with('0')) {
            return None;
        }
        if !matches!(rest.as_bytes().first(), Some(b',' | b'}')) {
            return None;
        }
        let value: i64 = number.parse().ok()?;
        self.0 = rest;
        (value <= MAX_SAFE_INTEGER).then_some(value)
    }
}
