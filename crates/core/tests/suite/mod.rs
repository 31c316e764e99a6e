mod echo;
mod registry;
mod store;
mod store_process;
