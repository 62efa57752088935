print("msal: not yet implemented")
