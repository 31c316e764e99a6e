mod config;
mod support;
mod tool;
mod unsaved;
