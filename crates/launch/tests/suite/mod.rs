mod cron;
mod served;
mod support;
