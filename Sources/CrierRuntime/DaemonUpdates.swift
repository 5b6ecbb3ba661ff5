import CrierCore
import CrierPosix
import CrierSystem
import Glibc

/// Updates as the daemon sees them (docs/updates.md): the booted slot, what RAUC says the slots
/// hold, and the records the image's scripts write. The outcome of the last update is logged,
/// reported in `crier status`, and said once: `announced=1` is written only after the sentence
/// was heard, so a power cut while it is said means it is said again, never that it is lost.
/// crier-mark-good writes the outcome minutes after boot (a trial must be healthy first), so the
/// records are looked at again every `UpdateWatch.every` seconds.
extension Daemon {
    enum UpdateWatch {
        static let every = 15.0
    }

    func startUpdates() {
        var u = UpdateStatus()
        if let cmdline = try? FileIO.read("/proc/cmdline", limit: 65536) {
            u.bootedSlot = BootedSlot.fromCmdline(String(decoding: cmdline, as: UTF8.self))
        }
        update = u
        // A download cut by a power cut or a kill: its file takes the space the journals need.
        let freed = UpdateDownload.removeLeftovers(config.update)
        if freed > 0 {
            updateLog.info("removed a bundle download left by an earlier run (\(UpdateDownload.mib(freed)) MiB in \(config.update.dir))")
        }
        refreshUpdateRecords(startup: true)
        if let slot = u.bootedSlot {
            updateLog.info("booted slot \(slot)", ["version": CrierVersion.string])
            refreshSlots()
        }
        Task {
            while !self.stopping {
                try? await Task.sleep(for: .seconds(UpdateWatch.every))
                self.refreshUpdateRecords(startup: false)
            }
        }
    }

    /// The hello's and MQTT status's `last_update`: "updated 0.9.1+…" / "rolled-back 0.9.2+…".
    var lastUpdateSummary: String? { update?.last.map { "\($0.kind.rawValue) \($0.version)" } }

    /// RAUC's view of the slots, on a thread of its own (RAUC answers over D-Bus and may be slow
    /// to start); the status shows why when it cannot be asked.
    func refreshSlots() {
        guard let program = config.update.rauc else { return }
        let rauc = Rauc(program: program)
        do throws(SystemError) {
            try PosixThread.detach(name: "crier-rauc") {
                let r = rauc.status()
                Task { await self.setSlots(r) }
            }
        } catch {
            updateLog.warning("cannot start a thread to ask RAUC about the slots: \(error)")
        }
    }

    func setSlots(_ r: Result<RaucStatus, Rauc.Failure>) {
        switch r {
        case .success(let s):
            update?.slots = s.rootSlots
            update?.slotsError = nil
            let versions = s.rootSlots.map { "\($0.bootname ?? $0.name)=\($0.version ?? "unknown")" }.joined(separator: ",")
            updateLog.info("slots", ["booted": s.booted ?? "?", "versions": versions])
        case .failure(let f):
            update?.slotsError = f.description
            updateLog.warning("cannot read the slots: \(f)")
        }
    }

    /// Re-reads update-pending and update-outcome when they changed (size, time or inode).
    func refreshUpdateRecords(startup: Bool) {
        let dir = config.update
        let pendingKey = Self.fileKey(dir.pendingPath), outcomeKey = Self.fileKey(dir.outcomePath)
        guard startup || pendingKey != updateFileKeys.pending || outcomeKey != updateFileKeys.outcome else { return }
        updateFileKeys = (pendingKey, outcomeKey)
        var u = update ?? UpdateStatus()
        u.pending = pendingKey == nil ? nil : (try? FileIO.read(dir.pendingPath, limit: 4096)).flatMap {
            PendingUpdate(fileText: String(decoding: $0, as: UTF8.self))
        }
        let before = u.last
        u.last = outcomeKey == nil ? nil : (try? FileIO.read(dir.outcomePath, limit: 4096)).flatMap {
            UpdateOutcome(fileText: String(decoding: $0, as: UTF8.self))
        }
        update = u
        if !startup, u.last != before {
            if u.last != nil { refreshSlots() }
            // The server learns it (MQTT: the retained status now; v1: the next hello).
            link?.deviceChanged(slot: u.bootedSlot, lastUpdate: lastUpdateSummary)
        }
        guard let o = u.last, !o.announced else { return }
        if o == before && !startup { return }
        // Our own `announced=1` not on the card yet when the file was read again.
        if var said = updateSaid { said.announced = o.announced; if said == o { return } }
        switch o.kind {
        case .updated:
            updateLog.info("updated to \(o.version) (from \(o.fromVersion)), slot \(o.slot)")
        case .rolledBack:
            updateLog.warning("update to \(o.version) ROLLED BACK: it did not stay up; running \(o.fromVersion) in slot \(o.slot) again")
        }
        feed(.updateOutcome(o.kind == .updated ? .updated : .updateFailed))
    }

