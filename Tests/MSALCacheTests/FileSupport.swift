import Foundation
import MSALCore
import MSALTestSupport
import Synchronization

/// A fresh directory for real cache files (MSALTestSupport's), under the name the tests use.
typealias TemporaryDirectory = ScratchDirectory

