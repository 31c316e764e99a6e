//! The store's tasks are its own: every lease renewal, follower and release runs in the
//! store's tracker, and `PgStore::close` waits for them.

use std::time::Duration;

use pretty_assertions::assert_eq;
use turnkit_core::{SessionHeader, SessionId};

const TTL: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_waits_until_every_lease_and_follower_of_the_store_has_ended() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("close");
    let store = super::store(&url, &schema, "host-a", TTL);
    let session = store.create_session(SessionHeader::new("s")).await.unwrap();
    // The lease's renewal. The create call's own task counts until its future is dropped,
    // which can follow its answer on a loaded runtime: wait for that, bounded.
    let settled = std::time::Instant::now() + Duration::from_secs(5);
    while store.running_tasks() > 1 && std::time::Instant::now() < settled {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(store.running_tasks(), 1);
    let follower = store.subscribe(&SessionId::from("s"), 0).await.unwrap();

    let mut close = std::pin::pin!(store.close());
    // The renewal and the follower live on: closing waits for them.
    assert!(futures::poll!(close.as_mut()).is_pending());
    drop(follower);
    assert!(futures::poll!(close.as_mut()).is_pending());
    // Dropping the session stops the renewal and releases the lease.
    drop(session);
    tokio::time::timeout(Duration::from_secs(20), close)
        .await
        .unwrap_or_else(|_| panic!("close did not return within 20 s"));
    assert_eq!(store.running_tasks(), 0);

    // Released: another host takes the session at once.
    let other = super::store(&url, &schema, "host-b", TTL);
    let taken = other.open_session(&SessionId::from("s")).await.unwrap();
    assert_eq!(taken.lease().host(), "host-b");
    assert_eq!(taken.lease().epoch(), 2);
}
