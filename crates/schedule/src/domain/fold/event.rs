//! What the fold reads of an event: a decoded [`SessionEvent`] and a [`RawEvent`] fold alike.

use turnkit_core::{RawEvent, SessionEvent};

use crate::domain::change::{
    ChangeRef, SCHEDULE_CHANGE, ScheduleChange, canonical_transition, decode_change,
    decode_change_text,
};
use crate::domain::error::ScheduleLogError;

/// What the fold reads of an event: both event forms fold alike.
pub(super) trait FoldEvent {
    fn seq(&self) -> u64;
    /// Whether the event is a `schedule/change` (decided without decoding the payload).
    fn is_change(&self) -> bool;
    /// The payload decoded strictly (§4).
    fn change(&self) -> Result<ScheduleChange, ScheduleLogError>;
    /// The payload as a delete or dispatch read in place, when it is in its canonical form
    /// (then [`FoldEvent::change`] decodes it to the same change).
    fn transition(&self) -> Option<ChangeRef<'_>> {
        None
    }
}

impl FoldEvent for SessionEvent {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn is_change(&self) -> bool {
        self.r#type == SCHEDULE_CHANGE
    }
    fn change(&self) -> Result<ScheduleChange, ScheduleLogError> {
        decode_change(&self.data)
    }
}

impl FoldEvent for RawEvent {
    fn seq(&self) -> u64 {
        RawEvent::seq(self)
    }
    fn is_change(&self) -> bool {
        self.r#type() == SCHEDULE_CHANGE
    }
    fn change(&self) -> Result<ScheduleChange, ScheduleLogError> {
        decode_change_text(self.payload())
    }
    fn transition(&self) -> Option<ChangeRef<'_>> {
        canonical_transition(self.payload())
    }
}
