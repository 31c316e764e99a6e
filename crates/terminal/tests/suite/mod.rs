mod catalog;
mod support;
mod terminal;
