//! SOCKS5 (RFC 1928) of the proxy: no authentication, the `CONNECT` command only; the name
//! (or address) the client sent is checked before anything is resolved.

use std::net::{Ipv4Addr, Ipv6Addr};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::Verdict;
use super::proxy::{Gate, connect, splice};

/// Reply codes (RFC 1928 §6).
const SUCCEEDED: u8 = 0;
const GENERAL_FAILURE: u8 = 1;
const NOT_ALLOWED: u8 = 2;
const NETWORK_UNREACHABLE: u8 = 3;
const HOST_UNREACHABLE: u8 = 4;
const CONNECTION_REFUSED: u8 = 5;
const COMMAND_NOT_SUPPORTED: u8 = 7;
const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 8;

/// Serves one SOCKS5 client.
pub(super) async fn serve(mut client: TcpStream, gate: &Gate) -> std::io::Result<()> {
    let mut greeting = [0u8; 2];
    client.read_exact(&mut greeting).await?;
    let mut methods = vec![0u8; usize::from(greeting[1])];
    client.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        // No acceptable method.
        return client.write_all(&[5, 0xFF]).await;
    }
    client.write_all(&[5, 0]).await?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    let host = match request[3] {
        1 => {
            let mut octets = [0u8; 4];
            client.read_exact(&mut octets).await?;
            Ipv4Addr::from(octets).to_string()
        }
        3 => {
            let length = client.read_u8().await?;
            let mut name = vec![0u8; usize::from(length)];
            client.read_exact(&mut name).await?;
            match String::from_utf8(name) {
                Ok(name) => name,
                Err(_) => return reply(&mut client, GENERAL_FAILURE).await,
            }
        }
        4 => {
            let mut octets = [0u8; 16];
            client.read_exact(&mut octets).await?;
            Ipv6Addr::from(octets).to_string()
        }
        _ => return reply(&mut client, ADDRESS_TYPE_NOT_SUPPORTED).await,
    };
    let port = client.read_u16().await?;
    if request[1] != 1 {
        return reply(&mut client, COMMAND_NOT_SUPPORTED).await;
    }
    if gate.admit(&host, port) != Verdict::Allowed {
        return reply(&mut client, NOT_ALLOWED).await;
    }
    let upstream = match connect(&host, port).await {
        Ok(upstream) => upstream,
        Err(error) => {
            let code = match error.kind() {
                std::io::ErrorKind::ConnectionRefused => CONNECTION_REFUSED,
                std::io::ErrorKind::NetworkUnreachable => NETWORK_UNREACHABLE,
                _ => HOST_UNREACHABLE,
            };
            return reply(&mut client, code).await;
        }
    };
    reply(&mut client, SUCCEEDED).await?;
    splice(client, upstream).await
}

/// A reply with an unspecified bound address (`0.0.0.0:0`).
async fn reply(client: &mut TcpStream, code: u8) -> std::io::Result<()> {
    client.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await
}
