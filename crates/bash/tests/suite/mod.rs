mod cgroup_folders;
mod contain;
mod process;
mod sandbox;
mod spill;
mod support;
mod tool;
