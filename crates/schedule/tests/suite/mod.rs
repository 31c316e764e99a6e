mod cron;
mod fixture;
mod plugin;
mod restart;
mod runtime;
mod tools;
