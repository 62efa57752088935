internal import Foundation
internal import MSALCore

/// Turns an endpoint's ``HTTPResponse`` into a JSON object or into the ``MSALError`` it means.
///
/// Sources: RFC 6749 §5.1–5.2 (JSON bodies, the `error` fields), Entra ID's extra error fields
/// (`suberror`, `error_codes`, `correlation_id`), and what real providers do wrong (Glewlwyd answers
/// a bad refresh token with HTTP 400 and an empty body; proxies answer with HTML pages).
enum ServerResponse {
    /// The OAuth `error` values that mean the user must sign in again (as MSAL for iOS/macOS maps
    /// them to `MSALErrorInteractionRequired`).
    static let interactionRequiredErrors: Set<String> = [
        "invalid_grant", "interaction_required", "login_required", "consent_required",
    ]

    /// Decodes the body as a JSON object and throws when the response is an error.
    ///
    /// - Parameters:
    ///   - response: what the endpoint answered.
    ///   - endpoint: how messages name the endpoint, e.g. `token endpoint`.
    ///   - host: the endpoint's host, for messages (read only when one is made).
    ///   - requestCorrelationID: the `client-request-id` that was sent, the last fallback for
    ///     ``MSALError/correlationID``.
    ///   - now: when the response arrived; the reference for an HTTP-date `Retry-After` when the
    ///     response has no `Date` header.
    /// - Returns: the JSON object of a 2xx response without an `error` field.
    /// - Throws: an ``MSALError`` with the OAuth fields when the body has an `error` (code
    ///   `.interactionRequired` for ``interactionRequiredErrors``, `.serverError` otherwise);
    ///   `.serverError` with internal code `.invalidResponse` when the body is empty, HTML, not JSON,
    ///   not an object, or a non-2xx answer without `error`. The message never quotes the body.
    ///   A non-2xx error carries the delay of a valid `Retry-After` header in
    ///   ``MSALError/retryAfter`` (RFC 9110 §10.2.3; see ``RetryAfter``).
    static func jsonObject(
        _ response: HTTPResponse,
        endpoint: String,
        host: @autoclosure () -> String,
        requestCorrelationID: String?,
        now: Date = Date()
    ) throws(MSALError) -> [String: JSONValue] {
        let fallbackCorrelationID = fallbackCorrelationID(response, requestCorrelationID: requestCorrelationID)
        let status = response.statusCode
        let retryAfter = response.isSuccess ? nil : RetryAfter.seconds(in: response, now: now)

        func invalid(_ what: String) -> MSALError {
            MSALError(
                .serverError, internalCode: .invalidResponse,
                message: "The \(endpoint) (\(host())) answered HTTP \(status) \(what).",
                correlationID: fallbackCorrelationID, httpStatusCode: status, retryAfter: retryAfter
            )
        }

        let trimmed = response.body.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        if trimmed.isEmpty { throw invalid("with an empty body") }
        if declaresHTML(response) || trimmed.first == UInt8(ascii: "<") {
            throw invalid("with an HTML page instead of JSON")
        }
        guard let value = JSONValue(parsing: response.body) else { throw invalid("with a body that is not JSON") }
        guard let object = value.objectValue else { throw invalid("with JSON that is not an object") }

        if let oauthError = object["error"]?.stringValue, !oauthError.isEmpty {
            // A server should never echo a token in its error; if one does, it is redacted here.
            let description = object["error_description"]?.stringValue.map(MSALError.redactingTokens)
            let code: MSALError.Code = interactionRequiredErrors.contains(oauthError) ? .interactionRequired : .serverError
            var message = "The \(endpoint) (\(host())) answered HTTP \(status) with error '\(oauthError)'"
            if let description, !description.isEmpty {
                message += ": " + (description.count > 500 ? String(description.prefix(500)) + "…" : description)
            } else {
                message += "."
            }
            throw MSALError(
                code,
                message: message,
                oauthError: oauthError,
                oauthErrorDescription: description,
                subError: object["suberror"]?.stringValue,
                errorCodes: (object["error_codes"]?.arrayValue ?? []).compactMap { $0.doubleValue.map { Int($0) } },
                correlationID: object["correlation_id"]?.stringValue ?? fallbackCorrelationID,
                httpStatusCode: status,
                retryAfter: retryAfter
            )
        }
        guard response.isSuccess else { throw invalid("with JSON that has no 'error' field") }
        return object
    }

    /// The correlation ID of a successful response: the body's `correlation_id`, else the
    /// `client-request-id` response header, else the one that was sent.
    static func correlationID(_ object: [String: JSONValue], _ response: HTTPResponse, requestCorrelationID: String?) -> String? {
        object["correlation_id"]?.stringValue ?? fallbackCorrelationID(response, requestCorrelationID: requestCorrelationID)
    }

    /// The correlation ID of a response whose body has none: the `client-request-id` response
    /// header when not empty, else the one that was sent.
    static func fallbackCorrelationID(_ response: HTTPResponse, requestCorrelationID: String?) -> String? {
        response.header("client-request-id").flatMap { $0.isEmpty ? nil : $0 } ?? requestCorrelationID
    }

    /// Whether the response says it is an HTML page (`Content-Type` `text/html`, any case).
    static func declaresHTML(_ response: HTTPResponse) -> Bool {
        response.header("content-type")?.lowercased().containsBytes(of: "text/html") ?? false
    }

    /// A missing or malformed field of a 2xx answer.
    static func missingField(_ field: String, endpoint: String, host: String, status: Int, correlationID: String?) -> MSALError {
        MSALError(
            .serverError, internalCode: .invalidResponse,
            message: "The \(endpoint) (\(host)) answered HTTP \(status) without a valid '\(field)'.",
            correlationID: correlationID, httpStatusCode: status
        )
    }
}

extension [String: JSONValue] {
    /// A non-empty string field.
    func string(_ key: String) -> String? {
        guard let value = self[key]?.stringValue, !value.isEmpty else { return nil }
        return value
    }

    /// A number field, also when sent as a string (`"3600"`).
    func seconds(_ key: String) -> TimeInterval? {
        guard let value = self[key]?.doubleValue, value.isFinite else { return nil }
        return value
    }

    /// An absolute `http(s)` URL field.
    func url(_ key: String) -> URL? {
        guard let string = string(key), let url = URL(string: string),
              let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host != nil
        else { return nil }
        return url
    }

    /// An array-of-strings field; non-strings are skipped.
    func strings(_ key: String) -> [String]? {
        self[key]?.arrayValue?.compactMap(\.stringValue)
    }
}
