//! `harness inspect` as an attacker meets it: a rebinding page (foreign `Host`), another
//! site's page (foreign `Origin`) and a local user without the token each try to read a
//! session's page; none gets through. The printed `?token=` URL sets the cookie that opens it.

#![expect(clippy::unwrap_used, reason = "a test stops on failure")]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use pretty_assertions::assert_eq;

/// A running `harness inspect`, killed on drop.
struct Inspect {
    child: Child,
    /// The first line it printed.
    line: String,
}

impl Drop for Inspect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn inspect(dir: &Path, args: &[&str]) -> Inspect {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("inspect")
        .arg("--dir")
        .arg(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    Inspect { child, line }
}

/// A folder with the session `victim` (made by `harness mcp`).
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"todo":{"allowParallelInProgress":false}}"#).unwrap();
    let sessions = dir.path().join("sessions");
    let status = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["mcp", "--session", "victim", "--config"])
        .arg(&config)
        .arg("--dir")
        .arg(&sessions)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "stdin closed before initialize");
    assert!(sessions.join("victim.jsonl").exists());
    dir
}

/// One HTTP/1.1 request with `headers` (after `Host`); the status code and the whole response.
fn get(addr: &str, path: &str, host: &str, headers: &[&str]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    (status, response)
}

/// The `host:port` and the token of the printed `http://host:port/?token=…`.
fn url_parts(line: &str) -> (String, String) {
    let url = line.trim().rsplit(' ').next().unwrap();
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, query) = rest.split_once('/').unwrap();
    let token = query.strip_prefix("?token=").unwrap_or("").to_owned();
    (addr.to_owned(), token)
}

#[test]
fn foreign_hosts_origins_and_missing_tokens_are_refused() {
    let dir = folder();
    let server = inspect(&dir.path().join("sessions"), &[]);
    let (addr, token) = url_parts(&server.line);
    assert_eq!(token.len(), 64, "{}", server.line);
    let cookie = format!("Cookie: harness_inspect_token={token}");
    let bearer = format!("Authorization: bearer {token}");
    let wrong = "Cookie: harness_inspect_token=0000000000000000000000000000000000000000";

    let attacks: [(&str, &str, Vec<&str>, u16); 7] = [
        ("rebinding Host", "attacker.example", vec![&cookie], 403),
        (
            "foreign Origin",
            &addr,
            vec![&cookie, "Origin: http://attacker.example"],
            403,
        ),
        (
            "Origin of another port",
            &addr,
            vec![&cookie, "Origin: http://127.0.0.1:1"],
            403,
        ),
        ("no token", &addr, vec![], 401),
        ("wrong cookie", &addr, vec![wrong], 401),
        ("wrong bearer", &addr, vec!["Authorization: Bearer x"], 401),
        ("wrong query token", &addr, vec![], 401),
    ];
    let mut through = 0;
    for (name, host, headers, status) in &attacks {
        let path = if *name == "wrong query token" {
            "/session/victim?token=1111111111111111"
        } else {
            "/session/victim"
        };
        let (got, response) = get(&addr, path, host, headers);
        assert_eq!((*name, got), (*name, *status), "{response}");
        if response.contains("victim.jsonl") || got == 200 {
            through += 1;
        }
    }
    assert_eq!(through, 0);

    // The printed URL: a cookie (HttpOnly, SameSite=Strict) and a redirect without the token.
    let (status, response) = get(&addr, &format!("/?sort=id&token={token}"), &addr, &[]);
    assert_eq!(status, 303, "{response}");
    assert!(response.contains("location: /?sort=id\r\n"), "{response}");
    assert!(
        response.contains(&format!(
            "set-cookie: harness_inspect_token={token}; HttpOnly; SameSite=Strict; Path=/\r\n"
        )),
        "{response}"
    );
    // With the cookie, or a Bearer header (any case), from a same-origin page: the session.
    let origin = format!("Origin: http://{addr}");
    for headers in [
        vec![cookie.as_str(), origin.as_str()],
        vec![bearer.as_str()],
    ] {
        let (status, response) = get(&addr, "/session/victim", &addr, &headers);
        assert_eq!(status, 200, "{response}");
        assert!(response.contains("victim"), "{response}");
    }
    let localhost = addr.replace("127.0.0.1", "localhost");
    assert_eq!(get(&addr, "/", &localhost, &[&cookie]).0, 200);
}

#[test]
fn a_token_file_or_no_auth_on_loopback_only() {
    let dir = folder();
    let sessions = dir.path().join("sessions");
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "# limited: refused by the inspector\nlimited-token-0123456789 ci-\nteam-token-0123456789\n",
    )
    .unwrap();
    let server = inspect(&sessions, &["--token-file", tokens.to_str().unwrap()]);
    let (addr, token) = url_parts(&server.line);
    assert_eq!(token, "");
    let team = "Authorization: Bearer team-token-0123456789";
    let limited = "Authorization: Bearer limited-token-0123456789";
    assert_eq!(get(&addr, "/session/victim", &addr, &[team]).0, 200);
    assert_eq!(get(&addr, "/session/victim", &addr, &[limited]).0, 401);
    drop(server);

    // Open on loopback: Host and Origin are still checked.
    let server = inspect(&sessions, &["--no-auth"]);
    let (addr, _) = url_parts(&server.line);
    assert_eq!(get(&addr, "/session/victim", &addr, &[]).0, 200);
    assert_eq!(
        get(&addr, "/session/victim", "attacker.example", &[]).0,
        403
    );
    drop(server);

    // Open on every interface: refused, saying why.
    let output = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("inspect")
        .arg("--dir")
        .arg(&sessions)
        .args(["--addr", "0.0.0.0:0", "--no-auth"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "harness: 0.0.0.0:0 is not a loopback address: serving it without a token would show \
         every session to anyone who reaches it; drop --no-auth (a token is generated) or give \
         --token-file\n"
    );
}

#[test]
fn the_token_file_is_read_as_the_server_reads_it() {
    let dir = folder();
    let sessions = dir.path().join("sessions");
    let refuse = |text: &str| {
        let tokens = dir.path().join("tokens");
        std::fs::write(&tokens, text).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_harness"))
            .arg("inspect")
            .arg("--dir")
            .arg(&sessions)
            .arg("--token-file")
            .arg(&tokens)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        String::from_utf8(output.stderr).unwrap()
    };
    // A line `harness mcp` refuses is refused here too, with the server's words.
    assert_eq!(
        refuse("team-token-0123456789\nshort\n"),
        "harness: token file line 2: a token is at least 16 characters\n"
    );
    assert_eq!(
        refuse("team-token-0123456789 ci/\n"),
        "harness: token file line 1: the prefix \"ci/\" is not made of session id characters \
         (A-Z a-z 0-9 . _ -)\n"
    );
    let only_limited = refuse("limited-token-0123456789 ci-\n");
    assert!(
        only_limited.ends_with(
            "tokens holds no token without session prefixes (the inspector shows every \
             session, so it takes an unlimited token only)\n"
        ),
        "{only_limited}"
    );
}
