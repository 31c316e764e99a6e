//! [`ReminderIndex`]: the due-reminder rows a batch of `schedule/change` events implies, for a
//! store that keeps a due index next to the log (the PostgreSQL store's reminder scanner reads
//! it to find sessions with a reminder due while no host has them open).
//!
//! One row per live record: due at its `scheduledAt` (schedule.md §3.1). A `create` puts the
//! row; a `delete` or a one-shot's `dispatch` removes it; a recurring (`every` or `cron`)
//! `dispatch` moves it to the record's next occurrence after `acceptedAt` by the fold's own
//! arithmetic (§6, Appendix B.4), or removes it when there is none in the representable range. Changes are read with the
//! strict decoder (§4); one that does not decode is left out (the schedule fold reports the
//! log as corrupt on replay).

use std::collections::HashMap;
use std::sync::Arc;

use turnkit_core::{BatchIndex, IndexChange, IndexUpdate, RawEvent, SessionIndex};

use crate::domain::decode_change_text;
use crate::domain::{SCHEDULE_CHANGE, ScheduleChange, ScheduleRecord};

/// Schedule's index rules; give it to a store that keeps an index (e.g.
/// `PgOptions::index` of `turnkit-store-pg`).
#[derive(Debug, Default, Clone, Copy)]
pub struct ReminderIndex;

impl BatchIndex for ReminderIndex {
    fn start(&self, log: &[RawEvent]) -> Box<dyn SessionIndex> {
        let mut records = Records::default();
        records.apply(log, &mut Vec::new());
        Box::new(records)
    }
}

/// The live records of a session, each as it stands (target and rule).
#[derive(Debug, Default, Clone)]
struct Records {
    live: HashMap<Arc<str>, ScheduleRecord>,
}

impl Records {
    /// Takes in the changes of `events`, pushing the index changes they imply.
    fn apply(&mut self, events: &[RawEvent], changes: &mut Vec<IndexChange>) {
        for event in events.iter().filter(|e| e.r#type() == SCHEDULE_CHANGE) {
            match decode_change_text(event.payload()) {
                Ok(change) => self.change(change, changes),
                Err(error) => tracing::warn!(
                    seq = event.seq(),
                    %error,
                    "undecodable schedule/change left out of the reminder index"
                ),
            }
        }
    }

    fn change(&mut self, change: ScheduleChange, changes: &mut Vec<IndexChange>) {
        match change {
            ScheduleChange::Create(record) => {
                changes.push(IndexChange::Put {
                    key: record.id().to_owned(),
                    due: record.scheduled_at().to_datetime(),
                });
                self.live.insert(record.id_arc().clone(), record);
            }
            ScheduleChange::Delete { id } | ScheduleChange::Dispatch { id } => {
                self.live.remove(&id);
                changes.push(IndexChange::Remove {
                    key: id.to_string(),
                });
            }
            ScheduleChange::DispatchEvery { id, accepted_at } => {
                let Some(record) = self.live.get_mut(&id) else {
                    return;
                };
                // A dispatch the fold refuses (a one-shot's, or before the target) leaves
                // the row as it is.
                let Ok(occurrence) = record.resolve(accepted_at.millis()) else {
                    return;
                };
                match occurrence.next_scheduled_at {
                    Some(next) => {
                        *record = record.with_scheduled_at(next);
                        changes.push(IndexChange::Put {
                            key: id.to_string(),
                            due: next.to_datetime(),
                        });
                    }
                    None => {
                        self.live.remove(&id);
                        changes.push(IndexChange::Remove {
                            key: id.to_string(),
                        });
                    }
                }
            }
        }
    }
}

impl SessionIndex for Records {
    fn after(&self, batch: &[RawEvent]) -> Option<IndexUpdate> {
        if !batch.iter().any(|e| e.r#type() == SCHEDULE_CHANGE) {
            return None;
        }
        let mut next = self.clone();
        let mut changes = Vec::new();
        next.apply(batch, &mut changes);
        Some(IndexUpdate {
            changes,
            next: Box::new(next),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, payload: &str) -> RawEvent {
        RawEvent::new(seq, SCHEDULE_CHANGE, chrono::DateTime::UNIX_EPOCH, payload).unwrap()
    }

    fn put(key: &str, due: &str) -> IndexChange {
        IndexChange::Put {
            key: key.to_owned(),
            due: due.parse().unwrap(),
        }
    }

    #[test]
    fn a_fixed_rate_dispatch_moves_the_row_by_the_folds_arithmetic_and_leaves_the_index_as_it_was()
    {
        let log = [
            event(
                1,
                r#"{"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"every","prompt":"p","everySeconds":300,"scheduledAt":"2026-08-05T12:05:00.000Z"}}"#,
            ),
            event(
                2,
                r#"{"version":1,"operation":"create","schedule":{"id":"schedule-2","kind":"after","prompt":"q","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
            ),
        ];
        let index = ReminderIndex.start(&log);
        let batch = [
            event(
                3,
                r#"{"version":1,"operation":"dispatch","id":"schedule-1","acceptedAt":"2026-08-05T12:16:00.000Z"}"#,
            ),
            event(
                4,
                r#"{"version":1,"operation":"dispatch","id":"schedule-2"}"#,
            ),
        ];
        let update = index.after(&batch).unwrap();
        assert_eq!(
            update.changes,
            [
                put("schedule-1", "2026-08-05T12:20:00Z"),
                IndexChange::Remove {
                    key: "schedule-2".to_owned()
                }
            ]
        );
        // The same batch asked again (its write failed) gets the same answer.
        assert_eq!(index.after(&batch).unwrap().changes, update.changes);
        // Once committed, the next dispatch starts from 12:20.
        let later = [event(
            5,
            r#"{"version":1,"operation":"dispatch","id":"schedule-1","acceptedAt":"2026-08-05T12:20:00.000Z"}"#,
        )];
        assert_eq!(
            update.next.after(&later).unwrap().changes,
            [put("schedule-1", "2026-08-05T12:25:00Z")]
        );
        // A batch without schedule changes leaves the index alone; an undecodable change is
        // left out.
        let other = RawEvent::new(6, "test/n", chrono::DateTime::UNIX_EPOCH, "{}").unwrap();
        assert!(index.after(&[other]).is_none());
        let bad = [event(
            6,
            r#"{"version":2,"operation":"delete","id":"schedule-1"}"#,
        )];
        assert_eq!(index.after(&bad).unwrap().changes, []);
    }

    #[test]
    fn a_cron_dispatch_moves_the_row_to_the_rules_next_occurrence() {
        let log = [event(
            1,
            r#"{"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"cron","prompt":"p","cron":"0 9 * * 1-5","timeZone":"Europe/Paris","scheduledAt":"2026-08-06T07:00:00.000Z"}}"#,
        )];
        let index = ReminderIndex.start(&log);
        // Decided on Friday after downtime: the row moves to Monday 09:00 in Paris.
        let batch = [event(
            2,
            r#"{"version":1,"operation":"dispatch","id":"schedule-1","acceptedAt":"2026-08-07T10:00:00.000Z"}"#,
        )];
        let update = index.after(&batch).unwrap();
        assert_eq!(update.changes, [put("schedule-1", "2026-08-10T07:00:00Z")]);
        let delete = [event(
            3,
            r#"{"version":1,"operation":"delete","id":"schedule-1"}"#,
        )];
        assert_eq!(
            update.next.after(&delete).unwrap().changes,
            [IndexChange::Remove {
                key: "schedule-1".to_owned()
            }]
        );
    }
}
