mod contain;
mod process;
mod support;
mod tool;
