import Testing
@testable import CrierCore

/// Where a language's voice pack comes from (docs/voice.md, "Where packs live").
@Suite struct VoicePackPlacesTests {
    typealias Probe = VoicePackPlaces.Probe<String>
    let shop = "/boot/firmware/voice/zh"
    let image = "/usr/share/crier/voice/zh"

    /// Resolves with a fake disk: each folder's probe result; the pack is the folder's name.
    func resolve(_ setting: VoicePackSetting, _ disk: [String: Probe], lang: Lang = .zh,
                 bases: [String] = VoicePackPlaces.defaultBases) -> VoicePackPlaces.Resolution<String> {
        VoicePackPlaces.resolve(setting, lang: lang, bases: bases) { disk[$0] ?? .absent }
    }

    func full(_ p: String, _ n: Int = 92) -> Probe { .loaded(p, covered: n, needed: n) }

    @Test func theShopsCompleteCopyWinsAndTheImagesIsNotRead() {
        let r = resolve(.auto, [shop: full(shop), image: full(image)])
        #expect(r.path == shop && r.pack == shop)
        #expect(r.probed == [shop], "a complete pack ends the search: the image's is not loaded")
        #expect(r.why == "voice.pack.zh = auto: /boot/firmware/voice/zh has every clip (92); it wins over the later /usr/share/crier/voice/zh")
        #expect(!r.isProblem)
    }

    @Test func theImagesPackWhenTheShopHasNone() {
        let r = resolve(.auto, [image: full(image)])
        #expect(r.path == image && r.probed == [shop, image])
        #expect(r.why == "voice.pack.zh = auto: /usr/share/crier/voice/zh has every clip (92); no /boot/firmware/voice/zh")
    }

    @Test func aBrokenOrHalfCopiedShopFolderNeverHidesTheImagesCompletePack() {
        var r = resolve(.auto, [shop: .refused("no manifest in /boot/firmware/voice/zh"), image: full(image)])
        #expect(r.path == image)
        #expect(r.why.contains("/boot/firmware/voice/zh refused (no manifest in /boot/firmware/voice/zh)"))
        // A copy cut short on the PC: the manifest made it, 30 clips did not.
        r = resolve(.auto, [shop: .loaded(shop, covered: 62, needed: 92), image: full(image)])
        #expect(r.path == image && r.why.contains("/boot/firmware/voice/zh lacks 30 of 92 clips"))
    }

    @Test func withoutACompletePackTheMostCompleteOneTheEarlierOnATie() {
        var r = resolve(.auto, [shop: .loaded(shop, covered: 80, needed: 92), image: .loaded(image, covered: 90, needed: 92)])
        #expect(r.path == image && r.why.hasPrefix("voice.pack.zh = auto: /usr/share/crier/voice/zh, the most complete (90 of 92 clips"))
        r = resolve(.auto, [shop: .loaded(shop, covered: 90, needed: 92), image: .loaded(image, covered: 90, needed: 92)])
        #expect(r.path == shop)
        r = resolve(.auto, [shop: .loaded(shop, covered: 90, needed: 92)])
        #expect(r.path == shop && !r.isProblem)
    }

    @Test func nothingFoundIsEspeakAndNoProblem() {
        let r = resolve(.auto, [:])
        #expect(r.path == nil && r.pack == nil && !r.isProblem)
        #expect(r.why == "voice.pack.zh = auto: no pack (no /boot/firmware/voice/zh; no /usr/share/crier/voice/zh); espeak-ng says everything in zh")
        let both = resolve(.auto, [shop: .refused("x"), image: .refused("y")])
        #expect(both.path == nil && both.probed == [shop, image])
    }

    @Test func offReadsNothing() {
        let r = VoicePackPlaces.resolve(.off, lang: .en, bases: VoicePackPlaces.defaultBases) { (p: String) -> Probe in
            Issue.record("off probed \(p)")
            return .absent
        }
        #expect(r.path == nil && r.probed.isEmpty && !r.isProblem)
        #expect(r.why == "voice.pack.en = off: espeak-ng says everything in en")
    }

