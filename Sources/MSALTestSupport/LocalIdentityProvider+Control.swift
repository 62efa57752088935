import Foundation
import MSALCore
import MSALWebAuth
import Synchronization

// The control API: JSON endpoints under `/_control/` that play the person and the test, for
// `msal dev-provider`. Documented in Docs/DevProvider.md.

extension LocalIdentityProvider {
    /// Whether the control API answers under `/_control/` on the provider's own port. Default
    /// `false`: those paths are unknown (404), as on Entra. `msal dev-provider` turns it on.
    ///
    /// The API is as reachable as the provider: loopback only. It refuses (403) a request whose
    /// `Host` is not a loopback name, against DNS rebinding, and one whose `Origin` is not a
    /// loopback origin, so a web page cannot drive it. Endpoints (JSON in and out; errors are
    /// `{"error": "<message>"}` with status 400, 404 or 405):
    /// - `GET /_control/device/pending` → `{"user_codes": [...]}`,
    /// - `POST /_control/device/approve {"user_code", "username"?}`,
    /// - `POST /_control/device/deny {"user_code"}`,
    /// - `POST /_control/authorize/next-action {"action": "signIn|pickAccount|denyConsent|cancel", "username"?}`,
    /// - `POST /_control/authorize/sign-in {"url", "username"?}` → `{"location": ...}`,
    /// - `POST /_control/fail-next {"count"?, "kind": "oauth|status|empty|html|throttled|declined", ...}`,
    /// - `POST /_control/users {"username", "tenant_id"?, "object_id"?, "name"?}`,
    /// - `POST /_control/legacy/refresh-token {"username"?, "client_id"?, "resource"?, "tenant"?}` →
    ///   `{"adal_entry": {...}, "adal_keyed_item": {...}}`, an ADAL for Python cache entry (and the keyed item of ADAL for iOS/macOS) with a refresh token the v2.0
    ///   endpoint redeems (``issueLegacyRefreshToken(username:clientID:resource:tenant:)``),
    /// - `POST /_control/revoke {"username"? | "refresh_token"?}` → `{"revoked": n}`,
    /// - `GET /_control/requests` → `{"requests": [...]}`, secrets redacted,
    /// - `POST /_control/reset`.
    public var isControlAPIEnabled: Bool {
        get { state.withLock { $0.controlAPIEnabled } }
        set { state.withLock { $0.controlAPIEnabled = newValue } }
    }

    func control(_ request: HTTPServerRequest, _ context: RequestContext) -> HTTPServerResponse {
        guard LocalIdentityProvider.isLoopbackHost(request.headers["host"]) else {
            return controlError("The control API answers only requests whose Host is 127.0.0.1, localhost or [::1].", status: 403)
        }
        if let origin = request.headers["origin"], !LocalIdentityProvider.isLoopbackOrigin(origin) {
            return controlError("The control API does not answer web pages from other origins ('\(origin)').", status: 403)
        }
        let route = String(request.path.dropFirst("/_control".count))
        let getRoutes: Set<String> = ["/requests", "/device/pending"]
        let postRoutes: Set<String> = [
            "/device/approve", "/device/deny", "/authorize/next-action", "/authorize/sign-in", "/fail-next", "/users", "/reset",
        ]
        if getRoutes.contains(route) {
            guard request.method == "GET" || request.method == "HEAD" else { return methodNotAllowed("GET") }
        } else if postRoutes.contains(route) || LocalIdentityProvider.legacyControlRoutes.contains(route) {
            guard request.method == "POST" else { return methodNotAllowed("POST") }
        } else {
            return controlError("No control endpoint at \(request.path).", status: 404)
        }
        var body: [String: JSONValue] = [:]
        if request.method == "POST", !request.body.isEmpty {
            guard let object = (try? JSONDecoder().decode(JSONValue.self, from: request.body))?.objectValue else {
                return controlError("The body must be a JSON object.", status: 400)
            }
            body = object
        }
        do throws(MSALError) {
            switch route {
            case _ where LocalIdentityProvider.legacyControlRoutes.contains(route):
                return .json(try legacyControl(route, body))
            case "/requests":
                return .json(["requests": .array(requests.map { LocalIdentityProvider.json($0.redacted()) })])
            case "/device/pending":
                return .json(["user_codes": .array(pendingUserCodes.map(JSONValue.string))])
            case "/device/approve":
                let userCode = try required("user_code", body)
                guard let username = body["username"]?.stringValue ?? defaultUsername else {
                    throw .internal(.invalidParameter, "'username' is required: the provider has no default user.")
                }
                try approveDeviceCode(userCode: userCode, as: username)
                return .json(["approved": .string(userCode.uppercased()), "username": .string(username.lowercased())])
            case "/device/deny":
                let userCode = try required("user_code", body)
                try denyDeviceCode(userCode: userCode)
                return .json(["denied": .string(userCode.uppercased())])
            case "/authorize/next-action":
                let action = try userAction(body)
                setNextUserAction(action)
                return .json(["next_action": .string(try required("action", body))])
            case "/authorize/sign-in":
                return try signInWithoutBrowser(body, context)
            case "/fail-next":
                return try failNext(body)
            case "/users":
                let username = try required("username", body)
                if users.contains(where: { $0.username.lowercased() == username.lowercased() }) {
                    return controlError("A user '\(username)' exists already; usernames are unique.", status: 409)
                }
                let tenantID = body["tenant_id"]?.stringValue ?? users.first?.tenantID ?? LocalIdentityProvider.demoTenantID
                let objectID = body["object_id"]?.stringValue ?? UUID().uuidString.lowercased()
                let name = body["name"]?.stringValue ?? username
                addUser(User(username: username, objectID: objectID, tenantID: tenantID, name: name))
                return .json([
                    "username": .string(username), "object_id": .string(objectID), "tenant_id": .string(tenantID), "name": .string(name),
                ])
            default:  // "/reset"
                reset()
                return .json(["reset": .bool(true)])
            }
        } catch {
            return controlError(error.message, status: 400)
        }
    }

