//! The registry's hash map: fast, not keyed against collisions.

use std::collections::HashMap;

/// A hash map with a fast, non-cryptographic hasher: every key is registry-generated (job
/// numbers, pointer identities) or host-provided (agent ids, kinds).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
