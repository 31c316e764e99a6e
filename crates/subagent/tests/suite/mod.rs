mod config;
mod support;
mod tool;
