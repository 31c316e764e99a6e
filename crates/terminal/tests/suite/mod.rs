mod catalog;
mod support;
mod tasks;
mod terminal;
mod walls;
