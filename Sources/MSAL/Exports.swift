// The facade's API is written in MSALCore's vocabulary (Authority, Account, MSALError, ScopeSet,
// IDTokenClaims), so `import MSAL` brings it along: an app needs one import for the common case.
@_exported public import MSALCore
// Interactive sign-in's parameters use MSALWebAuth's `Prompt` and `BrowserLauncher`.
@_exported public import MSALWebAuth
// The configuration takes a cache store (`TokenCacheStore`), legacy caches (`ADALPythonTokenCache`,
// `ADALKeyedItemStore`) and an encrypted file's key (`EncryptedCacheKey`): MSALCache's and
// MSALCacheEncryptedFile's vocabulary comes along too (both are linked by MSAL anyway).
@_exported public import MSALCache
@_exported public import MSALCacheEncryptedFile
