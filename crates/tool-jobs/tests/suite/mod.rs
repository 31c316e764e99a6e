mod fixture;
mod install;
mod journal_kill;
mod notices;
mod running_notices;
mod tools;
