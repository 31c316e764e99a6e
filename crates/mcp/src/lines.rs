//! [`Lines`]: the newline-delimited JSON-RPC stream of one connection, as an rmcp
//! [`Transport`]. It answers what the SDK's own stdio transport drops: a line that is not JSON
//! gets -32700 with id `null`, and a request whose shape does not decode gets -32602 (a
//! method this server serves: its params are wrong) or -32600, with the request's id.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CustomRequest, ErrorCode};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::server::custom_request_error;

/// UTF-8 byte order mark, which RFC 8259 lets a parser ignore.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One connection: lines read from `read`, messages written to `write` one line each.
pub(crate) struct Lines<R, W> {
    read: BufReader<R>,
    /// The line being read; a read cut short by the serve loop's `select!` resumes it.
    line: Vec<u8>,
    write: Arc<Mutex<W>>,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            write: Arc::new(Mutex::new(write)),
        }
    }

    /// The answer to a JSON text that is not a message the SDK decodes, if it gets one.
    fn refusal(line: &[u8], error: &serde_json::Error) -> Option<Value> {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            return None;
        };
        let id = value
            .get("id")
            .filter(|id| id.is_string() || id.is_number());
        let method = value.get("method").and_then(Value::as_str);
        let (code, message) = match (id, method) {
            // A notification the SDK does not know is ignored, as JSON-RPC asks.
            (None, Some(_)) => return None,
            (Some(_), Some(method)) => {
                let request = CustomRequest::new(method, value.get("params").cloned());
                let refused = custom_request_error(&request);
                if refused.code == ErrorCode::METHOD_NOT_FOUND {
                    // An unknown method would have decoded: the envelope itself is wrong.
                    tracing::debug!("mcp: refusing a request: {error}");
                    (ErrorCode::INVALID_REQUEST, "Invalid request".to_owned())
                } else {
                    (refused.code, refused.message.into_owned())
                }
            }
            _ => (ErrorCode::INVALID_REQUEST, "Invalid request".to_owned()),
        };
        Some(json!({
            "jsonrpc": "2.0",
            "id": id.cloned().unwrap_or(Value::Null),
            "error": {"code": code.0, "message": message},
        }))
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        let bytes = serde_json::to_vec(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        async move {
            let bytes = bytes?;
            let mut write = write.lock().await;
            write.write_all(&bytes).await?;
            write.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read.read_until(b'\n', &mut self.line).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            if self.line.last() != Some(&b'\n') {
                // End of input inside a line: nothing whole to answer.
                return None;
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = text.strip_prefix(BOM).unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let answer = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                Ok(message) => return Some(message),
                Err(error) if error.is_syntax() || error.is_eof() => Some(json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {"code": ErrorCode::PARSE_ERROR.0, "message": format!("Parse error: {error}")},
                })),
                Err(error) => Self::refusal(text, &error),
            };
            if let Some(answer) = answer
                && write_line(&self.write, &answer).await.is_err()
            {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.shutdown().await
    }
}

/// Writes `value` as one line and flushes.
async fn write_line<W: AsyncWrite + Unpin>(write: &Mutex<W>, value: &Value) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    let mut write = write.lock().await;
    write.write_all(&bytes).await?;
    write.flush().await
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn lines_that_are_not_messages_are_answered_and_skipped() {
        let input: &[u8] = b"not json\n\r\n[1,\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":\"x\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n";
        let (write, mut out) = tokio::io::duplex(4096);
        let mut lines = Lines::new(input, write);
        let message = lines.receive().await.unwrap();
        assert_eq!(
            serde_json::to_value(&message).unwrap()["method"],
            "notifications/initialized"
        );
        assert!(lines.receive().await.is_none());
        drop(lines);
        let mut written = String::new();
        out.read_to_string(&mut written).await.unwrap();
        let written: Vec<Value> = written
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            written,
            [
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: expected ident at line 1 column 2"}}),
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: EOF while parsing a value at line 1 column 3"}}),
                json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Invalid params for tools/call: invalid type: string \"x\", expected struct CallToolRequestParams"}}),
            ]
        );
    }
}
