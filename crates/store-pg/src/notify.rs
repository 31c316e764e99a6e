//! What a flush announces to followers: the `NOTIFY` channel of a schema and the payload
//! naming a session and its new last seq (docs/event-log.md, "Following a session").

/// The longest notify payload the flush sends with the session id; a longer id sends an
/// empty payload, which every follower of the schema takes as "re-read".
const MAX_PAYLOAD_ID: usize = 7_000;

/// The `NOTIFY` channel of the schema whose quoted name is `quoted`: `harness_<schema>`,
/// cut to the server's 63-byte identifier limit.
pub(crate) fn channel(quoted: &str) -> String {
    let mut name = format!("harness_{}", quoted.trim_matches('"'));
    // Cut at a character boundary: a schema name may be any text.
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// The payload a flush of `id` up to `last_seq` notifies.
pub(crate) fn payload(id: &str, last_seq: i64) -> String {
    if id.len() > MAX_PAYLOAD_ID {
        String::new()
    } else {
        format!("{id}:{last_seq}")
    }
}

#[cfg(test)]
mod tests {
    use super::{channel, payload};

    #[test]
    fn the_channel_is_the_schema_cut_to_the_identifier_limit() {
        assert_eq!(channel("\"harness\""), "harness_harness");
        let long = format!("\"{}\"", "s".repeat(80));
        assert_eq!(channel(&long), format!("harness_{}", "s".repeat(55)));
        assert_eq!(channel(&long).len(), 63);
        // A schema of two-byte characters is cut before the character that would pass 63 bytes.
        let wide = format!("\"{}\"", "é".repeat(40));
        assert_eq!(channel(&wide), format!("harness_{}", "é".repeat(27)));
    }

    #[test]
    fn a_payload_names_the_session_and_its_last_seq() {
        assert_eq!(payload("s1", 7), "s1:7");
        assert_eq!(payload("a:b", 7), "a:b:7");
        assert_eq!(payload(&"x".repeat(7_001), 7), "");
    }
}
