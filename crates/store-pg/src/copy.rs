//! Reading a log as PostgreSQL's binary `COPY` output: rows `(seq bigint, type text, time
//! timestamptz, data json)`, each type and payload copied into one text as the data arrives,
//! with no allocation per row.

use std::ops::Range;

use chrono::{DateTime, Utc};

/// One event row of a log being read: its payload and type as ranges of the read's text.
pub(crate) struct Part {
    pub(crate) seq: i64,
    pub(crate) time: DateTime<Utc>,
    pub(crate) r#type: Range<usize>,
    pub(crate) data: Range<usize>,
}

/// The signature that opens binary `COPY` output.
pub(crate) const COPY_SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC).
pub(crate) const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// Decodes binary `COPY` output fed in arbitrary chunks.
pub(crate) struct LogReader {
    /// Bytes of an incomplete header or row carried to the next chunk.
    pending: Vec<u8>,
    header_read: bool,
    finished: bool,
    text: String,
    parts: Vec<Part>,
    previous_type: Range<usize>,
}

impl LogReader {
    /// A reader expecting about `expected` rows.
    pub(crate) fn new(expected: usize) -> Self {
        Self {
            pending: Vec::new(),
            header_read: false,
            finished: false,
            text: String::new(),
            parts: Vec::with_capacity(expected.min(1 << 20)),
            previous_type: 0..0,
        }
    }

