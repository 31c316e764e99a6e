mod support;
mod terminal;
