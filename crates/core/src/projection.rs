//! Session projections: the [`Projection`] trait and the [`ProjectionSet`] a host folds on
//! every append (todo-jobs §1.6).

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::{RawEvent, RegisterError, Registered, Registration, SessionEvent, SessionId, lock};

/// A projection's state, type-erased so projections can be stored together. A projection
/// downcasts its own state with `state.downcast_ref::<T>()`.
pub type ProjectionState = Arc<dyn Any + Send + Sync>;

/// A fold of a session's events into a view for UIs.
pub trait Projection: Send + Sync {
    /// The key the view is published under, e.g. `todos`.
    fn key(&self) -> &str;

    /// The state before any event.
    fn init(&self) -> ProjectionState;

    /// Applies one committed event. Returns `None` when the event leaves the state unchanged
    /// (no clone, no change notification), else the new state.
    fn apply(&self, state: &ProjectionState, event: &SessionEvent) -> Option<ProjectionState>;

    /// Applies one committed event in the log's own form (payload as raw JSON), as a replay
    /// does; must agree with [`Projection::apply`] on the same event. The default decodes the
    /// payload into a [`SessionEvent`] and calls `apply`; a projection on the replay path
    /// overrides it to skip unrelated events by type and decode the rest straight into its
    /// own typed form.
    fn apply_raw(&self, state: &ProjectionState, event: &RawEvent) -> Option<ProjectionState> {
        self.apply(state, &event.to_event())
    }

    /// The JSON view of a state.
    fn view(&self, state: &ProjectionState) -> Value;
}

struct Folded {
    state: ProjectionState,
    as_of_seq: u64,
}

#[derive(Default)]
struct Inner {
    projections: Registered<Arc<dyn Projection>>,
    /// Folded state per (session, projection id).
    states: HashMap<(SessionId, u64), Folded>,
    /// Tracked sessions, re-read when a projection is registered later.
    sessions: HashMap<SessionId, Arc<dyn crate::Session>>,
}

/// A host building block: registered projections and their folded state per session.
///
/// The host calls [`ProjectionSet::track`] when a session goes live (a full replay happens
/// then, once). From then on the set keeps itself current by pulling: every
/// [`ProjectionSet::view`] first folds the events the session logged after the last one
/// folded (`raw_events_after`, each through [`Projection::apply_raw`]), so a host need not
/// wrap its sessions. A host that also pushes each appended event
/// ([`ProjectionSet::apply`]) gets the same states: an event already folded is skipped.
#[derive(Clone, Default)]
pub struct ProjectionSet {
    inner: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<Inner>,
    /// How many projections are registered, read without the lock: with none, a pushed
    /// event is not folded anywhere, so [`ProjectionSet::apply`] returns at once. (A
    /// projection registered meanwhile folds the session's log itself, and later pushes or
    /// views pull whatever it missed.)
    registered: AtomicUsize,
}

/// A projection's current view of one session.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectionView {
    /// The view JSON.
    pub value: Value,
    /// The seq of the last event folded (0 before any event).
    pub as_of_seq: u64,
}