    /// Decodes every complete row of `chunk` (after what earlier chunks left over).
    ///
    /// # Errors
    /// The data is not binary `COPY` output of the log's four columns.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<(), String> {
        if self.pending.is_empty() {
            let used = self.decode(chunk)?;
            self.pending.extend_from_slice(&chunk[used..]);
        } else {
            let mut pending = std::mem::take(&mut self.pending);
            pending.extend_from_slice(chunk);
            let used = self.decode(&pending)?;
            pending.drain(..used);
            self.pending = pending;
        }
        Ok(())
    }

    /// The text and the rows, once the data has ended.
    ///
    /// # Errors
    /// The data stopped before its trailer.
    pub(crate) fn finish(self) -> Result<(String, Vec<Part>), String> {
        if !self.finished || !self.pending.is_empty() {
            return Err("the COPY data ended inside a row".to_owned());
        }
        Ok((self.text, self.parts))
    }

    /// Decodes from the start of `bytes` as far as complete items go; returns the bytes used.
    fn decode(&mut self, bytes: &[u8]) -> Result<usize, String> {
        let mut at = 0;
        if !self.header_read {
            let Some(fixed) = bytes.get(..COPY_SIGNATURE.len() + 8) else {
                return Ok(0);
            };
            if &fixed[..COPY_SIGNATURE.len()] != COPY_SIGNATURE {
                return Err("the COPY data does not start with the binary signature".to_owned());
            }
            let extension = be_u32(&fixed[COPY_SIGNATURE.len() + 4..]) as usize;
            let end = fixed.len() + extension;
            if bytes.len() < end {
                return Ok(0);
            }
            self.header_read = true;
            at = end;
        }
        while !self.finished {
            let Some(count) = bytes.get(at..at + 2) else {
                break;
            };
            let count = i16::from_be_bytes([count[0], count[1]]);
            if count == -1 {
                self.finished = true;
                at += 2;
                break;
            }
            if count != 4 {
                return Err(format!("a COPY row of {count} fields, not 4"));
            }
            let mut fields: [&[u8]; 4] = [&[]; 4];
            let mut cursor = at + 2;
            let mut complete = true;
            for field in &mut fields {
                let Some(length) = bytes.get(cursor..cursor + 4) else {
                    complete = false;
                    break;
                };
                let length = i32::from_be_bytes([length[0], length[1], length[2], length[3]]);
                let length =
                    usize::try_from(length).map_err(|_| "a NULL field in a COPY row".to_owned())?;
                let Some(value) = bytes.get(cursor + 4..cursor + 4 + length) else {
                    complete = false;
                    break;
                };
                *field = value;
                cursor += 4 + length;
            }
            if !complete {
                break;
            }
            self.row(fields)?;
            at = cursor;
        }
        if self.finished && at < bytes.len() {
            return Err("data after the end of the COPY data".to_owned());
        }
        Ok(at)
    }

    fn row(&mut self, [seq, r#type, time, data]: [&[u8]; 4]) -> Result<(), String> {
        let seq = be_i64(seq).ok_or("a seq that is not a bigint")?;
        let time = be_i64(time)
            .and_then(|micros| micros.checked_add(PG_EPOCH_MICROS))
            .and_then(DateTime::from_timestamp_micros)
            .ok_or("a time out of range")?;
        let r#type = std::str::from_utf8(r#type).map_err(|e| format!("type: {e}"))?;
        let data = std::str::from_utf8(data).map_err(|e| format!("data: {e}"))?;
        if self.text.get(self.previous_type.clone()) != Some(r#type) {
            self.previous_type = self.text.len()..self.text.len() + r#type.len();
            self.text.push_str(r#type);
        }
        let start = self.text.len();
        self.text.push_str(data);
        self.parts.push(Part {
            seq,
            time,
            r#type: self.previous_type.clone(),
            data: start..self.text.len(),
        });
        Ok(())
    }
}

fn be_u32(bytes: &[u8]) -> u32 {
    bytes
        .get(..4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn be_i64(bytes: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(out: &mut Vec<u8>, value: &[u8]) {
        out.extend_from_slice(&i32::try_from(value.len()).unwrap().to_be_bytes());
        out.extend_from_slice(value);
    }

    /// Binary COPY output of `rows` (seq, type, microseconds since 2000-01-01, data).
    fn copy_data(rows: &[(i64, &str, i64, &str)]) -> Vec<u8> {
        let mut out = COPY_SIGNATURE.to_vec();
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&3u32.to_be_bytes());
        out.extend_from_slice(b"ext");
        for (seq, r#type, micros, data) in rows {
            out.extend_from_slice(&4i16.to_be_bytes());
            field(&mut out, &seq.to_be_bytes());
            field(&mut out, r#type.as_bytes());
            field(&mut out, &micros.to_be_bytes());
            field(&mut out, data.as_bytes());
        }
        out.extend_from_slice(&(-1i16).to_be_bytes());
        out
    }

    fn read(data: &[u8], chunk: usize) -> Result<Vec<(i64, String, String, String)>, String> {
        let mut reader = LogReader::new(0);
        for piece in data.chunks(chunk) {
            reader.feed(piece)?;
        }
        let (text, parts) = reader.finish()?;
        Ok(parts
            .into_iter()
            .map(|p| {
                (
                    p.seq,
                    text[p.r#type].to_owned(),
                    p.time.to_rfc3339(),
                    text[p.data].to_owned(),
                )
            })
            .collect())
    }

    const ROWS: &[(i64, &str, i64, &str)] = &[
        (1, "turn/start", 0, r#"{"turn":1}"#),
        (2, "turn/start", 1_500, r#"{"ü":"é"}"#),
        (3, "test/write", -1_000_000, "[]"),
    ];

    #[test]
    fn rows_decode_alike_whatever_the_chunking() {
        let data = copy_data(ROWS);
        let expected = vec![
            (
                1,
                "turn/start".to_owned(),
                "2000-01-01T00:00:00+00:00".to_owned(),
                r#"{"turn":1}"#.to_owned(),
            ),
            (
                2,
                "turn/start".to_owned(),
                "2000-01-01T00:00:00.001500+00:00".to_owned(),
                r#"{"ü":"é"}"#.to_owned(),
            ),
            (
                3,
                "test/write".to_owned(),
                "1999-12-31T23:59:59+00:00".to_owned(),
                "[]".to_owned(),
            ),
        ];
        for chunk in 1..=data.len() {
            assert_eq!(
                read(&data, chunk),
                Ok(expected.clone()),
                "chunks of {chunk}"
            );
        }
    }

    #[test]
    fn a_type_repeated_in_a_row_is_stored_once() {
        let mut reader = LogReader::new(3);
        reader.feed(&copy_data(ROWS)).unwrap();
        let (text, _) = reader.finish().unwrap();
        assert_eq!(
            text,
            r#"turn/start{"turn":1}{"ü":"é"}test/write[]"#.to_owned()
        );
    }

    #[test]
    fn bad_data_is_an_error_not_a_panic() {
        let data = copy_data(ROWS);
        assert_eq!(
            read(&data[..data.len() - 2], 7),
            Err("the COPY data ended inside a row".to_owned())
        );
        assert_eq!(
            read(b"PGCOPY\n\xff\r\n\x01\0\0\0\0\0\0\0\0", 100),
            Err("the COPY data does not start with the binary signature".to_owned())
        );
        let mut extra = data;
        extra.push(0);
        assert_eq!(
            read(&extra, 1000),
            Err("data after the end of the COPY data".to_owned())
        );
        let mut wide = copy_data(&[]);
        let trailer = wide.len() - 2;
        wide.splice(trailer.., 5i16.to_be_bytes());
        assert_eq!(
            read(&wide, 1000),
            Err("a COPY row of 5 fields, not 4".to_owned())
        );
        let mut null = copy_data(&[]);
        let trailer = null.len() - 2;
        null.splice(trailer.., 4i16.to_be_bytes());
        null.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            read(&null, 1000),
            Err("a NULL field in a COPY row".to_owned())
        );
        let short_seq = {
            let mut out = copy_data(&[]);
            let trailer = out.len() - 2;
            out.truncate(trailer);
            out.extend_from_slice(&4i16.to_be_bytes());
            field(&mut out, &[1, 2]);
            field(&mut out, b"t");
            field(&mut out, &0i64.to_be_bytes());
            field(&mut out, b"1");
            out.extend_from_slice(&(-1i16).to_be_bytes());
            out
        };
        assert_eq!(
            read(&short_seq, 1000),
            Err("a seq that is not a bigint".to_owned())
        );
    }
}
