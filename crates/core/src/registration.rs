//! [`Registration`]: the guard every `register_*` / `subscribe` call returns.

use std::sync::{Arc, Mutex, Weak};

use crate::lock;

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

    /// A registration whose undo runs `undo` on `target`, holding `target` only weakly: the
    /// registration never keeps its registry alive, and undoing it after the registry is
    /// gone does nothing. The usual `undo` removes one entry of a [`crate::Registered`] list
    /// by the id [`crate::Registered::insert`] returned.
    pub fn weak<T>(target: &Arc<T>, undo: impl FnOnce(&T) + Send + 'static) -> Self
    where
        T: ?Sized + Send + Sync + 'static,
    {
        Self::from_weak(Arc::downgrade(target), undo)
    }

    /// [`Registration::weak`] for a registry that holds only a weak handle to itself (the
    /// usual `me: Weak<Self>` of an `Arc::new_cyclic` value).
    pub fn from_weak<T>(target: Weak<T>, undo: impl FnOnce(&T) + Send + 'static) -> Self
    where
        T: ?Sized + Send + Sync + 'static,
    {
        Self::new(move || {
            if let Some(target) = target.upgrade() {
                undo(&target);
            }
        })
    }

    /// A registration with nothing to undo.
    pub fn noop() -> Self {
        Self {
            undo: Mutex::new(None),
        }
    }

    /// Undoes the registration now; later calls do nothing.
    pub fn unregister(&self) {
        let undo = lock(&self.undo).take();
        if let Some(undo) = undo {
            undo();
        }
    }

    /// Leaves the registration in place for the life of the registry.
    pub fn keep(self) {
        lock(&self.undo).take();
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
