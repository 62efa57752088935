// MSALTestSupport: placeholder until the module lands.
