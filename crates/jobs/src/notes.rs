//! [`KindNotes`]: what the plugin of a job kind says about how its jobs run, listed by
//! `job_list`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use turnkit_core::{Harness, lock};

/// One line per job kind saying how that kind's jobs run (e.g. the confinement in force:
/// `bash jobs run confined: sandbox: …`), kept in a host's service slot
/// ([`Harness::services`]). A plugin sets its kind's line at install
/// ([`KindNotes::set_on`]); the tool-jobs `job_list` tool ends its text with the lines, in
/// kind order. A host without notes lists its jobs exactly as before.
#[derive(Clone, Debug, Default)]
pub struct KindNotes(Arc<Mutex<BTreeMap<String, String>>>);

impl KindNotes {
    /// Sets the line of `kind` in `harness`'s notes, creating the slot when it is empty.
    pub fn set_on(harness: &dyn Harness, kind: &str, line: String) {
        let services = harness.services();
        let notes = match services.get::<Self>() {
            Some(notes) => notes,
            None => {
                let notes = Self::default();
                services.insert(notes.clone());
                notes
            }
        };
        lock(&notes.0).insert(kind.to_owned(), line);
    }

    /// The lines, in kind order.
    pub fn lines(&self) -> Vec<String> {
        lock(&self.0).values().cloned().collect()
    }
}
