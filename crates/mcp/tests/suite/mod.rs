mod delivery;
mod durability;
mod postgres;
mod protocol;
mod resources;
mod support;
mod tools;
mod torture;
