//! [`NetworkPolicy`]: which host names and ports a confined job may connect to.

use serde::{Deserialize, Serialize};

/// One entry of an allow- or deny-list: an exact host name or address (`localhost`,
/// `crates.io`, `127.0.0.1`), or `*.` followed by a host name, which matches every name
/// below it (`*.example.org` matches `a.example.org` and `a.b.example.org`, not
/// `example.org` itself). Names compare without case and without a trailing dot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPattern {
    /// This name (lower case, no trailing dot) and nothing else.
    Exact(String),
    /// Every name ending in `.` and this suffix (lower case, no trailing dot).
    Below(String),
}

impl HostPattern {
    /// Parses one entry; `None` when it is neither a host name, an IP address, nor `*.`
    /// and a host name.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim_end_matches('.').to_ascii_lowercase();
        match text.strip_prefix("*.") {
            Some(suffix) => is_host_name(suffix).then(|| Self::Below(suffix.to_owned())),
            None if is_host_name(&text) || text.parse::<std::net::IpAddr>().is_ok() => {
                Some(Self::Exact(text))
            }
            None => None,
        }
    }

    /// Whether `host` (as [`normalize`]d) is matched.
    fn matches(&self, host: &str) -> bool {
        match self {
            Self::Exact(name) => host == name,
            Self::Below(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

/// Lower case, without the brackets of an IPv6 literal and without a trailing dot.
fn normalize(host: &str) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Labels of letters, digits, `-` and `_` (1-63 bytes, no leading or trailing `-`), joined by
/// dots, at most 253 bytes.
fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// What the policy says of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The name is allowed, not denied, and the port is allowed.
    Allowed,
    /// The name matches no allow-list entry.
    NotAllowed,
    /// The name matches a deny-list entry (which wins over any allow-list entry).
    Denied,
    /// The name is allowed but the port is not in `ports`.
    PortNotAllowed,
}

/// The host names and ports a confined job may connect to through the server's proxy
/// (configuration `sandbox.network` given as an object, JSON keys `allow`, `deny`, `ports`;
/// unknown keys are refused). `allow`: the [`HostPattern`]s a connection's name must match
/// (at least one entry); `deny`: patterns that refuse a name even when it is allowed;
/// `ports`: when non-empty, the only destination ports allowed (1-65535), otherwise every
/// port is. A connection is checked by the name the job asked for, before any name
/// resolution: an address is allowed only when listed as such.
///
/// ```
/// use turnkit_bash::{NetworkPolicy, Verdict};
/// let policy: NetworkPolicy = serde_json::from_value(serde_json::json!({
///     "allow": ["*.example.org"], "deny": ["secret.example.org"], "ports": [443]
/// })).unwrap();
/// assert_eq!(policy.validate(), Ok(()));
/// assert_eq!(policy.check("docs.example.org", 443), Verdict::Allowed);
/// assert_eq!(policy.check("secret.example.org", 443), Verdict::Denied);
/// assert_eq!(policy.check("docs.example.org", 80), Verdict::PortNotAllowed);
/// assert_eq!(policy.check("example.org", 443), Verdict::NotAllowed);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct NetworkPolicy {
    /// The names a connection may go to ([`HostPattern`] text).
    pub allow: Vec<String>,
    /// The names refused even when allowed ([`HostPattern`] text).
    pub deny: Vec<String>,
    /// When non-empty, the only destination ports allowed.
    pub ports: Vec<u16>,
}

impl NetworkPolicy {
    /// A policy allowing these names on every port, denying nothing.
    pub fn allowing<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            allow: names.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Checks the entries; the message names the key, e.g.
    /// `sandbox.network.allow: "exa mple.org" is not a host name, an address or *.name`.
    ///
    /// # Errors
    /// The message, without the plugin prefix.
    pub fn validate(&self) -> Result<(), String> {
        if self.allow.is_empty() {
            return Err(
                "sandbox.network.allow: no host names (use \"network\": false for no network)"
                    .to_owned(),
            );
        }
        for (key, entries) in [("allow", &self.allow), ("deny", &self.deny)] {
            if let Some(bad) = entries.iter().find(|e| HostPattern::parse(e).is_none()) {
                return Err(format!(
                    "sandbox.network.{key}: {bad:?} is not a host name, an address or *.name"
                ));
            }
        }
        if self.ports.contains(&0) {
            return Err("sandbox.network.ports: 0 is not a port (1-65535)".to_owned());
        }
        Ok(())
    }

    /// What the policy says of a connection to `host` (a name or an address as the job gave
    /// it, IPv6 with or without brackets) on `port`. An entry that does not parse matches
    /// nothing (see [`NetworkPolicy::validate`]).
    pub fn check(&self, host: &str, port: u16) -> Verdict {
        let host = normalize(host);
        let any = |entries: &[String]| {
            entries
                .iter()
                .filter_map(|e| HostPattern::parse(e))
                .any(|p| p.matches(&host))
        };
        if any(&self.deny) {
            Verdict::Denied
        } else if !any(&self.allow) {
            Verdict::NotAllowed
        } else if !self.ports.is_empty() && !self.ports.contains(&port) {
            Verdict::PortNotAllowed
        } else {
            Verdict::Allowed
        }
    }
}
