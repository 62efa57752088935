extension UInt8 {
    /// This byte with an ASCII capital letter (`A`–`Z`) turned into its small letter; any other byte
    /// unchanged. What identifiers, hosts, header names and scopes are compared and keyed by
    /// (MSAL's cache keys are lowercase; RFC 9110 §5.1 header names are case-insensitive ASCII).
    package var asciiLowercased: UInt8 {
        self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z") ? self | 0x20 : self
    }
}
