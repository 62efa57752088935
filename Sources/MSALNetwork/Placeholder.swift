// MSALNetwork: placeholder until the module lands.
