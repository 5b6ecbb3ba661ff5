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
        if !startup, u.last != nil, u.last != before { refreshSlots() }
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
        let name: Templates.Name = o.kind == .updated ? .updated : .updateFailed
        if config.update.announce, !statusPrompts.contains(name) {
            statusPrompts.append(name)
            poke()
        }
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