    /// The words of the `updated` / `update_failed` prompt, from the outcome being announced.
    func updateWords(_ name: Templates.Name) -> Utterance? {
        guard name == .updated || name == .updateFailed, let o = update?.last else { return nil }
        return pipeline.words(o.announcement, lang: config.speech.lang)
    }

    /// Called once the prompt was heard in full: the outcome is rewritten with `announced=1`
    /// (atomically, on a thread of its own: the card may be slow).
    func updateAnnounced(_ name: Templates.Name) {
        guard name == .updated || name == .updateFailed, var o = update?.last, !o.announced else { return }
        updateSaid = o
        o.announced = true
        update?.last = o
        let path = config.update.outcomePath, bytes = Array(o.fileText().utf8), log = updateLog
        do throws(SystemError) {
            try PosixThread.detach(name: "crier-update") {
                do throws(SystemError) {
                    try FileIO.writeDurably(path, bytes)
                    log.info("update outcome announced", ["file": path])
                } catch {
                    log.error("cannot record that the update was announced (\(error)); it is said again at the next start")
                }
            }
        } catch {
            updateLog.error("cannot start a thread to record the announcement (\(error)); it is said again at the next start")
        }
        // The key changes with our own write: re-read without announcing again.
        updateFileKeys.outcome = nil
    }

    /// What identifies a version of a file without reading it; nil when it does not exist.
    static func fileKey(_ path: String) -> [Int]? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return [Int(st.st_ino), Int(st.st_size), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec)]
    }
}

/// A bundle the order server offered (`{"type":"update"}`): installed when nothing is being
/// said or waiting, then the box reboots into it once it has been quiet for
/// `update.quiet_seconds`.
struct RemoteUpdate: Sendable {
    enum Phase: Sendable, Equatable {
        case offered
        case installing
        case installed
        case rebootRequested
    }

    var offer: UpdateOffer
    var phase: Phase
}

extension Daemon {
    func offerUpdate(_ offer: UpdateOffer) {
        let v = offer.version
        func ignore(_ why: String, warn: Bool = true) {
            if lastIgnoredOffer != v + why {
                lastIgnoredOffer = v + why
                updateLog.hub.emit(warn ? .warning : .info, updateLog.component, "update offer ignored: \(why)", [("version", v), ("url", ShownURL.redacted(offer.url))])
            }
        }
        guard config.update.allowRemote else {
            return ignore("update.allow_remote is off in crier.conf (install it with `crier update URL`, or set update.allow_remote = on)")
        }
        guard config.update.rauc != nil else { return ignore("update.rauc is off in crier.conf") }
        if v == CrierVersion.string || v == update?.bootedVersion { return ignore("this version is running", warn: false) }
        if let last = update?.last, last.kind == .rolledBack, last.version == v {
            // Offered again, it would install, fail its trial and roll back, forever.
            return ignore("version \(v) was rolled back on this box (it did not stay up); offer a newer one")
        }
        if let r = remoteUpdate {
            if r.offer == offer || r.phase != .offered { return ignore("busy with version \(r.offer.version) (\(r.phase))", warn: false) }
        }
        if let failed = failedOffers[v], Self.now() - failed < 600 {
            return ignore("its install failed less than 10 minutes ago", warn: false)
        }
        remoteUpdate = RemoteUpdate(offer: offer, phase: .offered)
        update = update ?? UpdateStatus()
        update?.activity = "offered version \(v); installing when nothing is said"
        updateLog.info("update offered", ["version": v, "url": ShownURL.redacted(offer.url)])
    }

