// MSALCacheSQLite: placeholder until the module lands.
