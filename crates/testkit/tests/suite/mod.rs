mod host;
mod scenario;
