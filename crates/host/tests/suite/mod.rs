mod kit;
mod turns;
