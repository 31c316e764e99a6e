mod fixture;
mod install;
mod notices;
mod tools;
