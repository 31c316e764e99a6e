//! System-prompt sections (todo-jobs §1.7).

use std::sync::{Arc, Mutex};

use crate::{Registered, Registration, RegistrationScope, ScopeKey, lock};

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

/// A host building block holding prompt sections.
#[derive(Clone, Default)]
pub struct PromptSections {
    inner: Arc<Mutex<Registered<PromptSection>>>,
}

impl PromptSections {
    /// No sections.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a section until the registration is dropped.
    pub fn register(&self, section: PromptSection) -> Registration {
        let id = lock(&self.inner).insert(section);
        Registration::weak(&self.inner, move |sections| {
            lock(sections).remove(id);
        })
    }

    /// The sections a caller with this scope chain sees, sorted by order.
    pub fn sections(&self, chain: Option<&[ScopeKey]>) -> Vec<PromptSection> {
        let mut sections: Vec<PromptSection> = lock(&self.inner)
            .iter()
            .filter(|s| s.scope.serves(chain))
            .cloned()
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
