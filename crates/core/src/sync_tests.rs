use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;

use super::*;
use crate::Registration;

#[test]
fn ids_start_at_one_and_are_never_reused() {
    let mut list = Registered::new();
    assert_eq!(list.insert('a'), 1);
    assert_eq!(list.insert('b'), 2);
    assert_eq!(list.remove(2), Some('b'));
    assert_eq!(list.remove(2), None);
    assert_eq!(list.insert('c'), 3);
    assert_eq!(list.entries().collect::<Vec<_>>(), [(1, &'a'), (3, &'c')]);
    assert_eq!(list.to_vec(), ['a', 'c']);
    assert_eq!(list.len(), 2);
}

#[test]
fn a_poisoned_lock_is_recovered_with_its_state() {
    let mutex = Arc::new(Mutex::new(7));
    let poisoner = mutex.clone();
    let result = std::thread::spawn(move || {
        let _guard = poisoner.lock();
        std::panic::panic_any("poison");
    })
    .join();
    let payload = result.expect_err("the thread panicked");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"poison"));
    assert!(mutex.is_poisoned());
    assert_eq!(*lock(&mutex), 7);
}

#[test]
fn a_weak_registration_undoes_once_and_never_keeps_its_target_alive() {
    let list: Arc<Mutex<Registered<u8>>> = Arc::default();
    let id = lock(&list).insert(1);
    let registration = Registration::weak(&list, move |list| {
        lock(list).remove(id);
    });
    assert_eq!(Arc::strong_count(&list), 1);
    registration.unregister();
    registration.unregister();
    assert_eq!(lock(&list).len(), 0);

    let gone: Arc<Mutex<Registered<u8>>> = Arc::default();
    let registration = Registration::weak(&gone, |_| unreachable!("the target is gone"));
    drop(gone);
    drop(registration);
}
