mod grammar;
mod scenario;
