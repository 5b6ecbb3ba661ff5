import CrierAudio
import CrierCore
import CrierGPIO
import CrierMusic
import CrierPosix

/// Buttons, volume, the audio engine's replacement and the music player. What a button means
/// for the speaker (prompts, hold, music level) is the policy's; this file runs the devices.
extension Daemon {
    /// Runs the buttons until cancelled (the supervisor's "buttons" component calls this).
    public func runButtons() async {
        // The service runs on the daemon's executor (the event thread): its hooks are called
        // there, so they enter the daemon directly (ButtonService.Hooks).
        let hooks = ButtonService.Hooks(
            historyCount: { self.assumeIsolated { $0.historyCount() } },
            perform: { e in self.assumeIsolated { $0.perform(e) } })
        let service = ButtonService(config: config.buttons, log: hub.logger("buttons"), hooks: hooks, wall: WallClock.now,
                                    executor: events.executor)
        buttons = service
        let t = Task { await service.run() }
        buttonTask = t
        await withTaskCancellationHandler { await t.value } onCancel: { t.cancel() }
    }

    public func stopButtons() { buttonTask?.cancel() }

    func historyCount() -> Int { policy.queue.history.count }

    func perform(_ effect: ControlEffect) {
        feed(.control(effect))
    }

    /// A button pressed on the local page: the same path as the box's own buttons.
    public func press(_ action: ButtonAction) async { await buttons?.press(action) }

    /// The supervisor saw the audio thread stall: start a fresh engine and abandon the old one.
    /// What was playing is said again from its start on the new one.
    public func replaceAudioEngine() {
        let old = engine
        let fresh = AudioEngine(config: old.config, log: hub.logger("audio"), music: config.music)
        engineBox.withLock { $0 = fresh }
        log.error("audio thread stalled; starting a new audio engine (the old thread is abandoned)")
        old.abandon()
        fresh.start()
        fresh.attachMusic(music?.buffer)
        feed(.engineReplaced)
    }

    /// Puts the volume on the configured mixer element, or on the engine's software gain when
    /// there is none (or it cannot be opened: logged once, retried on the next change).
    func applyVolume(_ gain: Double) {
        if !config.audio.mixer.isEmpty && hardwareVolume == nil {
            let card = HardwareVolume.card(forDevice: config.audio.device)
            do throws(HardwareVolume.Failure) {
                hardwareVolume = try HardwareVolume(card: card, element: config.audio.mixer)
                log.info("volume on mixer element", ["card": card, "element": config.audio.mixer])
                hardwareVolumeError = nil
            } catch {
                if hardwareVolumeError != error.message {
                    log.error("\(error.message); using software volume until it appears")
                    hardwareVolumeError = error.message
                }
            }
        }
        if let hw = hardwareVolume {
            hw.set(gain: gain)
            engine.setGain(1)
        } else {
            engine.setGain(gain)
        }
    }

    // MARK: music

    func startMusic() {
        guard config.music.enabled else { return }
        let player = MusicPlayer(config: config.music, format: engine.config.format, log: hub.logger("music"))
        musicBox.withLock { $0 = player }
        engine.attachMusic(player.buffer)
        feed(.musicStarted)
        player.start()
        log.info("music starting", ["source": config.music.source.description, "level_db": ConfigValue.fmt(config.music.levelDb),
                                    "duck_db": ConfigValue.fmt(config.music.duckDb)])
    }

    /// The supervisor saw the music thread stall (a decoder stuck in C): a new player takes
    /// over with a fresh buffer; the old thread is left behind and can reach nothing the
    /// alerts use. Silence for the music meanwhile, never for the alerts.
    public func replaceMusic() {
        guard let old = music else { return }
        old.stop()
        engine.attachMusic(nil)
        musicStalls += 1
        // Each abandoned thread keeps what it holds (a thread stuck in C cannot be freed):
        // after a few, music stays off until crier restarts.
        guard musicStalls <= Self.maxMusicStalls else {
            musicBox.withLock { $0 = nil }
            log.error("music thread stalled again (\(musicStalls) times); music is off until crier restarts; alerts are not affected; check music.source",
                      ["source": config.music.source.description])
            return
        }
        log.error("music thread stalled (stuck in a decoder or a file read); starting a new music player, the old thread is abandoned; alerts are not affected",
                  ["stalls": musicStalls, "source": config.music.source.description])
        startMusic()
    }

    static let maxMusicStalls = 3

    nonisolated public func musicProgress() -> Double { music?.lastProgress ?? Monotonic.now() }
}
