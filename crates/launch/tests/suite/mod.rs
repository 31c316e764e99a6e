mod cron;
mod support;
