use pretty_assertions::assert_eq;

use super::*;
use crate::state::kinds::Table;
use crate::state::records::Slots;
use turnkit_core::{Registered, RegistrationScope, ScopeKey};
use turnkit_jobs::{JobId, JobKind, JobLabel, JobStatus};

/// A running, unowned record as `issue` stores it.
fn record(seq: u64, id: JobId, kind: JobKind) -> Record {
    Record {
        seq,
        id,
        kind,
        label: JobLabel::new("label"),
        limit: None,
        owner: None,
        cancel: None,
        stream: None,
        progress: None,
        voice: None,
        status: JobStatus::Running,
        detail: None,
        output: None,
        started_at: 0,
        finished_at: 0,
        reported: false,
        waiters: None,
        span: None,
        teardown: None,
        earlier: false,
        unjournaled: false,
    }
}

/// Issues one unowned record of `kind` (the registry's sequence counter is not part of
/// `Records`: a global one stands in for it).
fn issue(records: &mut Records, kind: &str) -> (JobId, usize) {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    records.issue(JobKind::new(kind), |id, kind| record(seq, id, kind))
}

/// `(first, entries)` of a kind's dense table, or `None` when it is sparse.
fn dense(records: &Records, kind: &str) -> Option<(u64, usize)> {
    match &records.kinds[records.kind_of[kind]].table {
        Table::Dense { first, slots } => Some((*first, slots.len())),
        Table::Sparse(_) => None,
    }
}

fn found(records: &Records, id: &str) -> Option<String> {
    records
        .get(&JobId::new(id))
        .map(|record| record.id.to_string())
}

#[test]
fn ids_are_per_kind_counters_and_found_by_exact_string() {
    let mut records = Records::default();
    let issued: Vec<String> = ["bash", "bash", "pty-send", "a-1", "bash", "a-1"]
        .into_iter()
        .map(|kind| issue(&mut records, kind).0.to_string())
        .collect();
    assert_eq!(
        issued,
        ["bash-1", "bash-2", "pty-send-1", "a-1-1", "bash-3", "a-1-2"]
    );
    for id in &issued {
        assert_eq!(found(&records, id).as_deref(), Some(id.as_str()));
    }
    // Spellings that parse to a held number but are not the issued string, and ids never issued.
    for id in [
        "bash-01",
        "bash-+1",
        "bash-1 ",
        " bash-1",
        "bash-4",
        "bash-0",
        "bash",
        "bash-",
        "-1",
        "",
        "a-1",
        "a-2-1",
        "pty-1",
        "send-1",
        "bash-18446744073709551616",
        "BASH-1",
    ] {
        assert_eq!(found(&records, id), None, "{id:?}");
    }
}

#[test]
fn removed_ids_are_unknown_and_their_slots_are_reused_under_a_new_sequence() {
    let mut records = Records::default();
    let (first, _) = issue(&mut records, "bash");
    let (second, _) = issue(&mut records, "bash");
    let (third, third_slot) = issue(&mut records, "bash");
    let removed = records.remove_all(&[first, JobId::new("bash-9"), third]);
    assert_eq!(
        removed.iter().map(|r| r.id.to_string()).collect::<Vec<_>>(),
        ["bash-1", "bash-3"]
    );
    assert_eq!(records.len(), 1);
    assert_eq!(found(&records, "bash-1"), None);
    assert_eq!(found(&records, "bash-2").as_deref(), Some("bash-2"));
    assert_eq!(found(&records, "bash-3"), None);
    // The table forgets the removed front entry; the removed tail entry stays a hole.
    assert_eq!(dense(&records, "bash"), Some((2, 2)));
    // The last freed slot holds the next record; the old (slot, seq) pair no longer reaches it.
    let (fourth, fourth_slot) = issue(&mut records, "bash");
    assert_eq!((fourth.as_str(), fourth_slot), ("bash-4", third_slot));
    let third_seq = removed[1].seq;
    assert!(records.at_mut(third_slot, third_seq).is_none());
    let fourth_seq = records.values()[1].seq;
    assert!(fourth_seq > third_seq);
    assert_eq!(
        records
            .at_mut(third_slot, fourth_seq)
            .map(|r| r.id.to_string()),
        Some("bash-4".to_owned())
    );
    assert_eq!(
        records
            .values()
            .iter()
            .map(|r| r.id.to_string())
            .collect::<Vec<_>>(),
        [second.to_string(), fourth.to_string()]
    );
}

