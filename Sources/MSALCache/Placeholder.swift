// MSALCache: placeholder until the module lands.
