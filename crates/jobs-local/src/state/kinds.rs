//! Job ids by kind: each kind's counter and its `n → slot` table (§4.3 step 8).

use std::collections::VecDeque;

use turnkit_jobs::JobKind;

use crate::state::map::FastMap;

/// One kind's id counter and its `n → slot` table (todo-jobs §4.3 step 8: ids are
/// `<kind>-<n>`, per-kind counters starting at 1, never reused).
pub(crate) struct KindIndex {
    pub(super) kind: JobKind,
    pub(super) counter: u64,
    pub(super) table: Table,
    /// Entries held (records of this kind in the store).
    pub(super) held: usize,
}

/// A kind's `n → slot` table.
pub(super) enum Table {
    /// `slots[i]` is the slot of job `n = first + i`, or [`Table::GONE`]. Removed entries at
    /// the front are dropped, so this spans the oldest held job of the kind to the newest.
    Dense { first: u64, slots: VecDeque<usize> },
    /// Used once a dense table is mostly holes (a long-held old job with many removed
    /// after it): memory then follows the records held, not the ids issued.
    Sparse(FastMap<u64, usize>),
}

impl Table {
    const GONE: usize = usize::MAX;

    /// A dense table of at least this many entries becomes sparse when fewer than a quarter
    /// of them are held.
    const SPARSE_AFTER: usize = 1024;
}

impl KindIndex {
    pub(super) fn new(kind: JobKind) -> Self {
        Self {
            kind,
            counter: 0,
            table: Table::Dense {
                first: 1,
                slots: VecDeque::new(),
            },
            held: 0,
        }
    }

    /// Issues the next number, held in `slot`.
    pub(super) fn issue(&mut self, slot: usize) -> u64 {
        self.counter += 1;
        let n = self.counter;
        match &mut self.table {
            Table::Dense { first, slots } => {
                if slots.is_empty() {
                    *first = n;
                }
                // Numbers are issued one by one, so `n` is the table's next entry.
                slots.push_back(slot);
            }
            Table::Sparse(map) => {
                map.insert(n, slot);
            }
        }
        self.held += 1;
        n
    }

    /// Makes the next issued number at least `n + 1` (ids a journal has seen are never
    /// issued again). Numbers skipped over are holes of a dense table, or the table turns
    /// sparse when the jump is long.
    pub(super) fn raise(&mut self, n: u64) {
        if n <= self.counter {
            return;
        }
        let gap = n - self.counter;
        if let Table::Dense { first, slots } = &mut self.table {
            if slots.is_empty() {
                *first = n + 1;
            } else if gap <= Table::SPARSE_AFTER as u64 {
                slots.extend(std::iter::repeat_n(Table::GONE, gap as usize));
            } else {
                let map = (*first..)
                    .zip(slots.iter().copied())
                    .filter(|&(_, slot)| slot != Table::GONE)
                    .collect();
                self.table = Table::Sparse(map);
            }
        }
        self.counter = n;
    }

    /// Holds `n` (at most the counter, not held) in `slot`: a journaled job's record put
    /// back after this registry removed it. A number before a dense table's first entry
    /// turns the table sparse.
    pub(super) fn place(&mut self, n: u64, slot: usize) {
        if let Table::Dense { first, slots } = &mut self.table {
            if slots.is_empty() {
                // The table's last entry must stay the counter (`issue` pushes the next
                // number): the numbers after `n` are holes, or the table turns sparse.
                let after = self.counter.saturating_sub(n);
                if after <= Table::SPARSE_AFTER as u64 {
                    *first = n;
                    slots.push_back(slot);
                    slots.extend(std::iter::repeat_n(Table::GONE, after as usize));
                } else {
                    self.table = Table::Sparse(std::iter::once((n, slot)).collect());
                }
                self.held += 1;
                return;
            }
            let within = n
                .checked_sub(*first)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| slots.get_mut(i));
            if let Some(entry) = within {
                *entry = slot;
                self.held += 1;
                return;
            }
            let map = (*first..)
                .zip(slots.iter().copied())
                .filter(|&(_, slot)| slot != Table::GONE)
                .collect();
            self.table = Table::Sparse(map);
        }
        if let Table::Sparse(map) = &mut self.table {
            map.insert(n, slot);
            self.held += 1;
        }
    }

    pub(super) fn get(&self, n: u64) -> Option<usize> {
        match &self.table {
            Table::Dense { first, slots } => {
                let i = usize::try_from(n.checked_sub(*first)?).ok()?;
                let slot = *slots.get(i)?;
                (slot != Table::GONE).then_some(slot)
            }
            Table::Sparse(map) => map.get(&n).copied(),
        }
    }

    pub(super) fn remove(&mut self, n: u64) {
        let removed = match &mut self.table {
            Table::Dense { first, slots } => {
                let entry = n
                    .checked_sub(*first)
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| slots.get_mut(i))
                    .filter(|slot| **slot != Table::GONE);
                let removed = entry.map(|slot| *slot = Table::GONE).is_some();
                while slots.front() == Some(&Table::GONE) {
                    slots.pop_front();
                    *first += 1;
                }
                removed
            }
            Table::Sparse(map) => map.remove(&n).is_some(),
        };
        if removed {
            self.held -= 1;
        }
        self.compact();
    }

    /// Switches a mostly-empty dense table to a sparse one, and an emptied sparse table back.
    pub(super) fn compact(&mut self) {
        match &self.table {
            Table::Dense { first, slots }
                if slots.len() >= Table::SPARSE_AFTER && self.held * 4 < slots.len() =>
            {
                let map = (*first..)
                    .zip(slots.iter().copied())
                    .filter(|&(_, slot)| slot != Table::GONE)
                    .collect();
                self.table = Table::Sparse(map);
            }
            Table::Sparse(map) if map.is_empty() => self.clear(),
            _ => {}
        }
    }

    /// Forgets every entry (the counter stays).
    pub(super) fn clear(&mut self) {
        self.table = Table::Dense {
            first: self.counter + 1,
            slots: VecDeque::new(),
        };
        self.held = 0;
    }
}

/// Splits a job id into its kind and counter (`<kind>-<n>`, split at the last `-`).
pub(crate) fn split_id(id: &str) -> Option<(&str, u64)> {
    let (kind, n) = id.rsplit_once('-')?;
    Some((kind, n.parse().ok()?))
}
