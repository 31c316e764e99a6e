//! [`CopyRows`]: a group's events as PostgreSQL's binary `COPY` rows.

use bytes::{BufMut, Bytes, BytesMut};
use turnkit_core::RawEvent;

use crate::copy::{COPY_SIGNATURE, PG_EPOCH_MICROS};
use crate::db::seq_i64;

/// The `COPY` data of a group goes to the server in pieces of about this many bytes, so the
/// server inserts while the rest is encoded.
pub(super) const COPY_CHUNK: usize = 64 * 1024;

/// Events encoded as PostgreSQL's binary `COPY` rows `(session_id text, seq bigint,
/// type text, time timestamptz, data json)`; `json`'s binary form is its text.
pub(super) struct CopyRows {
    pub(super) buffer: BytesMut,
}

impl CopyRows {
    pub(super) fn new() -> Self {
        let mut buffer = BytesMut::with_capacity(COPY_CHUNK + 4096);
        buffer.put_slice(COPY_SIGNATURE);
        // No flags, no header extension.
        buffer.put_u32(0);
        buffer.put_u32(0);
        Self { buffer }
    }

    pub(super) fn push(&mut self, session: &str, event: &RawEvent) {
        let time = event.time();
        let mut micros = time.timestamp_micros() - PG_EPOCH_MICROS;
        // Rounded toward 2000-01-01 as the single flush's encoding (chrono's) rounds, not
        // down: a time has one stored value whichever way it was flushed.
        if micros < 0 && !time.timestamp_subsec_nanos().is_multiple_of(1_000) {
            micros += 1;
        }
        self.buffer.put_i16(5);
        self.text(session);
        self.buffer.put_i32(8);
        self.buffer.put_i64(seq_i64(event.seq()));
        self.text(event.r#type());
        self.buffer.put_i32(8);
        self.buffer.put_i64(micros);
        self.text(event.payload());
    }

    fn text(&mut self, text: &str) {
        // A field past i32::MAX bytes gets a wrong length, so the server refuses the data (it
        // refuses any field over 1 GB anyway) and the group falls back to single flushes.
        self.buffer
            .put_i32(i32::try_from(text.len()).unwrap_or(i32::MAX));
        self.buffer.put_slice(text.as_bytes());
    }

    /// The rest of the data with the trailer.
    pub(super) fn finish(mut self) -> Bytes {
        self.buffer.put_i16(-1);
        self.buffer.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grouped_event_time_is_the_one_a_single_flush_stores() {
        use chrono::{DateTime, Utc};
        use tokio_postgres::types::{ToSql, Type};
        for text in [
            "1999-12-31T23:59:59.999999500Z",
            "1969-07-20T20:17:40.000000999Z",
            "2026-12-02T14:00:00.123456789Z",
        ] {
            let time: DateTime<Utc> = text.parse().unwrap();
            let mut single = BytesMut::new();
            time.to_sql(&Type::TIMESTAMPTZ, &mut single).unwrap();
            let mut rows = CopyRows::new();
            let start = rows.buffer.len();
            rows.push("s", &RawEvent::new(1, "t", time, "{}").unwrap());
            // Field count, session (4 + 1), seq (4 + 8), type (4 + 1), then the time.
            let at = start + 2 + 5 + 12 + 5;
            assert_eq!(
                &rows.buffer[at..at + 12],
                [&8_i32.to_be_bytes()[..], &single].concat(),
                "{text}"
            );
        }
    }
}
