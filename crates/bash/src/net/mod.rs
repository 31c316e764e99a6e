//! Network by name: the policy a confined job's connections are checked against
//! ([`NetworkPolicy`]: host names with `*.` wildcards, a deny-list that wins, ports) and the
//! per-job count of what was refused ([`Refusals`], whose [`Refusals::summary`] is the line
//! that ends a job's settlement detail and its output).
//!
//! One topic per file: `mode` ([`Network`], the configuration key), `policy` (the names and ports allowed), `refusals` (the count and its
//! line), `proxy` (the server's proxy: the accept loop and the checks), `http` and `socks`
//! (its two protocols), `relay` (the copy between the two sockets, by `splice`).

mod http;
mod mode;
mod policy;
mod proxy;
mod refusals;
mod relay;
mod socks;

pub use mode::Network;
pub use policy::{HostPattern, NetworkPolicy, Verdict};
pub(crate) use proxy::{Gate, PROXY_PORT, proxy_env, serve};
pub use refusals::Refusals;

#[cfg(test)]
mod tests;