    // MARK: - Endpoints

    /// Plays the browser: sends the authorize URL to the authorize endpoint in-process (recorded
    /// like any request) and returns the redirect's `Location`.
    private func signInWithoutBrowser(_ body: [String: JSONValue], _ context: RequestContext) throws(MSALError) -> HTTPServerResponse {
        let url = try required("url", body)
        guard let components = URLComponents(string: url),
              LocalIdentityProvider.endpoint(forPath: components.percentEncodedPath.removingPercentEncoding ?? "") == .authorize
        else {
            throw .internal(.invalidParameter, "'url' must be an authorize URL of this provider (…/{tenant}/oauth2/v2.0/authorize?…).")
        }
        if let username = body["username"]?.stringValue { setNextUserAction(.signIn(username: username)) }
        let path = components.percentEncodedPath.removingPercentEncoding ?? components.percentEncodedPath
        let query = components.percentEncodedQuery ?? ""
        let synthetic = HTTPServerRequest(
            method: "GET", target: components.percentEncodedPath + (query.isEmpty ? "" : "?\(query)"), path: path,
            queryItems: LocalIdentityProvider.formDecoded(query),
            headers: ["host": String(context.base.dropFirst("http://".count)), "user-agent": "msal-dev-provider-control"])
        let response = handle(synthetic)
        guard response.status == 302, let location = response.headers["Location"] else {
            let page = String(decoding: response.body, as: UTF8.self)
            let message = LocalIdentityProvider.errorText(inPage: page) ?? "The authorize endpoint answered \(response.status) without a redirect."
            return .json(["error": .string(message), "status": .number(Double(response.status))], status: 409)
        }
        return .json(["location": .string(location)])
    }

    private func failNext(_ body: [String: JSONValue]) throws(MSALError) -> HTTPServerResponse {
        let count = Int(body["count"]?.doubleValue ?? 1)
        guard count >= 1 else { throw .internal(.invalidParameter, "'count' must be 1 or more.") }
        let kind = try required("kind", body)
        let status = body["status"]?.doubleValue.map { Int($0) }
        if let status, !(100...599).contains(status) { throw .internal(.invalidParameter, "'status' must be an HTTP status code.") }
        let failure: Failure
        switch kind {
        case "oauth":
            let subError = body["suberror"]?.stringValue
            if let subError, let known = SubError(rawValue: subError), body["error"] == nil, body["error_codes"] == nil {
                failure = .oauthError(
                    error: known.error, subError: subError, description: body["description"]?.stringValue,
                    errorCodes: [known.code], status: status ?? 400)
            } else {
                let codes = (body["error_codes"]?.arrayValue ?? []).compactMap { $0.doubleValue.map { Int($0) } }
                failure = .oauthError(
                    error: try required("error", body), subError: subError, description: body["description"]?.stringValue,
                    errorCodes: codes, status: status ?? 400)
            }
        case "status": failure = .serverError(status: status ?? 500)
        case "empty": failure = .emptyBody(status: status ?? 200)
        case "html": failure = .html(status: status ?? 502)
        case "throttled":
            failure = .throttled(status: status ?? 429, retryAfter: body["retry_after"]?.stringValue
                ?? body["retry_after"]?.doubleValue.map { String(Int($0)) } ?? "5")
        case "declined":
            let scopes = (body["scopes"]?.arrayValue ?? []).compactMap(\.stringValue)
            guard !scopes.isEmpty else { throw .internal(.invalidParameter, "'scopes' must list the scopes to leave out.") }
            declineScopesInNextTokenResponses(scopes, count: count)
            return .json(["queued": .number(Double(count)), "kind": .string(kind)])
        default:
            throw .internal(.invalidParameter, "'kind' must be oauth, status, empty, html, throttled or declined, not '\(kind)'.")
        }
        failNextTokenRequests(with: failure, count: count)
        return .json(["queued": .number(Double(count)), "kind": .string(kind)])
    }

