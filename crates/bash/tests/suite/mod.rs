mod cgroup_folders;
mod contain;
mod journal_leftovers;
mod process;
mod sandbox;
mod spill;
mod support;
mod tool;
