//! [`Refusals`]: the connections of one job that the proxy refused, and their summary line.

use std::sync::Mutex;

/// How many targets the summary line names (the most refused first); the rest are `…`.
const NAMED: usize = 3;

/// The refused connections of one job, by target (`host:port` as the job asked for it), in
/// the order first refused. Shared by the proxy's connections of the job (`&self` methods).
#[derive(Debug, Default)]
pub struct Refusals {
    targets: Mutex<Vec<(String, u64)>>,
}

impl Refusals {
    /// An empty count.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one refused connection to `host` on `port` (an IPv6 address is written in
    /// brackets).
    pub fn refuse(&self, host: &str, port: u16) {
        let target = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let mut targets = self.targets.lock().unwrap_or_else(|e| e.into_inner());
        match targets.iter_mut().find(|(t, _)| *t == target) {
            Some((_, count)) => *count += 1,
            None => targets.push((target, 1)),
        }
    }

    /// How many connections were refused in all.
    pub fn total(&self) -> u64 {
        let targets = self.targets.lock().unwrap_or_else(|e| e.into_inner());
        targets.iter().map(|(_, n)| n).sum()
    }

    /// The line that ends the job's settlement detail and output, `None` when nothing was
    /// refused: `network: 3 connections refused (example.com:443 ×3)`,
    /// `network: 1 connection refused (127.0.0.1:8080)`; targets by count (most first, ties
    /// in the order first refused), at most three named, then `, …`.
    pub fn summary(&self) -> Option<String> {
        let mut targets = self
            .targets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let total: u64 = targets.iter().map(|(_, n)| n).sum();
        if total == 0 {
            return None;
        }
        // A stable sort keeps the first-refused order among equal counts.
        targets.sort_by_key(|t| std::cmp::Reverse(t.1));
        let mut named: Vec<String> = targets
            .iter()
            .take(NAMED)
            .map(|(target, n)| match n {
                1 => target.clone(),
                n => format!("{target} ×{n}"),
            })
            .collect();
        if targets.len() > NAMED {
            named.push("…".to_owned());
        }
        let noun = if total == 1 {
            "connection"
        } else {
            "connections"
        };
        Some(format!(
            "network: {total} {noun} refused ({})",
            named.join(", ")
        ))
    }
}