    @Test func anExplicitPathIsTheOnlyFolderTried() {
        let mine = "/data/packs/zh"
        var r = resolve(.path(mine), [mine: .loaded(mine, covered: 50, needed: 92), shop: full(shop)])
        #expect(r.path == mine && r.probed == [mine], "a partial pack named in the config is used as it is")
        r = resolve(.path(mine), [shop: full(shop), image: full(image)])
        #expect(r.path == nil && r.isProblem && r.probed == [mine])
        #expect(r.why == "voice.pack.zh = /data/packs/zh: it does not exist; espeak-ng says everything in zh; check voice.pack.zh in crier.conf")
        r = resolve(.path(mine), [mine: .refused("the pack's language is en, not zh")])
        #expect(r.path == nil && r.isProblem && r.why.contains("not a usable pack (the pack's language is en, not zh)"))
    }

    @Test func theLanguageNamesTheFolder() {
        let r = resolve(.auto, ["/usr/share/crier/voice/en": full("en", 305)], lang: .en)
        #expect(r.path == "/usr/share/crier/voice/en" && r.probed == ["/boot/firmware/voice/en", "/usr/share/crier/voice/en"])
    }

    @Test func theTestOnlyVariableReplacesTheBases() {
        #expect(VoicePackPlaces.bases(environment: nil) == ["/boot/firmware/voice", "/usr/share/crier/voice"])
        #expect(VoicePackPlaces.bases(environment: "") == VoicePackPlaces.defaultBases)
        #expect(VoicePackPlaces.bases(environment: "/tmp/a:/tmp/b/") == ["/tmp/a", "/tmp/b/"])
        #expect(VoicePackPlaces.bases(environment: "relative:/tmp/a") == ["/tmp/a"], "relative folders are ignored")
        let r = resolve(.auto, ["/tmp/b/zh": full("b")], bases: ["/tmp/a", "/tmp/b/"])
        #expect(r.path == "/tmp/b/zh" && r.probed == ["/tmp/a/zh", "/tmp/b/zh"])
    }

    /// Invariant over every combination of what the two folders can be: a complete pack is used
    /// whenever there is one, never a less complete one, and the shop's wins a tie.
    @Test func everyCombinationPrefersCompleteThenMostThenShop() {
        let states: [(String) -> Probe] = [
            { _ in .absent }, { _ in .refused("broken") },
            { .loaded($0, covered: 0, needed: 92) }, { .loaded($0, covered: 45, needed: 92) }, { .loaded($0, covered: 92, needed: 92) },
        ]
        func covered(_ p: Probe) -> Int? { if case .loaded(_, let c, _) = p { return c } else { return nil } }
        for a in states {
            for b in states {
                let disk = [shop: a(shop), image: b(image)]
                let r = resolve(.auto, disk)
                let ca = covered(disk[shop]!), cb = covered(disk[image]!)
                let want: String? = ca == 92 ? shop : cb == 92 ? image
                    : (ca, cb) == (nil, nil) ? nil : (cb ?? -1) > (ca ?? -1) ? image : shop
                #expect(r.path == want, "shop \(String(describing: ca)) image \(String(describing: cb))")
                #expect(r.pack == r.path)
            }
        }
    }

    @Test func theSettingParsesAndRendersBack() throws {
        #expect(try VoicePackSetting.parse("auto") == .auto)
        #expect(try VoicePackSetting.parse("off") == .off)
        #expect(try VoicePackSetting.parse("") == .off, "empty kept its old meaning: espeak-ng only")
        #expect(try VoicePackSetting.parse("/boot/firmware/voice/zh") == .path("/boot/firmware/voice/zh"))
        #expect(throws: ConfigValueError.self) { try VoicePackSetting.parse("voice/zh") }
        for s in [VoicePackSetting.auto, .off, .path("/x/y")] { #expect(try VoicePackSetting.parse(s.rendered) == s) }
    }

    @Test func theConfigKeysDefaultToAutoAndAnEmptyValueStillMeansEspeakOnly() {
        let c = CrierConfig()
        #expect(c.voicePacks.setting(.zh) == .auto && c.voicePacks.setting(.en) == .auto)
        for k in CrierConfig.schema where k.name.hasPrefix("voice.pack.") { #expect(k.defaultText == "auto") }
        let r = ConfigParser().parse("voice.pack.zh =\nvoice.pack.en = /srv/en\n", file: "crier.conf")
        #expect(r.errors.isEmpty)
        #expect(r.config.voicePacks.setting(.zh) == .off && r.config.voicePacks.setting(.en) == .path("/srv/en"))
        #expect(r.config.rendered().contains("voice.pack.zh = off\nvoice.pack.en = /srv/en\n"))
        let bad = ConfigParser().parse("voice.pack.zh = voice/zh\n", file: "crier.conf")
        #expect(bad.errors.first?.description.contains("expected auto, off or an absolute path") == true)
    }
}
