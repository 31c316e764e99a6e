mod conformance;
mod host;
mod scenario;
mod store_conformance;
