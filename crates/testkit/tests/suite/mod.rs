mod conformance;
mod host;
mod scenario;
