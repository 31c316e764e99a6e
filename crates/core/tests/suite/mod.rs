mod registry;
mod store;
