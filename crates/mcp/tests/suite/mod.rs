mod delivery;
mod protocol;
mod resources;
mod support;
mod tools;