#[test]
fn clearing_keeps_the_counters() {
    let mut records = Records::default();
    issue(&mut records, "bash");
    issue(&mut records, "bash");
    let taken = records.take_all();
    assert_eq!(taken.len(), 2);
    assert_eq!(records.len(), 0);
    assert_eq!(found(&records, "bash-1"), None);
    let (next, _) = issue(&mut records, "bash");
    assert_eq!(next.as_str(), "bash-3");
    assert_eq!(found(&records, "bash-3").as_deref(), Some("bash-3"));
    assert_eq!(found(&records, "bash-2"), None);
}

#[test]
fn a_table_emptied_from_the_front_restarts_at_the_next_number() {
    let mut records = Records::default();
    let ids: Vec<JobId> = (0..5).map(|_| issue(&mut records, "k").0).collect();
    records.remove_all(&ids);
    assert_eq!(dense(&records, "k"), Some((6, 0)));
    let (next, _) = issue(&mut records, "k");
    assert_eq!(next.as_str(), "k-6");
    assert_eq!(found(&records, "k-6").as_deref(), Some("k-6"));
    assert_eq!(found(&records, "k-5"), None);
}

#[test]
fn slots_grow_in_chunks_without_moving_records() {
    let mut records = Records::default();
    let count = Slots::CHUNK * 2 + 3;
    let ids: Vec<JobId> = (0..count).map(|_| issue(&mut records, "x").0).collect();
    assert_eq!(records.slots.chunks.len(), 3);
    assert!(
        records
            .slots
            .chunks
            .iter()
            .all(|c| c.capacity() == Slots::CHUNK)
    );
    for id in [&ids[0], &ids[Slots::CHUNK], &ids[count - 1]] {
        assert_eq!(found(&records, id.as_str()).as_deref(), Some(id.as_str()));
    }
}

#[test]
fn a_mostly_removed_table_turns_sparse_and_back() {
    let mut records = Records::default();
    let ids: Vec<JobId> = (0..2000).map(|_| issue(&mut records, "k").0).collect();
    assert_eq!(dense(&records, "k"), Some((1, 2000)));
    // The first job stays; removing most of the rest leaves a table of holes.
    records.remove_all(&ids[1..1600]);
    assert_eq!(dense(&records, "k"), None);
    assert_eq!(records.kinds[records.kind_of["k"]].held, 401);
    assert_eq!(found(&records, "k-1").as_deref(), Some("k-1"));
    assert_eq!(found(&records, "k-2"), None);
    assert_eq!(found(&records, "k-2000").as_deref(), Some("k-2000"));
    let (next, _) = issue(&mut records, "k");
    assert_eq!(next.as_str(), "k-2001");
    assert_eq!(found(&records, "k-2001").as_deref(), Some("k-2001"));
    // Emptied, it is dense again and starts at the next number.
    let mut rest = vec![ids[0].clone(), next];
    rest.extend_from_slice(&ids[1600..]);
    records.remove_all(&rest);
    assert_eq!(records.len(), 0);
    assert_eq!(dense(&records, "k"), Some((2002, 0)));
    assert_eq!(issue(&mut records, "k").0.as_str(), "k-2002");
    assert_eq!(found(&records, "k-2002").as_deref(), Some("k-2002"));
}

