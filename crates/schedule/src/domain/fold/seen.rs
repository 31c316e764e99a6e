//! [`SeenIds`]: every id created in the owned suffix, and id allocation (§7).

use std::borrow::Cow;
use std::sync::Arc;

/// The fold's id map: foldhash, not SipHash (ids come from our own log, and the map is
/// touched once per change).
pub(super) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Every id created in a fold's owned suffix, in creation order, each with its creation
/// counter (its index in that order).
///
/// Ids of the form `schedule-N` (what §7 allocates: `N` in decimal without leading zeros)
/// are held as the number `N`, most of them in a table indexed by `N`; other ids are
/// hashed. Remembering an allocated id costs a few bytes and no allocation.
#[derive(Clone, Debug, Default)]
pub struct SeenIds {
    /// Creation order: `N` of a `schedule-N` id, or the index of a named id in `named`
    /// with [`NAMED`] set.
    order: Vec<u64>,
    /// At `N`: 1 + the creation counter of `schedule-N` (0: not seen or held in `sparse`).
    dense: Vec<u64>,
    /// `schedule-N` ids whose `N` is too far beyond the count to be held in `dense`.
    sparse: HashMap<u64, u64>,
    /// Every other id → its creation counter.
    named: HashMap<Arc<str>, u64>,
    /// Other ids in creation order (indexed from `order`).
    names: Vec<Arc<str>>,
}

/// The tag of a named id in [`SeenIds::order`].
pub(super) const NAMED: u64 = 1 << 63;

/// `N` of an id `schedule-N` whose `N` is written in decimal without leading zeros (so the
/// id is `format!("schedule-{N}")`), below 10^18.
pub(super) fn numbered(id: &str) -> Option<u64> {
    let digits = id.strip_prefix("schedule-")?.as_bytes();
    if digits.is_empty() || digits.len() > 18 || (digits[0] == b'0' && digits.len() > 1) {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &digit| {
        digit
            .is_ascii_digit()
            .then(|| n * 10 + u64::from(digit - b'0'))
    })
}

impl SeenIds {
    /// How many ids were seen.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether no id was seen.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Whether `id` was seen.
    pub fn contains(&self, id: &str) -> bool {
        self.slot(id).is_some()
    }

    /// The ids in creation order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Cow<'_, str>> + '_ {
        self.order.iter().map(|&entry| {
            if entry & NAMED == 0 {
                Cow::Owned(format!("schedule-{entry}"))
            } else {
                let index = usize::try_from(entry & !NAMED).unwrap_or(usize::MAX);
                Cow::Borrowed(self.names.get(index).map_or("", |name| &**name))
            }
        })
    }

    /// The creation counter of a seen id.
    pub(super) fn slot(&self, id: &str) -> Option<u64> {
        match numbered(id) {
            Some(n) => usize::try_from(n)
                .ok()
                .and_then(|n| self.dense.get(n))
                .and_then(|slot| slot.checked_sub(1))
                .or_else(|| {
                    if self.sparse.is_empty() {
                        None
                    } else {
                        self.sparse.get(&n).copied()
                    }
                }),
            None => self.named.get(id).copied(),
        }
    }

    /// Adds an id not seen before; returns its creation counter.
    pub(super) fn insert(&mut self, id: &Arc<str>) -> u64 {
        let slot = self.order.len() as u64;
        match numbered(id) {
            Some(n) => {
                // The table grows to twice the count (plus some room), so ids allocated
                // by §7 (from the count upward) land in it.
                let bound = 2 * self.order.len() + 4096;
                match usize::try_from(n).ok().filter(|&n| n < bound) {
                    Some(index) => {
                        if self.dense.len() <= index {
                            self.dense.resize((index + 1).max(2 * self.dense.len()), 0);
                        }
                        self.dense[index] = slot + 1;
                    }
                    None => {
                        self.sparse.insert(n, slot);
                    }
                }
                self.order.push(n);
            }
            None => {
                self.order.push(NAMED | self.names.len() as u64);
                self.names.push(Arc::clone(id));
                self.named.insert(Arc::clone(id), slot);
            }
        }
        slot
    }
}

/// §7 over an arbitrary set of seen ids.
#[cfg(test)]
pub(crate) fn allocate_id_in<S: std::borrow::Borrow<str> + Eq + std::hash::Hash>(
    seen: &std::collections::HashSet<S>,
) -> String {
    allocate_with(seen.len(), |id| seen.contains(id))
}

pub(super) fn allocate_with(seen_len: usize, is_seen: impl Fn(&str) -> bool) -> String {
    let mut n = seen_len as u64 + 1;
    loop {
        let id = format!("schedule-{n}");
        if !is_seen(&id) {
            return id;
        }
        n += 1;
    }
}

/// §7 over seen ids in any order (e.g. `["custom", "schedule-3"]` → `schedule-4`).
#[cfg(test)]
pub(crate) fn allocate_id<S: AsRef<str>>(seen_ids: &[S]) -> String {
    let seen: std::collections::HashSet<&str> = seen_ids.iter().map(AsRef::as_ref).collect();
    allocate_id_in(&seen)
}
