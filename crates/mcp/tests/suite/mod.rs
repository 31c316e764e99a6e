mod delivery;
mod postgres;
mod protocol;
mod resources;
mod support;
mod tools;
