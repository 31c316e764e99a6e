mod kit;
