import Foundation
@testable import MSAL
import MSALCore
import Synchronization
import Testing

/// The coordinator on its own, with refreshes whose timing the test controls.
@Suite("Refresh coordinator")
struct RefreshCoordinatorTests {
    static func result(_ token: String) throws -> AuthenticationResult {
        AuthenticationResult(
            accessToken: token, tokenType: "Bearer", expiresOn: Date(timeIntervalSince1970: 2_000_000_000), scopes: ["s"],
            account: Account(identifier: "uid.utid", username: nil, environment: "login.example", tenantProfiles: []),
            tenantID: "utid", idToken: nil, idTokenClaims: nil, correlationID: "c", tokenSource: .identityProvider,
            authority: try Authority("https://login.microsoftonline.com/utid"))
    }

    /// A gate the refresh waits at until the test opens it.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }
        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    @Test("100 concurrent callers of one key run the refresh once and all get its result; another key runs its own")
    func coalesces() async throws {
        let coordinator = RefreshCoordinator()
        let runs = Atomic<Int>(0)
        let gate = Gate()
        let expected = try Self.result("one")
        let operation: @Sendable () async -> RefreshCoordinator.Outcome = {
            runs.add(1, ordering: .relaxed)
            await gate.wait()
            return .success(expected)
        }
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 {
                group.addTask { try await coordinator.run(key: "k", operation).accessToken }
            }
            group.addTask { try await coordinator.run(key: "other") { .success(try! Self.result("two")) }.accessToken }
            try await Task.sleep(for: .milliseconds(200))
            gate.open()
            var tokens: [String: Int] = [:]
            for try await token in group { tokens[token, default: 0] += 1 }
            #expect(tokens == ["one": 100, "two": 1])
        }
        #expect(runs.load(ordering: .relaxed) == 1)
        // The key is free again: the next call refreshes anew.
        _ = try await coordinator.run(key: "k", operation)
        #expect(runs.load(ordering: .relaxed) == 2)
    }

    @Test("A failed refresh is handed to every waiting caller")
    func failure() async throws {
        let coordinator = RefreshCoordinator()
        let gate = Gate()
        let operation: @Sendable () async -> RefreshCoordinator.Outcome = {
            await gate.wait()
            return .failure(MSALError(.interactionRequired, message: "rejected"))
        }
        await withTaskGroup(of: MSALError.Code?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do throws(MSALError) { _ = try await coordinator.run(key: "k", operation) } catch { return error.code }
                    return nil
                }
            }
            try? await Task.sleep(for: .milliseconds(100))
            gate.open()
            var codes: [MSALError.Code?] = []
            for await code in group { codes.append(code) }
            #expect(codes.count == 10 && codes.allSatisfy { $0 == .interactionRequired })
        }
    }

    @Test("When the leading caller is canceled, the waiting callers do not get its cancellation: one of them refreshes")
    func leaderCanceled() async throws {
        let coordinator = RefreshCoordinator()
        let runs = Atomic<Int>(0)
        let gate = Gate(), second = Gate()
        let operation: @Sendable () async -> RefreshCoordinator.Outcome = {
            let run = runs.add(1, ordering: .relaxed).newValue
            if run == 1 {
                // The leader's refresh: ends when its task is canceled (as a URLSession request does).
                await gate.wait()
                return .failure(MSALError(.userCanceled, message: "canceled"))
            }
            // The refresh of the follower that leads next; the other waits on it.
            await second.wait()
            return .success(try! Self.result("after"))
        }
        let leader = Task { try await coordinator.run(key: "k", operation) }
        while runs.load(ordering: .relaxed) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        async let follower1 = coordinator.run(key: "k", operation)
        async let follower2 = coordinator.run(key: "k", operation)
        try await Task.sleep(for: .milliseconds(100))
        leader.cancel()
        gate.open()
        await #expect(throws: MSALError.self) { _ = try await leader.value }
        try await Task.sleep(for: .milliseconds(100))
        second.open()
        let tokens = try await [follower1, follower2].map(\.accessToken)
        #expect(tokens == ["after", "after"])
        #expect(runs.load(ordering: .relaxed) == 2)
    }

    @Test("A waiting caller whose task is canceled returns at once with userCanceled; the refresh goes on for the others",
          .timeLimit(.minutes(1)))
    func waiterCanceled() async throws {
        let coordinator = RefreshCoordinator()
        let runs = Atomic<Int>(0)
        let gate = Gate()
        let operation: @Sendable () async -> RefreshCoordinator.Outcome = {
            runs.add(1, ordering: .relaxed)
            await gate.wait()
            return .success(try! Self.result("done"))
        }
        let leader = Task { try await coordinator.run(key: "k", operation).accessToken }
        while runs.load(ordering: .relaxed) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let canceled = Task { () async -> MSALError.Code? in
            do throws(MSALError) { _ = try await coordinator.run(key: "k", operation) } catch { return error.code }
            return nil
        }
        let other = Task { try await coordinator.run(key: "k", operation).accessToken }
        try await Task.sleep(for: .milliseconds(50))
        canceled.cancel()
        // Answered while the refresh is still held at the gate.
        #expect(await canceled.value == .userCanceled)
        gate.open()
        #expect(try await leader.value == "done")
        #expect(try await other.value == "done")
        #expect(runs.load(ordering: .relaxed) == 1)
    }
}


/// Keys spelled as literals in these tests: requests that differ only by this name.
extension RefreshCoordinator.Key: ExpressibleByStringLiteral {
    init(stringLiteral name: String) {
        self.init(kind: name, clientID: "", authority: "", account: "", scopes: [], forceRefresh: false, extraParameters: [:])
    }
}
