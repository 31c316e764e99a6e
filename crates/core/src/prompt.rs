//! System-prompt sections (todo-jobs §1.7).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::{Registration, RegistrationScope, ScopeKey};

/// One contribution to the system prompt. Sections are joined in ascending `order`
/// (registration order breaks ties); tool guidance uses orders 100–199.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptSection {
    /// A stable name, e.g. `tool:jobs`.
    pub name: String,
    /// Sort key.
    pub order: i32,
    /// The text (exact per spec).
    pub text: String,
    /// Who sees it.
    pub scope: RegistrationScope,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    sections: Vec<(u64, PromptSection)>,
}

/// A host building block holding prompt sections.
#[derive(Clone, Default)]
pub struct PromptSections {
    inner: Arc<Mutex<Inner>>,
}

impl PromptSections {
    /// No sections.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Adds a section until the registration is dropped.
    pub fn register(&self, section: PromptSection) -> Registration {
        let mut inner = self.lock();
        inner.next_id += 1;
        let id = inner.next_id;
        inner.sections.push((id, section));
        let weak = Arc::downgrade(&self.inner);
        Registration::new(move || {
            if let Some(inner) = weak.upgrade() {
                let mut inner = inner.lock().unwrap_or_else(|poison| poison.into_inner());
                inner.sections.retain(|(sid, _)| *sid != id);
            }
        })
    }

    /// The sections a caller with this scope chain sees, sorted by order.
    pub fn sections(&self, chain: Option<&[ScopeKey]>) -> Vec<PromptSection> {
        let mut sections: Vec<PromptSection> = self
            .lock()
            .sections
            .iter()
            .filter(|(_, s)| s.scope.serves(chain))
            .map(|(_, s)| s.clone())
            .collect();
        sections.sort_by_key(|s| s.order);
        sections
    }

    /// The sections' texts joined with a blank line.
    pub fn render(&self, chain: Option<&[ScopeKey]>) -> String {
        self.sections(chain)
            .into_iter()
            .map(|s| s.text)
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}
