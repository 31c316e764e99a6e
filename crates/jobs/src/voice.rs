//! [`JobVoice`]: how a running job raises a [`JobNotice`] for its owner, beside the
//! settlement notice every job gets.

use std::fmt;
use std::sync::{Arc, Mutex};

use turnkit_core::lock;

/// A notice a running job raises (a test run reached its first failure, a watched file
/// changed, a server printed its address): delivered to the job's owner like its settlement
/// notice (injected into a busy turn, a followup that wakes an idle owner within its wake
/// budget, owed to the next tool result or a task over MCP), and about the job (its subject
/// carries the job id and this `key`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobNotice {
    /// The coalescing key: a later notice of the same job with the same key replaces an
    /// earlier one the owner has not received yet (`"status"`, `"first-failure"`). Never
    /// model-facing.
    pub key: String,
    /// What the job says, model-facing, one line or a few.
    pub text: String,
}

/// Called by [`JobVoice`] with every notice raised; installed by the registry.
pub type NoticeSink = Arc<dyn Fn(JobNotice) + Send + Sync>;

#[derive(Default)]
struct VoiceState {
    sink: Option<NoticeSink>,
    /// Notices raised before a sink was installed, in order.
    early: Vec<JobNotice>,
    closed: bool,
}

/// The producer's handle for raising notices while its job runs. The producer keeps one
/// clone and passes another in [`crate::JobHooks::voice`]; the registry installs a sink at
/// the start and closes the voice at settlement, after which [`JobVoice::say`] does nothing
/// (the settlement notice is the job's last word). Notices raised before the registry's sink
/// is installed are kept and handed to it in order.
///
/// ```
/// use turnkit_jobs::JobVoice;
/// let voice = JobVoice::new();
/// assert!(voice.say("status", "3 of 10 suites passed"));
/// voice.close();
/// assert!(!voice.say("status", "too late"));
/// ```
#[derive(Clone, Default)]
pub struct JobVoice {
    state: Arc<Mutex<VoiceState>>,
}

impl JobVoice {
    /// A voice with no sink yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises notice `text` under coalescing key `key`; `false` once the voice is closed
    /// (the job settled): nothing is delivered then.
    pub fn say(&self, key: impl Into<String>, text: impl Into<String>) -> bool {
        let notice = JobNotice {
            key: key.into(),
            text: text.into(),
        };
        let sink = {
            let mut state = lock(&self.state);
            if state.closed {
                return false;
            }
            match &state.sink {
                Some(sink) => sink.clone(),
                None => {
                    state.early.push(notice);
                    return true;
                }
            }
        };
        sink(notice);
        true
    }

    /// Installs the sink every later notice goes to, first handing it the notices raised
    /// before (meant for the registry holding the job). Called without a lock held.
    pub fn set_sink(&self, sink: NoticeSink) {
        let (sink, early) = {
            let mut state = lock(&self.state);
            if state.closed {
                return;
            }
            let early = std::mem::take(&mut state.early);
            (state.sink.insert(sink).clone(), early)
        };
        for notice in early {
            sink(notice);
        }
    }

    /// Closes the voice (the job settled): later notices are dropped and the sink released.
    pub fn close(&self) {
        let sink = {
            let mut state = lock(&self.state);
            state.closed = true;
            state.early.clear();
            state.sink.take()
        };
        drop(sink);
    }
}

impl fmt::Debug for JobVoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobVoice")
            .field("closed", &lock(&self.state).closed)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use pretty_assertions::assert_eq;

    use super::{JobNotice, JobVoice};

    #[test]
    fn notices_before_the_sink_reach_it_first_and_none_after_the_close() {
        let heard = Arc::new(Mutex::new(Vec::<JobNotice>::new()));
        let voice = JobVoice::new();
        assert!(voice.say("a", "one"));
        assert!(voice.say("b", "two"));
        let sink_heard = heard.clone();
        voice.set_sink(Arc::new(move |notice| {
            sink_heard.lock().unwrap().push(notice);
        }));
        assert!(voice.say("a", "three"));
        voice.close();
        assert!(!voice.say("a", "four"));
        let notice = |key: &str, text: &str| JobNotice {
            key: key.to_owned(),
            text: text.to_owned(),
        };
        assert_eq!(
            *heard.lock().unwrap(),
            [notice("a", "one"), notice("b", "two"), notice("a", "three")]
        );
    }
}
