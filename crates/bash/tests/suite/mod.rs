mod cgroup_folders;
mod contain;
mod process;
mod spill;
mod support;
mod tool;
