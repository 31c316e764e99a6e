//! [`Network`]: the configuration key `sandbox.network` (off, on, or by name).

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::NetworkPolicy;

/// What a confined job may reach on the network (configuration key `sandbox.network`).
///
/// JSON: `false` ([`Network::Off`], the default), `true` ([`Network::On`]), a list of host
/// names (`["crates.io", "*.github.com"]`: [`Network::ByName`] allowing them on every port),
/// or a [`NetworkPolicy`] object (`{"allow": […], "deny": […], "ports": […]}`). Anything
/// else is refused with the message `invalid type: …, expected false, true, a list of host
/// names or {"allow": […], "deny": […], "ports": […]}`; the entries are checked by
/// [`NetworkPolicy::validate`].
///
/// ```
/// use turnkit_bash::{Network, NetworkPolicy};
/// let by_name: Network = serde_json::from_value(serde_json::json!(["localhost"])).unwrap();
/// assert_eq!(by_name, Network::ByName(NetworkPolicy::allowing(["localhost"])));
/// let off: Network = serde_json::from_value(serde_json::json!(false)).unwrap();
/// assert_eq!(off, Network::Off);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Network {
    /// No network: a namespace of the job's own with only its loopback.
    #[default]
    Off,
    /// The host's network, unfiltered.
    On,
    /// The job's own namespace, whose only way out is the server's proxy (HTTP and
    /// SOCKS5), which lets through only the connections this policy allows.
    ByName(NetworkPolicy),
}

impl Network {
    /// The policy of [`Network::ByName`], `None` otherwise.
    pub fn policy(&self) -> Option<&NetworkPolicy> {
        match self {
            Self::ByName(policy) => Some(policy),
            Self::Off | Self::On => None,
        }
    }

    /// Whether the job gets a network namespace of its own (off and by name).
    pub fn isolated(&self) -> bool {
        !matches!(self, Self::On)
    }
}

impl Serialize for Network {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Off => serializer.serialize_bool(false),
            Self::On => serializer.serialize_bool(true),
            Self::ByName(policy) => policy.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NetworkVisitor)
    }
}

struct NetworkVisitor;

impl<'de> Visitor<'de> for NetworkVisitor {
    type Value = Network;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "false, true, a list of host names or {\"allow\": […], \"deny\": […], \"ports\": […]}",
        )
    }

    fn visit_bool<E: de::Error>(self, on: bool) -> Result<Network, E> {
        Ok(if on { Network::On } else { Network::Off })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Network, A::Error> {
        let names = Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Network::ByName(NetworkPolicy::allowing(names)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Network, A::Error> {
        NetworkPolicy::deserialize(de::value::MapAccessDeserializer::new(map)).map(Network::ByName)
    }
}
