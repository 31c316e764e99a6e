//! The transaction of a group of flushes of different sessions (group commit).

use std::collections::HashSet;

use futures::SinkExt;
use tokio_postgres::types::ToSql;

use super::queue::Request;
use super::rows::{COPY_CHUNK, CopyRows};
use crate::db::{Db, seq_i64};
use crate::notify::{channel, payload};

impl Db {
    /// The transaction of a group: one statement checks every session and moves the
    /// `last_seq` of those whose check held (notifying their followers at commit), then one
    /// binary `COPY` inserts their batches. Answers the sessions it wrote.
    pub(super) async fn flush_group(
        &self,
        client: &mut deadpool_postgres::Client,
        group: &[Request],
    ) -> Result<HashSet<String>, tokio_postgres::Error> {
        let check = client
            .prepare_cached(&self.sql(
                "WITH req AS ( \
                     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], \
                                          $5::bigint[], $6::text[]) \
                     AS r(id, owner, epoch, expected, last, note)), \
                 checked AS ( \
                     UPDATE {s}.sessions AS t SET last_seq = req.last FROM req \
                     WHERE t.id = req.id AND t.owner = req.owner AND t.epoch = req.epoch \
                       AND t.last_seq = req.expected \
                     RETURNING t.id, req.note) \
                 SELECT id, pg_notify($7, note) FROM checked",
            ))
            .await?;
        let mut ids = Vec::with_capacity(group.len());
        let mut owners = Vec::with_capacity(group.len());
        let mut epochs = Vec::with_capacity(group.len());
        let mut expected = Vec::with_capacity(group.len());
        let mut ends = Vec::with_capacity(group.len());
        let mut notes = Vec::with_capacity(group.len());
        for request in group {
            let end = seq_i64(request.durable + request.batch.len() as u64);
            ids.push(request.id.as_str());
            owners.push(request.host.as_str());
            epochs.push(request.epoch);
            expected.push(seq_i64(request.durable));
            ends.push(end);
            notes.push(payload(&request.id, end));
        }
        let channel = channel(&self.quoted);
        let params: [&(dyn ToSql + Sync); 7] =
            [&ids, &owners, &epochs, &expected, &ends, &notes, &channel];
        let tx = client.transaction().await?;
        let rows = tx.query(&check, &params).await?;
        let mut written = HashSet::with_capacity(rows.len());
        for row in rows {
            written.insert(row.try_get::<_, String>(0)?);
        }
        if written.is_empty() {
            return Ok(written);
        }
        let sink = tx
            .copy_in(&self.sql(
                "COPY {s}.events (session_id, seq, type, time, data) FROM STDIN (FORMAT binary)",
            ))
            .await?;
        let mut sink = std::pin::pin!(sink);
        let mut rows = CopyRows::new();
        for request in group.iter().filter(|r| written.contains(&r.id)) {
            for event in &request.batch {
                rows.push(&request.id, event);
                if rows.buffer.len() >= COPY_CHUNK {
                    sink.send(rows.buffer.split().freeze()).await?;
                }
            }
        }
        sink.send(rows.finish()).await?;
        sink.as_mut().finish().await?;
        tx.commit().await?;
        Ok(written)
    }
}
