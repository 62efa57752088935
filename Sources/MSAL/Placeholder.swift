// MSAL: placeholder until the module lands.
