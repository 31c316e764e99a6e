//! The shared mechanisms behind every registry of the workspace: [`lock`], the
//! poison-recovering mutex lock (with [`read_lock`] and [`write_lock`], its `RwLock`
//! counterparts), and [`Registered`], the id bookkeeping that pairs with
//! [`crate::Registration::weak`].

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, recovering the guard when another thread panicked while holding it.
///
/// Every piece of state guarded this way is left consistent between statements (no
/// invariant spans a panic point), so a poisoned lock carries no broken state and a panic
/// in one listener or tool must not disable the registry for everyone else.
///
/// ```
/// use std::sync::Mutex;
/// let count = Mutex::new(1);
/// *turnkit_core::lock(&count) += 1;
/// assert_eq!(*turnkit_core::lock(&count), 2);
/// ```
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `rwlock` for reading, recovering the guard after a panic elsewhere (see [`lock`]).
///
/// ```
/// use std::sync::RwLock;
/// let events = RwLock::new(vec![1]);
/// turnkit_core::write_lock(&events).push(2);
/// assert_eq!(*turnkit_core::read_lock(&events), [1, 2]);
/// ```
pub fn read_lock<T: ?Sized>(rwlock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    rwlock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `rwlock` for writing, recovering the guard after a panic elsewhere (see [`lock`]).
pub fn write_lock<T: ?Sized>(rwlock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    rwlock.write().unwrap_or_else(PoisonError::into_inner)
}

/// Registered items in registration order, each under an id of its own (the first id is 1,
/// ids are never reused). The id is what a [`crate::Registration`] remembers to undo exactly
/// its own entry.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use turnkit_core::{Registered, Registration, lock};
///
/// let names: Arc<Mutex<Registered<&str>>> = Arc::default();
/// let id = lock(&names).insert("a");
/// let registration = Registration::weak(&names, move |names| {
///     lock(names).remove(id);
/// });
/// lock(&names).insert("b");
/// drop(registration);
/// assert_eq!(lock(&names).iter().copied().collect::<Vec<_>>(), ["b"]);
/// ```
#[derive(Clone, Debug)]
pub struct Registered<T> {
    next_id: u64,
    entries: Vec<(u64, T)>,
}

impl<T> Default for Registered<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Registered<T> {
    /// No entries.
    pub const fn new() -> Self {
        Self {
            next_id: 0,
            entries: Vec::new(),
        }
    }

    /// Appends `item` and returns its new id.
    pub fn insert(&mut self, item: T) -> u64 {
        self.next_id += 1;
        self.entries.push((self.next_id, item));
        self.next_id
    }

    /// Removes the entry `id` and returns it; `None` when it was already removed.
    pub fn remove(&mut self, id: u64) -> Option<T> {
        let index = self.entries.iter().position(|(entry, _)| *entry == id)?;
        Some(self.entries.remove(index).1)
    }

    /// The items in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|(_, item)| item)
    }

    /// The items with their ids, in registration order.
    pub fn entries(&self) -> impl Iterator<Item = (u64, &T)> {
        self.entries.iter().map(|(id, item)| (*id, item))
    }

    /// Removes every entry; ids stay unused, so an old id never removes a later entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Removes every entry and returns the items in registration order; ids stay unused,
    /// as with [`Registered::clear`].
    pub fn drain(&mut self) -> Vec<T> {
        self.entries.drain(..).map(|(_, item)| item).collect()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<T: Clone> Registered<T> {
    /// A copy of the items in registration order, e.g. listeners to call after the lock is
    /// released.
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().cloned().collect()
    }
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