#[test]
fn a_raised_counter_skips_the_ids_a_journal_has_seen() {
    let mut records = Records::default();
    // Raised before the kind issued anything, then next to a held record (a short gap stays
    // dense), then by a long jump (the table turns sparse); lookups stay exact.
    records.raise_counter(&JobKind::bash(), 4);
    let (first, _) = issue(&mut records, "bash");
    records.raise_counter(&JobKind::bash(), 7);
    let (second, _) = issue(&mut records, "bash");
    assert_eq!((first.as_str(), second.as_str()), ("bash-5", "bash-8"));
    assert_eq!(dense(&records, "bash"), Some((5, 4)));
    records.raise_counter(&JobKind::bash(), 5_000);
    let (third, _) = issue(&mut records, "bash");
    assert_eq!(third.as_str(), "bash-5001");
    assert_eq!(dense(&records, "bash"), None);
    records.raise_counter(&JobKind::bash(), 3);
    assert_eq!(
        ["bash-5", "bash-6", "bash-8", "bash-5001", "bash-5002"].map(|id| found(&records, id)),
        [
            Some("bash-5".to_owned()),
            None,
            Some("bash-8".to_owned()),
            Some("bash-5001".to_owned()),
            None
        ]
    );
    assert_eq!(issue(&mut records, "bash").0.as_str(), "bash-5002");
}

#[test]
fn an_agent_layer_routes_to_that_agent_only() {
    let mut layers = Registered::new();
    for (item, scope) in [
        (1, RegistrationScope::Agent(ScopeKey::from("s1"))),
        (2, RegistrationScope::Scoped(ScopeKey::from("s1"))),
        (3, RegistrationScope::Global),
    ] {
        layers.insert(Layered { scope, item });
    }
    let routed = |chain: &[ScopeKey]| {
        let mut seen = Vec::new();
        for_each_route(&layers, Some(chain), |item| seen.push(*item));
        seen
    };
    assert_eq!(routed(&[ScopeKey::from("s1")]), [3, 1, 2]);
    assert_eq!(
        routed(&[ScopeKey::from("s1.agent-1"), ScopeKey::from("s1")]),
        [3, 2]
    );
}

#[test]
fn journaled_records_are_stored_at_their_own_ids() {
    let mut records = Records::default();
    let kind = JobKind::bash();
    let put = |records: &mut Records, n: u64| {
        records
            .issue_at(kind.clone(), n, |id, kind| record(0, id, kind))
            .map(|id| id.to_string())
    };
    // Above the counter: raised to it (the skipped numbers are never issued).
    assert_eq!(put(&mut records, 3).as_deref(), Some("bash-3"));
    assert_eq!(put(&mut records, 3), None);
    let (next, _) = issue(&mut records, "bash");
    assert_eq!(next.as_str(), "bash-4");
    // Removed since: put back, before the dense table's first entry too.
    records.remove_all(&[JobId::new("bash-3")]);
    assert_eq!(found(&records, "bash-3"), None);
    assert_eq!(put(&mut records, 3).as_deref(), Some("bash-3"));
    assert_eq!(put(&mut records, 1).as_deref(), Some("bash-1"));
    assert_eq!(put(&mut records, 0), None);
    assert_eq!(
        ["bash-1", "bash-2", "bash-3", "bash-4"].map(|id| found(&records, id)),
        [
            Some("bash-1".to_owned()),
            None,
            Some("bash-3".to_owned()),
            Some("bash-4".to_owned())
        ]
    );
    assert_eq!(records.len(), 3);
    assert_eq!(issue(&mut records, "bash").0.as_str(), "bash-5");
}

/// A record put back into an emptied table below the counter (its session disposed and
/// resumed after other sessions' jobs): the next issued id is found at its own number, and
/// no other number answers for it.
#[test]
fn a_record_put_back_into_an_emptied_table_keeps_later_ids_at_their_numbers() {
    for gap in [1_u64, 2, 5_000] {
        let mut records = Records::default();
        let kind = JobKind::bash();
        let issued: Vec<JobId> = (0..=gap).map(|_| issue(&mut records, "bash").0).collect();
        records.remove_all(&issued);
        assert_eq!(records.len(), 0);
        let back = records.issue_at(kind.clone(), 1, |id, kind| record(0, id, kind));
        assert_eq!(back.map(|id| id.to_string()).as_deref(), Some("bash-1"));
        let next = issue(&mut records, "bash").0.to_string();
        assert_eq!(next, format!("bash-{}", gap + 2));
        assert_eq!(found(&records, &next), Some(next.clone()));
        assert_eq!(found(&records, "bash-1"), Some("bash-1".to_owned()));
        assert_eq!(found(&records, &format!("bash-{}", gap + 1)), None);
        assert_eq!(records.len(), 2);
    }
}
