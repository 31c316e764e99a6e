use pretty_assertions::assert_eq;
use turnkit_core::{MessageSource, UserMessage};

use super::Held;
use crate::session::tests::host;

/// A request dropped before its response body was made never reaches `Committing`: its
/// reservation is released when its last `Held` goes, so the message is owed again.
#[tokio::test]
async fn a_reservation_no_response_took_is_released_with_its_last_handle() {
    let host = host();
    let notice = UserMessage::text(
        "job bash-1 finished",
        MessageSource::Plugin {
            plugin: "tool-jobs".to_owned(),
            form: None,
            summary: None,
        },
    );
    host.agent_handle().followup(notice).unwrap();
    let (key, taken) = host.owed().reserve(0).unwrap();
    assert_eq!(taken.len(), 1);
    assert!(host.owed().reserve(0).is_none(), "reserved once");
    let held = Held::new(host.clone());
    held.hold(key);
    let copy = held.clone();
    drop(held);
    assert!(host.owed().reserve(0).is_none(), "a handle is left");
    drop(copy);
    let again = host.owed().reserve(0).map(|(_, taken)| {
        taken
            .iter()
            .map(|p| p.message.joined_text())
            .collect::<Vec<_>>()
    });
    assert_eq!(again, Some(vec!["job bash-1 finished".to_owned()]));
    host.shutdown().await;
}
