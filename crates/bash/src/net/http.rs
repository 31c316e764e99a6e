//! HTTP of the proxy: `CONNECT host:port` (a tunnel; TLS passes through untouched) and
//! requests in absolute form (`GET http://host[:port]/path HTTP/1.1`), forwarded in origin
//! form with `Connection: close`, so one client connection carries one request to one
//! checked host.

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::Verdict;
use super::proxy::{Gate, connect, reason, splice};

/// Request headers that belong to the hop to the proxy, not forwarded.
const HOP_HEADERS: [&str; 4] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
];

/// Serves one HTTP client whose request head is at most `max_head` bytes.
pub(super) async fn serve(
    mut client: TcpStream,
    gate: &Gate,
    max_head: usize,
) -> std::io::Result<()> {
    let mut buffer = Vec::with_capacity(4096);
    let end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buffer.len() > max_head {
            return answer(&mut client, "431 Request Header Fields Too Large", "").await;
        }
        let mut chunk = [0u8; 4096];
        let read = client.read(&mut chunk).await?;
        if read == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let rest = buffer.split_off(end + 4);
    let Ok(head) = std::str::from_utf8(&buffer[..end]) else {
        return answer(
            &mut client,
            "400 Bad Request",
            "the request head is not UTF-8",
        )
        .await;
    };
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return answer(&mut client, "400 Bad Request", "not an HTTP request line").await;
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = host_port(target, None) else {
            return answer(&mut client, "400 Bad Request", "CONNECT needs host:port").await;
        };
        let Some(mut upstream) = open(&mut client, gate, host, port).await? else {
            return Ok(());
        };
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        upstream.write_all(&rest).await?;
        return splice(client, upstream).await;
    }
    let Some(after) = strip_prefix_ignore_case(target, "http://") else {
        return answer(
            &mut client,
            "400 Bad Request",
            "only CONNECT and http:// requests go through this proxy",
        )
        .await;
    };
    let split = after.find(['/', '?']).unwrap_or(after.len());
    let (authority, path) = after.split_at(split);
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_owned(),
    };
    let Some((host, port)) = host_port(authority, Some(80)) else {
        return answer(&mut client, "400 Bad Request", "no host in the URL").await;
    };
    let Some(mut upstream) = open(&mut client, gate, host, port).await? else {
        return Ok(());
    };
    let mut forwarded = format!("{method} {path} {version}\r\n");
    for line in lines {
        let name = line.split(':').next().unwrap_or_default().trim();
        if !HOP_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            forwarded.push_str(line);
            forwarded.push_str("\r\n");
        }
    }
    forwarded.push_str("Connection: close\r\n\r\n");
    upstream.write_all(forwarded.as_bytes()).await?;
    upstream.write_all(&rest).await?;
    splice(client, upstream).await
}

/// Checks and connects; on a refusal or a failed connect the client is answered (`403`,
/// `502`) and `None` returned.
async fn open(
    client: &mut TcpStream,
    gate: &Gate,
    host: &str,
    port: u16,
) -> std::io::Result<Option<TcpStream>> {
    let verdict = gate.admit(host, port);
    if verdict != Verdict::Allowed {
        let body = format!(
            "harness sandbox: {host}:{port} is not allowed: {}",
            reason(verdict)
        );
        answer(client, "403 Forbidden", &body).await?;
        return Ok(None);
    }
    match connect(host, port).await {
        Ok(upstream) => Ok(Some(upstream)),
        Err(error) => {
            let body = format!("harness sandbox: {host}:{port} could not be reached: {error}");
            answer(client, "502 Bad Gateway", &body).await?;
            Ok(None)
        }
    }
}

/// `host:port` or `[v6]:port` (the port `default` when absent and allowed); the host
/// without brackets.
fn host_port(authority: &str, default: Option<u16>) -> Option<(&str, u16)> {
    if authority.contains('@') {
        return None;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        match after.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if after.is_empty() => (host, None),
            None => return None,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(port) => port.parse().ok().filter(|p| *p != 0)?,
        None => default?,
    };
    (!host.is_empty()).then_some((host, port))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// A complete answer with a text body, then the connection ends.
async fn answer(client: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let body = if body.is_empty() {
        String::new()
    } else {
        format!("{body}\n")
    };
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(text.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::host_port;

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            host_port("example.org:443", None),
            Some(("example.org", 443))
        );
        assert_eq!(
            host_port("example.org", Some(80)),
            Some(("example.org", 80))
        );
        assert_eq!(host_port("example.org", None), None);
        assert_eq!(host_port("[::1]:8080", None), Some(("::1", 8080)));
        assert_eq!(host_port("[::1]", Some(80)), Some(("::1", 80)));
        assert_eq!(host_port("user@example.org:80", None), None);
        assert_eq!(host_port("example.org:0", None), None);
        assert_eq!(host_port(":80", None), None);
    }
}