    /// From the speaker loop when it is idle: starts an offered install, or reboots into an
    /// installed one after the quiet time. Returns when to look again.
    func updateTurn(now: Double) -> Double? {
        guard var r = remoteUpdate else { return nil }
        switch r.phase {
        case .offered:
            guard let program = config.update.rauc else { return nil }
            r.phase = .installing
            remoteUpdate = r
            update?.activity = "installing version \(r.offer.version)"
            updateLog.info("installing", ["version": r.offer.version, "url": ShownURL.redacted(r.offer.url)])
            let rauc = Rauc(program: program), url = r.offer.url, log = updateLog, config = config.update
            do throws(SystemError) {
                try PosixThread.detach(name: "crier-install") {
                    let prepared: UpdateDownload.Prepared
                    switch UpdateDownload.prepare(.url(url), config, say: { log.info($0) }) {
                    case .success(let p): prepared = p
                    case .failure(let f):
                        Task { await self.installFinished(.failure(.download(f.message))) }
                        return
                    }
                    let result = rauc.install(prepared.path) { line in log.info("rauc: \(ShownURL.scrub(line, secretsOf: url))") }
                    UpdateDownload.discard(prepared)
                    Task { await self.installFinished(result.mapError { .rauc($0) }) }
                }
            } catch {
                installFinished(.failure(.rauc(.notInstalled(program: program, why: "no thread: \(error)"))))
            }
            return nil
        case .installing, .rebootRequested:
            return nil
        case .installed:
            let quietSince = lastSaid
            let due = quietSince + config.update.quietSeconds
            guard now >= due else { return due }
            guard let path = config.update.rebootRequest else { return nil }
            r.phase = .rebootRequested
            remoteUpdate = r
            do throws(SystemError) {
                try FileIO.write(path, Array("version=\(r.offer.version)\n".utf8))
                update?.activity = "rebooting into version \(r.offer.version)"
                updateLog.info("rebooting into the installed update (quiet for \(Format.fixed(now - quietSince, 0)) s)",
                               ["version": r.offer.version, "request": path])
            } catch {
                update?.activity = "installed version \(r.offer.version); the reboot request failed, reboot by hand"
                updateLog.error("cannot ask for the reboot (\(error)); is crier-reboot.path running? the update runs after the next reboot")
            }
            return nil
        }
    }

    /// Why an offered bundle was not installed.
    enum InstallFailure: Error, CustomStringConvertible {
        case download(String)
        case rauc(Rauc.Failure)
        var description: String {
            switch self {
            case .download(let m): m
            case .rauc(let f): f.description
            }
        }
    }

    func installFinished(_ result: Result<Void, InstallFailure>) {
        guard var r = remoteUpdate else { return }
        switch result {
        case .success:
            r.phase = .installed
            remoteUpdate = r
            refreshUpdateRecords(startup: false)
            update?.activity = config.update.rebootRequest == nil
                ? "installed version \(r.offer.version); reboot to run it (update.reboot_request = off)"
                : "installed version \(r.offer.version); rebooting after \(ConfigValue.fmt(config.update.quietSeconds)) s with nothing said"
            updateLog.info("installed", ["version": r.offer.version, "reboot": config.update.rebootRequest == nil ? "by hand" : "when quiet"])
            refreshSlots()
        case .failure(let f):
            failedOffers[r.offer.version] = Self.now()
            remoteUpdate = nil
            let why = ShownURL.scrub(f.description, secretsOf: r.offer.url)
            update?.activity = "install of version \(r.offer.version) failed: \(why)"
            updateLog.error("install of version \(r.offer.version) failed: \(why); the running slot is unchanged")
        }
        feed(.tick)
    }
}
