// MSALWebAuth: placeholder until the module lands.
