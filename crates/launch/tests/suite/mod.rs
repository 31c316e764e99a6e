mod bounds;
mod cron;
mod served;
mod support;
