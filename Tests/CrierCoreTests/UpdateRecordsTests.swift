import Testing
@testable import CrierCore

/// The records the image's update scripts write (crier-rauc-post-install, crier-mark-good) as
/// crier reads them, and RAUC's JSON status.
@Suite struct UpdateRecordsTests {
    // Exactly what crier-mark-good's outcome() prints (printf with \n after each line).
    static let markGoodUpdated = "outcome=updated\nversion=0.9.1+20261203.2\nfrom_version=0.9.0+20261201.1\nslot=B\nat=1796300000\nannounced=0\n"
    static let markGoodRolledBack = "outcome=rolled-back\nversion=0.9.2+bad\nfrom_version=0.9.1+20261203.2\nslot=B\nat=1796300500\nannounced=0\n"
    static let postInstall = "version=0.9.1+20261203.2\nslot=B\nfrom_slot=A\nfrom_version=0.9.0+20261201.1\ninstalled_at=1796299000\n"

    @Test func theMarkGoodOutcomeReads() throws {
        let o = try #require(UpdateOutcome(fileText: Self.markGoodUpdated))
        #expect(o == UpdateOutcome(kind: .updated, version: "0.9.1+20261203.2", fromVersion: "0.9.0+20261201.1", slot: "B",
                                   at: 1_796_300_000, announced: false))
        let r = try #require(UpdateOutcome(fileText: Self.markGoodRolledBack))
        #expect(r.kind == .rolledBack && r.fromVersion == "0.9.1+20261203.2")
    }

    @Test func thePostInstallRecordReads() throws {
        let p = try #require(PendingUpdate(fileText: Self.postInstall))
        #expect(p == PendingUpdate(version: "0.9.1+20261203.2", slot: "B", fromSlot: "A", fromVersion: "0.9.0+20261201.1",
                                   installedAt: 1_796_299_000))
    }

    @Test func rewritingTheOutcomeKeepsTheScriptsFormat() throws {
        var o = try #require(UpdateOutcome(fileText: Self.markGoodUpdated))
        #expect(o.fileText() == Self.markGoodUpdated)
        o.announced = true
        #expect(o.fileText() == String(Self.markGoodUpdated.dropLast(2)) + "1\n")
        #expect(UpdateOutcome(fileText: o.fileText()) == o)
    }

    @Test func damagedOrForeignFilesReadAsNothingOrAsNotAnnounced() throws {
        #expect(UpdateOutcome(fileText: "") == nil)
        #expect(UpdateOutcome(fileText: "outcome=exploded\nversion=1\n") == nil)
        #expect(UpdateOutcome(fileText: "\u{0}\u{1}garbage") == nil)
        #expect(PendingUpdate(fileText: "version=\nslot=B\n") == nil)
        #expect(PendingUpdate(fileText: "slot=B\n") == nil)
        // cut by a power cut after "announced=" (the writers rename, but a hand edit may not)
        let cut = try #require(UpdateOutcome(fileText: "outcome=updated\nversion=2\n"))
        #expect(!cut.announced && cut.fromVersion == "?" && cut.slot == "?" && cut.at == nil)
        // CRLF from a hand edit on a PC, duplicate keys (the first wins, as `head -n 1` in the scripts)
        let crlf = try #require(UpdateOutcome(fileText: "outcome=updated\r\nversion=2\r\nversion=3\r\nannounced=1\r\n"))
        #expect(crlf.version == "2" && crlf.announced)
    }

    @Test func aValueNeverStartsANewLine() throws {
        let o = UpdateOutcome(kind: .updated, version: "1\nannounced=1", fromVersion: "0", slot: "B")
        let back = try #require(UpdateOutcome(fileText: o.fileText()))
        #expect(!back.announced && back.version == "1announced=1")
    }

    /// Any bytes: the readers never trap, and whatever they accept survives a rewrite.
    @Test func seededRandomFilesNeverTrapAndRoundTrip() {
        var rng = SplitMix(state: 0x5eed_20)
        let pieces = ["outcome=", "updated", "rolled-back", "version=", "from_version=", "slot=", "at=", "announced=", "1", "0",
                      "\n", "\r\n", "=", " ", "é", "号", "\u{0}", "+build~rc", "-12", "99999999999999999999"]
        for _ in 0..<5000 {
            var s = ""
            for _ in 0..<Int(rng.next() % 24) { s += pieces[Int(rng.next() % UInt64(pieces.count))] }
            if let o = UpdateOutcome(fileText: s) {
                let again = UpdateOutcome(fileText: o.fileText())
                #expect(again == o, "\(s.debugDescription)")
            }
            _ = PendingUpdate(fileText: s)
            _ = BootedSlot.fromCmdline(s)
        }
    }

    @Test func theSpokenVersionDropsTheBuildID() {
        #expect(UpdateOutcome.spoken("0.9.1+20261203.2") == "0.9.1")
        #expect(UpdateOutcome.spoken("1.2~rc1") == "1.2")
        #expect(UpdateOutcome.spoken("+x") == "+x")
        #expect(UpdateOutcome.spoken("?") == "?")
    }

    @Test func theAnnouncementSaysTheVersionsInBothLanguages() throws {
        let a = Announcer()
        let up = try #require(UpdateOutcome(fileText: Self.markGoodUpdated))
        let back = try #require(UpdateOutcome(fileText: Self.markGoodRolledBack))
        let en = a.announce(up.announcement, lang: .en).utterance.text
        #expect(en.hasPrefix("Updated to version ") && !en.contains("2026") && !en.contains("{"), "\(en)")
        let enBack = a.announce(back.announcement, lang: .en).utterance.text
        #expect(enBack.hasPrefix("Update to version ") && enBack.contains("failed; back on version"), "\(enBack)")
        let zh = a.announce(up.announcement, lang: .zh).utterance.text
        #expect(zh.hasPrefix("已更新到版本") && !zh.contains("{"), "\(zh)")
        #expect(a.announce(back.announcement, lang: .zh).speakable)
    }

    @Test func theBootedSlotComesFromTheLastRaucSlotWord() {
        #expect(BootedSlot.fromCmdline("console=ttyAMA0 root=/dev/mmcblk0p2 rauc.slot=A ro rootwait\n") == "A")
        #expect(BootedSlot.fromCmdline("rauc.slot=A rauc.slot=B") == "B")
        #expect(BootedSlot.fromCmdline("rauc.slot= quiet") == nil)
        #expect(BootedSlot.fromCmdline("console=ttyS0 xrauc.slot=A") == nil)
        #expect(BootedSlot.fromCmdline("") == nil)
    }

    // RAUC 1.13's `rauc status --detailed --output-format=json` on the image after one update
    // (shape as printed by RAUC 1.8 too: one-key objects in "slots", null for what is unset).
    static let raucJSON = #"""
    {"compatible":"crier-rpi-arm64","variant":null,"booted":"B","boot_primary":"rootfs.1","slots":[{"rootfs.0":{"class":"rootfs","device":"/dev/disk/by-partlabel/rootfs-a","type":"ext4","bootname":"A","state":"inactive","parent":null,"mountpoint":null,"boot_status":"good","slot_status":{"bundle":{"compatible":null,"version":null,"description":null,"build":null,"hash":null},"checksum":{"sha256":null,"size":0},"installed":{"timestamp":null,"count":0},"activated":{"timestamp":null,"count":0},"status":null}}},{"rootfs.1":{"class":"rootfs","device":"/dev/disk/by-partlabel/rootfs-b","type":"ext4","bootname":"B","state":"booted","parent":null,"mountpoint":"/","boot_status":"good","slot_status":{"bundle":{"compatible":"crier-rpi-arm64","version":"0.9.1+20261203.2","description":"crier","build":"20261203.2","hash":"4f1c"},"checksum":{"sha256":"ab12","size":180355072},"installed":{"timestamp":"2026-12-03T11:02:11Z","count":1},"activated":{"timestamp":"2026-12-03T11:02:12Z","count":1},"status":"ok"}}}]}
    """#

    @Test func raucStatusJSONGivesBothSlotsVersions() throws {
        let s = try RaucStatus.parse(Array(Self.raucJSON.utf8)).get()
        #expect(s.booted == "B" && s.compatible == "crier-rpi-arm64")
        #expect(s.rootSlots.map(\.bootname) == ["A", "B"])
        #expect(s.rootSlots[0].version == nil && s.rootSlots[0].state == "inactive")
        #expect(s.rootSlots[1] == RaucStatus.Slot(name: "rootfs.1", bootname: "B", state: "booted", bootStatus: "good",
                                                 version: "0.9.1+20261203.2", installStatus: "ok"))
    }

    @Test func raucStatusThatIsNotTheExpectedJSONIsAClearError() {
        func err(_ s: String) -> String? {
            if case .failure(let e) = RaucStatus.parse(Array(s.utf8)) { return e.message }
            return nil
        }
        #expect(err("=== System Info ===")?.hasPrefix("rauc status printed no JSON") == true)
        #expect(err("[1,2]") == "rauc status printed an array, not an object")
        #expect(err("{\"booted\":\"A\"}") == "rauc status JSON has no \"slots\" array")
        // odd entries are skipped, not fatal
        let s = try? RaucStatus.parse(Array("{\"slots\":[1,{\"x\":2},{\"rootfs.0\":{\"bootname\":7}}]}".utf8)).get()
        #expect(s?.slots.count == 1 && s?.rootSlots.isEmpty == true)
    }

    @Test func theStatusLinesShowSlotsVersionsAndTheLastOutcome() throws {
        let rauc = try RaucStatus.parse(Array(Self.raucJSON.utf8)).get()
        let u = UpdateStatus(bootedSlot: "B", slots: rauc.rootSlots, last: UpdateOutcome(fileText: Self.markGoodUpdated))
        let text = u.human()
        #expect(text.hasPrefix("update: booted slot B; slot A version unknown (never installed by RAUC) (inactive, good); slot B version 0.9.1+20261203.2 (booted, good)\n"))
        #expect(text.contains("last update: updated to 0.9.1+20261203.2 from 0.9.0+20261201.1, slot B at 2026-"), "\(text)")
        #expect(u.bootedVersion == "0.9.1+20261203.2")
        let json = String(decoding: JSON.write(u.json()), as: UTF8.self)
        #expect(json.contains(#""booted_slot":"B""#) && json.contains(#""outcome":"updated""#) && json.contains(#""announced":false"#))
    }

    @Test func theUpdateObjectComesAfterTheLinkSoMarkGoodStillReadsIt() {
        var s = StatusSnapshot(version: "1", deviceID: "d", time: WallTime(unixMillis: 0), uptime: 1, components: [],
                               link: LinkStatus(state: "up"), volume: 5, volumeMax: 10, muted: false, queueLength: 0)
        s.update = UpdateStatus(bootedSlot: "A")
        let j = StatusFormat.json(s)
        // crier-mark-good's two greps
        #expect(j.contains(#""healthy":true"#) && j.contains(#""link":{"state":"up""#))
        #expect(j.hasSuffix(#""update":{"booted_slot":"A","slots":[],"slots_error":null,"pending":null,"last":null,"activity":null}}"#), "\(j)")
        s.update = nil
        #expect(!StatusFormat.json(s).contains("update"))
    }
}

@Suite struct UpdateSourceTests {
    func parse(_ s: String) -> Result<UpdateSource, UpdateSource.Invalid> {
        do throws(UpdateSource.Invalid) { return .success(try UpdateSource(parsing: s, relativeTo: "/root")) } catch { return .failure(error) }
    }

    @Test func filesAndURLs() throws {
        #expect(try parse("/data/crier-0.9.1.raucb").get() == .file("/data/crier-0.9.1.raucb"))
        #expect(try parse("b.raucb").get() == .file("/root/b.raucb"))
        #expect(try parse("https://updates.example.com/crier.raucb").get() == .url("https://updates.example.com/crier.raucb"))
        #expect(try parse("HTTP://10.0.0.2:8080/b").get() == .url("HTTP://10.0.0.2:8080/b"))
    }

    @Test func whatRaucCannotInstallIsRefusedWithTheReason() {
        func msg(_ s: String) -> String {
            if case .failure(let e) = parse(s) { return e.message }
            return "accepted"
        }
        #expect(msg("") == "no bundle given: expected a .raucb file or an https:// URL")
        #expect(msg("ftp://x/b.raucb") == "RAUC installs from a file or an http(s) URL, not ftp://")
        #expect(msg("file:///data/b.raucb") == "RAUC installs from a file or an http(s) URL, not file://; give the path itself (/data/b.raucb)")
        #expect(msg("https://") == "expected a URL without spaces, got \"https://\"")
        #expect(msg("https://a b") == "expected a URL without spaces, got \"https://a b\"")
        #expect(msg("/data/b\n.raucb").hasPrefix("the bundle name has control characters"))
        // Refused, and still without its credentials (issue 31).
        #expect(msg("https://u:s3cret@h/a b") == "expected a URL without spaces, got \"https://***@h/a b\"")
        #expect(!msg("https://u:s3cret@h/b\n").contains("s3cret"))
    }
}
