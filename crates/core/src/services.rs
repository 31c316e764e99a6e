//! [`Services`]: the host's typed service slot, one value per type (in the shape of
//! `http::Extensions`), through which plugins find what other plugins installed.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::{Registration, lock};

type Entry = (u64, Box<dyn Any + Send + Sync>);

#[derive(Default)]
struct Slots {
    /// The id the next inserted entry gets (identifies an entry for [`Services::provide`]'s
    /// guard, so it never removes a later value of the same type).
    next: u64,
    values: HashMap<TypeId, Entry>,
}

/// A map from a type to one value of that type, kept by a host ([`crate::Harness::services`])
/// so that plugins can hand each other services without process-global state: turnkit-jobs-local
/// provides its `Arc<dyn JobRegistry>` here, and the families that start jobs (bash,
/// terminal, subagent, tool-jobs) look it up at install.
///
/// Keys are types, so a plugin that owns a type owns its slot; values are cloned out
/// (store an `Arc` for anything shared). Every method takes `&self`; the map is behind a
/// lock that is never held while user code runs (values are cloned, not called).
///
/// ```
/// # use std::sync::Arc;
/// # use turnkit_core::Services;
/// #[derive(Clone, Debug, PartialEq)]
/// struct Budget(u32);
///
/// let services = Services::new();
/// assert_eq!(services.insert(Budget(3)), None);
/// assert_eq!(services.get::<Budget>(), Some(Budget(3)));
/// let guard = services.provide(Budget(4)).unwrap_err(); // occupied: handed back
/// assert_eq!(guard, Budget(4));
/// assert_eq!(services.remove::<Budget>(), Some(Budget(3)));
/// let registration = services.provide(Budget(5)).unwrap();
/// assert_eq!(services.get::<Budget>(), Some(Budget(5)));
/// drop(registration);
/// assert_eq!(services.get::<Budget>(), None);
/// ```
#[derive(Clone, Default)]
pub struct Services {
    slots: Arc<Mutex<Slots>>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("len", &lock(&self.slots).values.len())
            .finish()
    }
}

impl Services {
    /// An empty slot map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value` as the service of type `T`, returning the value it replaces.
    pub fn insert<T: Clone + Send + Sync + 'static>(&self, value: T) -> Option<T> {
        let mut slots = lock(&self.slots);
        let id = slots.next;
        slots.next += 1;
        slots
            .values
            .insert(TypeId::of::<T>(), (id, Box::new(value)))
            .and_then(|(_, old)| old.downcast::<T>().ok().map(|old| *old))
    }

    /// Stores `value` as the service of type `T` only if none is stored, and returns a guard
    /// that removes exactly this value when dropped or unregistered (a later value of the
    /// same type stays). Holds the map weakly.
    ///
    /// # Errors
    /// `Err(value)` (handed back unchanged) when a service of type `T` is already stored.
    pub fn provide<T: Clone + Send + Sync + 'static>(&self, value: T) -> Result<Registration, T> {
        let id = {
            let mut slots = lock(&self.slots);
            if slots.values.contains_key(&TypeId::of::<T>()) {
                return Err(value);
            }
            let id = slots.next;
            slots.next += 1;
            slots
                .values
                .insert(TypeId::of::<T>(), (id, Box::new(value)));
            id
        };
        Ok(Registration::weak(&self.slots, move |slots| {
            let removed = {
                let mut slots = lock(slots);
                let ours = slots
                    .values
                    .get(&TypeId::of::<T>())
                    .is_some_and(|(stored, _)| *stored == id);
                ours.then(|| slots.values.remove(&TypeId::of::<T>()))
            };
            // Dropped after the lock is released: the value's own drop may use the map.
            drop(removed);
        }))
    }

    /// A clone of the service of type `T`, if one is stored.
    pub fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        lock(&self.slots)
            .values
            .get(&TypeId::of::<T>())
            .and_then(|(_, value)| value.downcast_ref::<T>())
            .cloned()
    }

    /// Whether a service of type `T` is stored.
    pub fn contains<T: 'static>(&self) -> bool {
        lock(&self.slots).values.contains_key(&TypeId::of::<T>())
    }

    /// Removes and returns the service of type `T`.
    pub fn remove<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        lock(&self.slots)
            .values
            .remove(&TypeId::of::<T>())
            .and_then(|(_, value)| value.downcast::<T>().ok().map(|value| *value))
    }
}
