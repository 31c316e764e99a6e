//! Registration layers and routing by scope (§1.3).

use std::sync::Arc;

use turnkit_core::{Registered, RegistrationScope, ScopeKey};

/// A registration in a layer (§1.3).
#[derive(Clone)]
pub(crate) struct Layered<T> {
    pub(crate) scope: RegistrationScope,
    pub(crate) item: T,
}

/// Copy-on-write registration layers, each entry under the id its registration removes:
/// notifications clone the `Arc` under the lock and iterate after releasing it, without
/// allocating.
pub(crate) type Layers<T> = Arc<Registered<Layered<T>>>;

/// Calls `f` with each registration of `layers` that serves `chain`, in delivery order:
/// global first, then the chain from the farthest ancestor to the nearest, each in
/// registration order (§1.3). `None` (an unowned job) reaches global registrations only.
pub(crate) fn for_each_route<T>(
    layers: &Registered<Layered<T>>,
    chain: Option<&[ScopeKey]>,
    mut f: impl FnMut(&T),
) {
    for layer in layers.iter() {
        if layer.scope == RegistrationScope::Global {
            f(&layer.item);
        }
    }
    if let Some(chain) = chain {
        for (index, key) in chain.iter().enumerate().rev() {
            for layer in layers.iter() {
                let routed = match &layer.scope {
                    RegistrationScope::Global => false,
                    RegistrationScope::Scoped(k) => k == key,
                    RegistrationScope::Agent(k) => index == 0 && k == key,
                };
                if routed {
                    f(&layer.item);
                }
            }
        }
    }
}

/// Whether any registration of `layers` serves `chain` (`None`: unowned, global only).
pub(crate) fn serves<T>(layers: &Registered<Layered<T>>, chain: Option<&[ScopeKey]>) -> bool {
    layers.iter().any(|l| l.scope.serves(chain))
}
