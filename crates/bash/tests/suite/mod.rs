mod process;
mod support;