    private func userAction(_ body: [String: JSONValue]) throws(MSALError) -> UserAction {
        let action = try required("action", body)
        func username() throws(MSALError) -> String {
            guard let name = body["username"]?.stringValue ?? defaultUsername else {
                throw .internal(.invalidParameter, "'username' is required: the provider has no default user.")
            }
            return name
        }
        switch action {
        case "signIn": return .signIn(username: try username())
        case "pickAccount": return .pickAccount(username: try username())
        case "denyConsent": return .denyConsent
        case "cancel": return .cancel
        default: throw .internal(.invalidParameter, "'action' must be signIn, pickAccount, denyConsent or cancel, not '\(action)'.")
        }
    }

    // MARK: - Helpers

    private func required(_ key: String, _ body: [String: JSONValue]) throws(MSALError) -> String {
        guard let value = body[key]?.stringValue, !value.isEmpty else {
            throw .internal(.invalidParameter, "'\(key)' is required (a non-empty string).")
        }
        return value
    }

    private func controlError(_ message: String, status: Int) -> HTTPServerResponse {
        .json(["error": .string(message)], status: status)
    }

    private func methodNotAllowed(_ allowed: String) -> HTTPServerResponse {
        var response = controlError("Use \(allowed) here.", status: 405)
        response.headers["Allow"] = allowed
        return response
    }

    /// A recorded request as the control API shows it.
    static func json(_ request: RecordedRequest) -> JSONValue {
        var object: [String: JSONValue] = [
            "method": .string(request.method),
            "path": .string(request.path),
            "endpoint": .string(request.endpoint.rawValue),
            "parameters": .object(request.formParameters.mapValues(JSONValue.string)),
            "headers": .object(request.headers.mapValues(JSONValue.string)),
            "received_at": .string(entraTimestamp(request.receivedAt)),
        ]
        if let grantType = request.grantType { object["grant_type"] = .string(grantType) }
        return .object(object)
    }

    /// `127.0.0.1`, `localhost` or `[::1]`, with any port.
    static func isLoopbackHost(_ host: String?) -> Bool {
        guard var host = host?.lowercased(), !host.isEmpty else { return false }
        if host.hasPrefix("[") {
            guard let end = host.firstIndex(of: "]") else { return false }
            return host[...end] == "[::1]"
        }
        if let colon = host.lastIndex(of: ":") { host = String(host[..<colon]) }
        return host == "127.0.0.1" || host == "localhost"
    }

    static func isLoopbackOrigin(_ origin: String) -> Bool {
        guard let components = URLComponents(string: origin), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host
        else { return false }
        return isLoopbackHost(host.contains(":") ? "[\(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))]" : host)
    }

    /// `application/x-www-form-urlencoded` decoding (`+` is a space, then percent-decoding);
    /// the first value of a repeated name wins, as the HTTP server's own decoding does.
    static func formDecoded(_ query: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String? { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = decode(parts[0]) else { continue }
            let value = parts.count > 1 ? decode(parts[1]) : ""
            if let value, result[name] == nil { result[name] = value }
        }
        return result
    }

    /// The text of `<p id="error">…</p>` on an error or sign-in page.
    static func errorText(inPage page: String) -> String? {
        guard let start = page.range(of: "<p id=\"error\">"), let end = page.range(of: "</p>", range: start.upperBound..<page.endIndex) else {
            return nil
        }
        return String(page[start.upperBound..<end.lowerBound])
            .replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
