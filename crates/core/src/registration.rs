//! [`Registration`]: the guard every `register_*` / `subscribe` call returns.

use std::sync::Mutex;

type Undo = Box<dyn FnOnce() + Send>;

/// Undoes a registration when dropped or when [`Registration::unregister`] is called.
/// Unregistering is idempotent. Call [`Registration::keep`] to leave it registered forever.
#[must_use = "dropping a Registration unregisters it at once"]
pub struct Registration {
    undo: Mutex<Option<Undo>>,
}

impl Registration {
    /// A registration undone by `undo`.
    pub fn new(undo: impl FnOnce() + Send + 'static) -> Self {
        Self {
            undo: Mutex::new(Some(Box::new(undo))),
        }
    }

    /// A registration with nothing to undo.
    pub fn noop() -> Self {
        Self {
            undo: Mutex::new(None),
        }
    }

    /// Undoes the registration now; later calls do nothing.
    pub fn unregister(&self) {
        let undo = self
            .undo
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        if let Some(undo) = undo {
            undo();
        }
    }

    /// Leaves the registration in place for the life of the registry.
    pub fn keep(self) {
        self.undo
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Registration")
    }
}
