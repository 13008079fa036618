import FerryCore
import Testing

@Suite struct FerryVersionTests {
    @Test func versionIsSemantic() {
        let core = FerryVersion.current.split(separator: "-").first ?? ""
        #expect(core.split(separator: ".").count == 3)
        #expect(core.split(separator: ".").allSatisfy { Int($0) != nil })
    }
}
