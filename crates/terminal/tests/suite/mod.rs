mod catalog;
mod saved_start;
mod support;
mod tasks;
mod terminal;
mod walls;
