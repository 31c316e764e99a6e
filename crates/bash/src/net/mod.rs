//! Network by name: the policy a confined job's connections are checked against
//! ([`NetworkPolicy`]: host names with `*.` wildcards, a deny-list that wins, ports) and the
//! per-job count of what was refused ([`Refusals`], whose [`Refusals::summary`] is the line
//! that ends a job's settlement detail and its output).
//!
//! One topic per file: `policy` (the names and ports allowed), `refusals` (the count and its
//! line).

mod policy;
mod refusals;

pub use policy::{HostPattern, NetworkPolicy, Verdict};
pub use refusals::Refusals;

#[cfg(test)]
mod tests;
