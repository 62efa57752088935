// MSALCacheEncryptedFile: being built (issue 5).