impl ProjectionSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a projection and folds every tracked session into it.
    ///
    /// # Errors
    /// [`RegisterError::Conflict`] when the key is already registered.
    pub fn register(&self, projection: Arc<dyn Projection>) -> Result<Registration, RegisterError> {
        let mut inner = lock(&self.inner.state);
        if inner
            .projections
            .iter()
            .any(|p| p.key() == projection.key())
        {
            return Err(RegisterError::Conflict(format!(
                "projection {:?} is already registered",
                projection.key()
            )));
        }
        let sessions: Vec<_> = inner.sessions.values().cloned().collect();
        let folded: Vec<_> = sessions
            .iter()
            .map(|session| fold_all(projection.as_ref(), session.as_ref()))
            .collect();
        let id = inner.projections.insert(projection);
        for (session, folded) in sessions.iter().zip(folded) {
            inner.states.insert((session.id().clone(), id), folded);
        }
        self.inner.registered.fetch_add(1, Ordering::SeqCst);
        Ok(Registration::weak(&self.inner, move |shared| {
            shared.registered.fetch_sub(1, Ordering::SeqCst);
            let mut inner = lock(&shared.state);
            inner.projections.remove(id);
            inner.states.retain(|(_, pid), _| *pid != id);
        }))
    }

    /// Starts folding `session`: replays its whole log into every projection.
    pub fn track(&self, session: Arc<dyn crate::Session>) {
        let mut inner = lock(&self.inner.state);
        let projections: Vec<_> = inner
            .projections
            .entries()
            .map(|(id, projection)| (id, projection.clone()))
            .collect();
        for (id, projection) in projections {
            let folded = fold_all(projection.as_ref(), session.as_ref());
            inner.states.insert((session.id().clone(), id), folded);
        }
        inner.sessions.insert(session.id().clone(), session);
    }

    /// Stops folding a session and drops its states.
    pub fn untrack(&self, session: &SessionId) {
        let mut inner = lock(&self.inner.state);
        inner.sessions.remove(session);
        inner.states.retain(|(sid, _), _| sid != session);
    }

    /// Folds one newly appended event of `session` into every projection. An event at or
    /// before a projection's last folded seq is skipped (it was pulled already); events the
    /// set missed before it are pulled from the tracked session first.
    pub fn apply(&self, session: &SessionId, event: &SessionEvent) {
        self.fold_appended(session, event.seq, |projection, state| {
            projection.apply(state, event)
        });
    }

    /// [`ProjectionSet::apply`] for an event in the log's own form (what
    /// [`Session::append_raw`](crate::Session::append_raw) returns): each projection folds it
    /// through [`Projection::apply_raw`], so one that skips unrelated event types decodes
    /// nothing.
    pub fn apply_raw(&self, session: &SessionId, event: &RawEvent) {
        self.fold_appended(session, event.seq(), |projection, state| {
            projection.apply_raw(state, event)
        });
    }

    /// Folds the newly appended event `seq` of `session` into every projection with `apply`
    /// (see [`ProjectionSet::apply`]).
    fn fold_appended(
        &self,
        session: &SessionId,
        seq: u64,
        apply: impl Fn(&dyn Projection, &ProjectionState) -> Option<ProjectionState>,
    ) {
        if self.inner.registered.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut inner = lock(&self.inner.state);
        let Inner {
            projections,
            states,
            sessions,
        } = &mut *inner;
        for (id, projection) in projections.entries() {
            let Some(folded) = states.get_mut(&(session.clone(), id)) else {
                continue;
            };
            if seq <= folded.as_of_seq {
                continue;
            }
            if seq > folded.as_of_seq + 1 {
                if let Some(tracked) = sessions.get(session) {
                    catch_up(projection.as_ref(), folded, tracked.as_ref());
                }
                continue;
            }
            if let Some(next) = apply(projection.as_ref(), &folded.state) {
                folded.state = next;
            }
            folded.as_of_seq = seq;
        }
    }

    /// Folds every event `session` logged since the last one folded, into every projection
    /// (what [`ProjectionSet::view`] does first). A session that is not tracked is ignored.
    pub fn refresh(&self, session: &SessionId) {
        let mut inner = lock(&self.inner.state);
        let Inner {
            projections,
            states,
            sessions,
        } = &mut *inner;
        let Some(tracked) = sessions.get(session) else {
            return;
        };
        for (id, projection) in projections.entries() {
            if let Some(folded) = states.get_mut(&(session.clone(), id)) {
                catch_up(projection.as_ref(), folded, tracked.as_ref());
            }
        }
    }

    /// The view of projection `key` for `session`, if both are known, folded up to the end
    /// of the session's log.
    pub fn view(&self, session: &SessionId, key: &str) -> Option<ProjectionView> {
        let mut inner = lock(&self.inner.state);
        let Inner {
            projections,
            states,
            sessions,
        } = &mut *inner;
        let (id, projection) = projections.entries().find(|(_, p)| p.key() == key)?;
        let folded = states.get_mut(&(session.clone(), id))?;
        if let Some(tracked) = sessions.get(session) {
            catch_up(projection.as_ref(), folded, tracked.as_ref());
        }
        Some(ProjectionView {
            value: projection.view(&folded.state),
            as_of_seq: folded.as_of_seq,
        })
    }

    /// The registered projections, in registration order (to fold a log that no session
    /// holds, e.g. a file streamed by an inspection tool).
    pub fn projections(&self) -> Vec<Arc<dyn Projection>> {
        lock(&self.inner.state).projections.to_vec()
    }

    /// The registered keys, in registration order.
    pub fn keys(&self) -> Vec<String> {
        lock(&self.inner.state)
            .projections
            .iter()
            .map(|p| p.key().to_owned())
            .collect()
    }
}

/// Folds a whole log into a projection's state.
pub fn fold_events<'a>(
    projection: &dyn Projection,
    events: impl IntoIterator<Item = &'a SessionEvent>,
) -> ProjectionState {
    let mut state = projection.init();
    for event in events {
        if let Some(next) = projection.apply(&state, event) {
            state = next;
        }
    }
    state
}

/// Folds a whole log in the log's own form into a projection's state (what a replay does:
/// [`Projection::apply_raw`] per event).
pub fn fold_raw_events<'a>(
    projection: &dyn Projection,
    events: impl IntoIterator<Item = &'a RawEvent>,
) -> ProjectionState {
    let mut state = projection.init();
    for event in events {
        if let Some(next) = projection.apply_raw(&state, event) {
            state = next;
        }
    }
    state
}

/// Folds the events of `session` after `folded.as_of_seq` into `folded`.
fn catch_up(projection: &dyn Projection, folded: &mut Folded, session: &dyn crate::Session) {
    if session.len() <= folded.as_of_seq {
        return;
    }
    for event in session.raw_events_after(folded.as_of_seq) {
        if let Some(next) = projection.apply_raw(&folded.state, &event) {
            folded.state = next;
        }
        folded.as_of_seq = event.seq();
    }
}

fn fold_all(projection: &dyn Projection, session: &dyn crate::Session) -> Folded {
    let events = session.raw_events_after(0);
    Folded {
        state: fold_raw_events(projection, &events),
        as_of_seq: events.last().map_or(0, RawEvent::seq),
    }
}
