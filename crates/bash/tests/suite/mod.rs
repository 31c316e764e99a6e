mod process;
mod support;
mod tool;
