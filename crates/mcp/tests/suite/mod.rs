mod delivery;
mod jobs_restart;
mod postgres;
mod protocol;
mod resources;
mod support;
mod tools;
