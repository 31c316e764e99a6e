mod bad_input;
mod host;
