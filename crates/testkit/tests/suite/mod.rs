mod conformance;
mod host;
mod store_conformance;
